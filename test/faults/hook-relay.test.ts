// The native hook relay under faults, through the compiled `codex-harness hook-relay` and the relay server: a relay that
// never answers is given up at the relay's own deadline (PreToolUse and PermissionRequest refused, the others carry on),
// on the real app-server too; a reply that is not a decision is never an allow; the token travels in a private file,
// a replayed request is refused, and a decision nobody waits for any more is interrupted.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import * as HookRelay from "../../src/approvals/HookRelay.js"
import * as HookRelayServer from "../../src/approvals/HookRelayServer.js"
import { Settings } from "../../src/config/Settings.js"
import * as CodexHarness from "../../src/harness/CodexHarness.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { bin } from "../support/cli.js"
import { fixture, isAlive, tempDir } from "../support/harness.js"

interface Relayed {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  readonly ms: number
  readonly pid: number
}

/** runs `codex-harness hook-relay ARGS` with the payload on stdin; killed after 30 s */
const runRelay = (args: ReadonlyArray<string>, payload = "{}") =>
  Effect.async<Relayed>((resume) => {
    const started = Date.now()
    const child = spawn(process.execPath, [bin, "hook-relay", ...args], { stdio: ["pipe", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")))
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code: code ?? (signal !== null ? 128 : 1), stdout, stderr, ms: Date.now() - started, pid: child.pid! }))
    })
    child.stdin.end(payload)
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** A stand-in relay socket: records each request line and answers with `answer(request)`, or never when undefined. */
const fakeRelay = (answer: (request: Record<string, unknown>) => string | undefined) =>
  Effect.gen(function* () {
    const dir = yield* tempDir("codex-fault-relay-")
    const socketPath = path.join(dir, "relay.sock")
    const tokenFile = path.join(dir, "session-1.token")
    fs.writeFileSync(tokenFile, "the-session-token\n", { mode: 0o600 })
    const requests: Array<Record<string, unknown>> = []
    const open = new Set<net.Socket>()
    const server = net.createServer((socket) => {
      open.add(socket)
      socket.on("close", () => open.delete(socket))
      let text = ""
      socket.setEncoding("utf8")
      socket.on("error", () => {})
      socket.on("data", (chunk: string) => {
        text += chunk
        if (!text.includes("\n")) return
        const request = JSON.parse(text.slice(0, text.indexOf("\n"))) as Record<string, unknown>
        requests.push(request)
        const line = answer(request)
        if (line !== undefined) socket.end(line + "\n")
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => void server.listen(socketPath, () => resume(Effect.void))),
      () =>
        Effect.async<void>((resume) => {
          for (const socket of open) socket.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    return { socketPath, tokenFile, requests }
  })

const argsFor = (relay: { socketPath: string; tokenFile: string }, event: string, timeoutMs?: number) => [
  "--socket",
  relay.socketPath,
  "--token-file",
  relay.tokenFile,
  "--event",
  event,
  ...(timeoutMs !== undefined ? ["--timeout-ms", String(timeoutMs)] : [])
]

const closedEvents = ["PreToolUse", "PermissionRequest"] as const
const openEvents = ["PostToolUse", "Stop"] as const

describe("the hook relay never fails open", () => {
  it.scopedLive("a relay that never answers: refused at the relay's deadline for PreToolUse and PermissionRequest, no decision for the others", () =>
    Effect.gen(function* () {
      const relay = yield* fakeRelay(() => undefined)
      const runs = yield* Effect.all(
        // a deadline long enough for four Node processes to start and connect on a loaded machine
        [...closedEvents, ...openEvents].map((event) => runRelay(argsFor(relay, event, 5000))),
        { concurrency: "unbounded" }
      )
      const [pre, permission, post, stop] = runs
      for (const run of [pre!, permission!]) {
        expect(run).toMatchObject({ code: 2, stdout: "", stderr: "codex-harness hook relay: no decision within 5.0 s\n" })
      }
      for (const run of [post!, stop!]) expect(run).toMatchObject({ code: 0, stdout: "", stderr: "" })
      // the deadline, not Codex's timeout and not a hang, ended them
      for (const run of runs) expect(run.ms).toBeLessThan(20_000)
      expect(relay.requests).toHaveLength(4)
      expect(runs.filter((run) => isAlive(run.pid))).toEqual([])
    }))

  it.scopedLive("an unexpected reply (exit code 7 or \"2\", outputs that are not strings, no object) is refused, never an allow", () =>
    Effect.gen(function* () {
      const outputs: ReadonlyArray<unknown> = [
        { exitCode: 7 },
        { exitCode: "2", stderr: "looks like a deny" },
        { exitCode: 0, stdout: 5 },
        { exitCode: 0, stdout: { hookSpecificOutput: { decision: { behavior: "allow" } } } },
        "allow"
      ]
      for (const output of outputs) {
        const relay = yield* fakeRelay(() => JSON.stringify({ ok: true, output }))
        for (const event of closedEvents) {
          const run = yield* runRelay(argsFor(relay, event))
          expect(run, `${event} ${JSON.stringify(output)}`).toMatchObject({ code: 2, stdout: "" })
          expect(run.stderr).toMatch(/^codex-harness hook relay: an unexpected reply, taken as no decision: .*\n$/)
        }
        for (const event of openEvents) {
          expect(yield* runRelay(argsFor(relay, event)), `${event} ${JSON.stringify(output)}`).toMatchObject({ code: 0, stdout: "" })
        }
      }
    }))

  it.scopedLive("a request carries the token read from the file and a fresh nonce; a missing token file fails closed", () =>
    Effect.gen(function* () {
      const relay = yield* fakeRelay(() => JSON.stringify({ ok: true, output: { exitCode: 0 } }))
      yield* runRelay(argsFor(relay, "PreToolUse"), JSON.stringify({ tool_use_id: "c1" }))
      yield* runRelay(argsFor(relay, "PreToolUse"), JSON.stringify({ tool_use_id: "c2" }))
      expect(relay.requests.map((r) => [r.token, r.event, r.payload])).toEqual([
        ["the-session-token", "PreToolUse", { tool_use_id: "c1" }],
        ["the-session-token", "PreToolUse", { tool_use_id: "c2" }]
      ])
      const nonces = relay.requests.map((r) => r.nonce as string)
      expect(nonces.every((n) => /^[0-9a-f]{32}$/.test(n))).toBe(true)
      expect(new Set(nonces).size).toBe(2)
      const missing = yield* runRelay([...argsFor(relay, "PreToolUse")].map((a) => (a === relay.tokenFile ? `${a}.gone` : a)))
      expect(missing.code).toBe(2)
      expect(missing.stderr).toMatch(/^codex-harness hook relay: cannot read the token file: .*\n$/)
    }))
})

describe("the relay server keeps its secrets", () => {
  it.scopedLive("the token is in a private file the hook command names; a replayed or nonce-less request is refused", () =>
    Effect.gen(function* () {
      const parent = yield* tempDir("codex-fault-parent-")
      const calls: Array<HookRelayServer.HookCall> = []
      const server = yield* HookRelayServer.make({
        parentDir: parent,
        handle: (call) => Effect.sync(() => calls.push(call)).pipe(Effect.as(HookRelayServer.noDecision))
      })
      const dir = path.dirname(server.socketPath)
      expect(path.basename(dir)).toMatch(new RegExp(`^codex-hr-${process.pid}-`))
      expect(fs.statSync(dir).mode & 0o777).toBe(0o700)
      const file = yield* server.tokenFileFor("s")
      const token = fs.readFileSync(file, "utf8")
      expect(token).toMatch(/^[0-9a-f]{48}$/)
      expect(path.dirname(file)).toBe(dir)
      expect(path.basename(file)).not.toContain(token)
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)

      const ask = (request: Record<string, unknown>) =>
        Effect.async<Record<string, unknown>>((resume) => {
          const socket = net.createConnection(server.socketPath)
          let text = ""
          socket.setEncoding("utf8")
          socket.on("connect", () => socket.write(JSON.stringify(request) + "\n"))
          socket.on("data", (c: string) => (text += c))
          socket.on("close", () => resume(Effect.sync(() => JSON.parse(text.split("\n")[0]!))))
        })
      const request = { token, nonce: "0123456789abcdef0123456789abcdef", event: "Stop", payload: {} }
      expect(yield* ask(request)).toEqual({ ok: true, output: { exitCode: 0 } })
      expect(yield* ask(request)).toEqual({ ok: false, error: "refused: a nonce already used (a replayed request)" })
      expect(yield* ask({ token, event: "Stop", payload: {} })).toEqual({ ok: false, error: "refused: no nonce" })
      expect(calls).toHaveLength(1)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scopedLive("a decision still pending when its relay goes away is interrupted, not left waiting for nobody", () =>
    Effect.gen(function* () {
      const parent = yield* tempDir("codex-fault-parent-")
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const server = yield* HookRelayServer.make({
        parentDir: parent,
        handle: () =>
          Effect.zipRight(Deferred.succeed(started, undefined), Effect.never).pipe(
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
      })
      const token = fs.readFileSync(yield* server.tokenFileFor("s"), "utf8")
      const socket = net.createConnection(server.socketPath)
      socket.on("error", () => {})
      socket.write(JSON.stringify({ token, nonce: "fedcba9876543210fedcba9876543210", event: "PreToolUse", payload: {} }) + "\n")
      yield* Deferred.await(started)
      socket.destroy()
      expect(yield* Deferred.await(interrupted).pipe(Effect.timeout("60 seconds"), Effect.option)).toMatchObject({ _tag: "Some" })
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("the hook commands name the token file and the relay's deadline, never the token, the same on every call", () =>
    Effect.gen(function* () {
      const parent = yield* tempDir("codex-fault-parent-")
      const settings = Layer.mergeAll(
        Layer.succeed(Settings, { stateDir: "/tmp", cwd: "/tmp", approvalPolicy: "never", sandbox: "read-only" }),
        HookRelay.reportsLayer,
        NodeFileSystem.layer
      )
      const extension = yield* HookRelay.makeExtension({ socketParentDir: parent, timeouts: { pre_tool_use: 20 } }).pipe(
        Effect.provide(settings),
        Effect.provideService(HookRelay.HookPolicy, {
          stop: () => Effect.succeed({ _tag: "Stop" } as const),
          preToolUse: () => Effect.succeed({ _tag: "NoDecision" } as const),
          postToolUse: () => Effect.void
        })
      )
      const first = yield* extension.threadConfig!("s1")
      expect(yield* extension.threadConfig!("s1")).toEqual(first)
      const commands = ["PreToolUse", "PostToolUse", "PermissionRequest", "Stop"].map(
        (event) => (first[`hooks.${event}`] as ReadonlyArray<{ hooks: ReadonlyArray<{ command: string }> }>)[0]!.hooks[0]!.command
      )
      const files = commands.map((c) => / --token-file (\S+) /.exec(c)?.[1])
      expect(new Set(files).size).toBe(1)
      const token = fs.readFileSync(files[0]!, "utf8")
      for (const command of commands) {
        expect(command).not.toContain(token)
        expect(command).not.toMatch(/ --token /)
      }
      expect(commands[0]).toMatch(/ --event PreToolUse --timeout-ms 18000$/)
      expect(commands[1]).toMatch(/ --event PostToolUse --timeout-ms 27000$/)
    }))
})

describe("the relay's deadline on the real app-server", () => {
  it.scopedLive("a PreToolUse policy that never decides: the relay gives up before Codex's hook timeout and the command is blocked", () =>
    Effect.gen(function* () {
      const touch = reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch late.txt" } })
      const f = yield* fixture({ replies: [touch, reply.text("blocked")] }, { approvalPolicy: "never", sandbox: "workspace-write" })
      const live = Live.layer({ ...f.settings, nativeHookEvents: ["pre_tool_use"] }).pipe(
        Layer.provide(Layer.succeed(HookRelay.HookPolicy, { preToolUse: () => Effect.never })),
        Layer.provide(Layer.succeed(HookRelay.HookRelayConfig, { timeouts: { pre_tool_use: 4 } })),
        Layer.provideMerge(RecordingDelivery.layer)
      )
      const harness = Context.get(yield* Layer.build(live), CodexHarness.CodexHarness)
      const result = yield* harness.runTurn({ sessionId: "late-hook", prompt: "make late.txt" })
      expect(result.finalText).toBe("blocked")
      expect(fs.existsSync(path.join(f.workDir, "late.txt"))).toBe(false)
      const requests = yield* f.model.requests
      expect(requests[1]!.body).toContain("Command blocked by PreToolUse hook")
      expect(requests[1]!.body).toContain("codex-harness hook relay: no decision within 3.6 s")
    }))
})
