// Owns the exec-server half of the check. The pinned binary generates no JSON schema for `codex exec-server` (its
// `generate-json-schema` covers the app-server only), so schemas/execServer.ts is held to what the binary ANSWERS: this
// starts `codex exec-server --listen stdio` in a scratch CODEX_HOME, sends every request of the contract
// (`initialize`, `process/start` of a short command, `process/terminate`, `http/request` to a loopback HTTP server it
// starts), waits for the notifications the relay reads (`process/exited`, `process/closed`), and decodes every frame
// and answer with the harness's own decoder (src/appserver/ExecServerWire). A frame that does not decode, an error
// answer, or a message that never comes is a problem. Fields we only pass on are not checked: we never read them.
import { Duration, Effect, Either, Schema } from "effect"
import { spawn } from "node:child_process"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as readline from "node:readline"
import { ExecClientMethods, ExecServerNotifications } from "../../schemas/execServer.js"
import type { CodexCommand } from "../../src/appserver/CodexBinary.js"
import * as Wire from "../../src/appserver/ExecServerWire.js"
import type { ContractProblem } from "./contract.js"

export class ExecServerProbeFailed extends Schema.TaggedError<ExecServerProbeFailed>()("ExecServerProbeFailed", {
  reason: Schema.String
}) {
  override get message() {
    return `could not run the exec-server probe: ${this.reason}`
  }
}

export interface ExecServerReport {
  readonly methods: number
  readonly notifications: number
  readonly problems: ReadonlyArray<ContractProblem>
}

/** A loopback HTTP server for `http/request` to reach; closed with the scope. */
const httpTarget = Effect.acquireRelease(
  Effect.async<http.Server>((resume) => {
    const server = http.createServer((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("ok"))
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

/** Runs the probe; every frame the binary sends is decoded, and each problem names the method and what was wrong. */
export const checkExecServer = (
  codex: CodexCommand,
  codexHome: string,
  timeout: Duration.DurationInput = "20 seconds"
): Effect.Effect<ExecServerReport, ExecServerProbeFailed> =>
  Effect.scoped(
    Effect.gen(function*() {
      const target = yield* httpTarget
      const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/probe`
      const frames = yield* Effect.async<ReadonlyArray<string>, ExecServerProbeFailed>((resume) => {
        const child = spawn(codex.command, [...codex.prefixArgs, "exec-server", "--listen", "stdio"], {
          env: { ...process.env, CODEX_HOME: codexHome },
          stdio: ["pipe", "pipe", "ignore"]
        })
        const lines: Array<string> = []
        const send = (line: string) => child.stdin.write(`${line}\n`)
        let done = false
        const finish = (outcome: Effect.Effect<ReadonlyArray<string>, ExecServerProbeFailed>) => {
          if (done) return
          done = true
          child.stdin.end()
          child.kill("SIGKILL")
          resume(outcome)
        }
        child.on("error", (e) => finish(Effect.fail(new ExecServerProbeFailed({ reason: e.message }))))
        // an exec-server that ends before its last answer (an old binary without the subcommand) fails the probe at once
        child.on("exit", (code, signal) => finish(Effect.fail(new ExecServerProbeFailed({ reason: `the exec-server ended (${signal ?? `code ${code}`}) before answering every request` }))))
        let terminating = false
        const terminate = () => {
          if (terminating) return
          terminating = true
          send(Wire.encodeRequest(3, "process/terminate", { processId: "probe-1" }))
        }
        readline.createInterface({ input: child.stdout }).on("line", (line) => {
          lines.push(line)
          // the script moves on by what it decodes; what does not decode is judged below, with everything else
          const frame = Wire.decodeFromNode(line)
          if (Either.isLeft(frame)) return
          const f = frame.right
          // process/closed comes last for a process: then it is terminated (it has ended, so `running: false`)
          if (f._tag === "ProcessClosed" || (f._tag === "Response" && f.id === 2 && f.error !== undefined)) terminate()
          if (f._tag === "Response" && f.id === 3) {
            send(Wire.encodeRequest(4, "http/request", { method: "GET", url, headers: [{ name: "Accept", value: "text/plain" }], requestId: "probe-r" }))
          }
          if (f._tag === "Response" && f.id === 4) finish(Effect.succeed(lines))
        })
        send(Wire.encodeRequest(1, "initialize", { clientName: "codex-harness-protocol-check" }))
        send(Wire.initialized)
        send(JSON.stringify({
          id: 2,
          method: "process/start",
          params: { processId: "probe-1", argv: ["/bin/echo", "probe"], cwd: `file://${codexHome}`, env: {}, tty: false }
        }))
        return Effect.sync(() => child.kill("SIGKILL"))
      }).pipe(
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () => new ExecServerProbeFailed({ reason: `no answer to every request within ${Duration.format(Duration.decode(timeout))}` })
        })
      )

      const problems: Array<ContractProblem> = []
      const seen = new Set<string>()
      const methodOf: Record<number, Wire.ExecClientMethod> = { 1: "initialize", 2: "process/start", 3: "process/terminate", 4: "http/request" }
      for (const line of frames) {
        const frame = Wire.decodeFromNode(line)
        if (Either.isLeft(frame)) {
          problems.push({ kind: "KindMismatch", where: `exec-server ${frame.left.method ?? "frame"}`, message: frame.left.detail })
          continue
        }
        const f = frame.right
        if (f._tag === "ProcessExited" || f._tag === "ProcessClosed") seen.add(f._tag)
        if (f._tag !== "Response" || typeof f.id !== "number" || methodOf[f.id] === undefined) continue
        const method = methodOf[f.id]!
        seen.add(method)
        if (f.error !== undefined) {
          problems.push({ kind: "MethodRemoved", where: `exec-server ${method}`, message: `answered error ${f.error.code}: ${f.error.message}` })
          continue
        }
        const result = Wire.decodeResult(method, f.result)
        if (Either.isLeft(result)) problems.push({ kind: "KindMismatch", where: `exec-server ${method} result`, message: result.left.detail })
      }
      for (const expected of [...Object.keys(ExecClientMethods), "ProcessExited", "ProcessClosed"]) {
        if (!seen.has(expected)) {
          problems.push({ kind: "NotificationRemoved", where: `exec-server ${expected}`, message: "the binary never sent it" })
        }
      }
      return {
        methods: Object.keys(ExecClientMethods).length,
        notifications: Object.keys(ExecServerNotifications).length,
        problems
      }
    })
  )
