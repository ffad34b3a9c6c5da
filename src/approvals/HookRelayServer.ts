// The native hook relay's socket (S20): one Unix-domain socket per harness process, in a private directory (0700), that
// the `codex-harness hook-relay` command Codex runs for each hook connects to. A request is one JSON line
// `{token, event, payload}`; the reply is one JSON line, `{ok: true, output}` or `{ok: false, error}`. Each session gets
// a random token of its own: a request with an unknown token is refused. Closing the scope closes the server and
// removes the socket and its directory.
import { Effect, Runtime, Schema, type Scope } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** Codex's hook event names as the relay passes them */
export type HookEventName = "PreToolUse" | "PostToolUse" | "PermissionRequest" | "Stop"
export const hookEventNames: ReadonlyArray<HookEventName> = ["PreToolUse", "PostToolUse", "PermissionRequest", "Stop"]
export const isHookEventName = (u: unknown): u is HookEventName =>
  typeof u === "string" && (hookEventNames as ReadonlyArray<string>).includes(u)

/** What the hook process does: its exit code and what it writes (Codex's hook output format). */
export interface HookOutput {
  readonly exitCode: 0 | 2
  readonly stdout?: string | undefined
  readonly stderr?: string | undefined
}

export const noDecision: HookOutput = { exitCode: 0 }

export interface HookCall {
  readonly sessionId: string
  readonly event: HookEventName
  readonly payload: unknown
}

export type RelayReply = { readonly ok: true; readonly output: HookOutput } | { readonly ok: false; readonly error: string }

export class HookRelayServerError extends Schema.TaggedError<HookRelayServerError>()("HookRelayServerError", {
  reason: Schema.String
}) {
  override get message() {
    return `the hook relay socket failed: ${this.reason}`
  }
}

export interface HookRelayServer {
  readonly socketPath: string
  /** the session's token (created on first use, stable for the server's life) */
  readonly tokenFor: (sessionId: string) => string
}

export interface HookRelayServerOptions {
  /** the parent of the private socket directory; default os.tmpdir() (socket paths are limited to ~107 bytes) */
  readonly parentDir?: string | undefined
  readonly handle: (call: HookCall) => Effect.Effect<HookOutput>
}

/** requests larger than this are refused (a hook payload is a few KB) */
export const maxRequestBytes = 4 * 1024 * 1024

const reasonOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

export const make = (options: HookRelayServerOptions): Effect.Effect<HookRelayServer, HookRelayServerError, Scope.Scope> =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const runPromise = Runtime.runPromise(runtime)
    const dir = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const made = fs.mkdtempSync(path.join(options.parentDir ?? os.tmpdir(), "codex-hr-"))
          fs.chmodSync(made, 0o700)
          return made
        },
        catch: (e) => new HookRelayServerError({ reason: reasonOf(e) })
      }),
      (made) => Effect.sync(() => fs.rmSync(made, { recursive: true, force: true }))
    )
    const socketPath = path.join(dir, "relay.sock")
    const sessionsByToken = new Map<string, string>()
    const tokensBySession = new Map<string, string>()
    const tokenFor = (sessionId: string) => {
      const known = tokensBySession.get(sessionId)
      if (known !== undefined) return known
      const token = crypto.randomBytes(24).toString("hex")
      tokensBySession.set(sessionId, token)
      sessionsByToken.set(token, sessionId)
      return token
    }

    const answer = async (line: string): Promise<RelayReply> => {
      let request: unknown
      try {
        request = JSON.parse(line)
      } catch {
        return { ok: false, error: "the request is not JSON" }
      }
      if (typeof request !== "object" || request === null) return { ok: false, error: "the request is not an object" }
      const { event, payload, token } = request as Record<string, unknown>
      const sessionId = typeof token === "string" ? sessionsByToken.get(token) : undefined
      if (sessionId === undefined) return { ok: false, error: "refused: unknown token" }
      if (!isHookEventName(event)) return { ok: false, error: `unknown hook event ${JSON.stringify(event)}` }
      const output = await runPromise(options.handle({ sessionId, event, payload }))
      return { ok: true, output }
    }

    const open = new Set<net.Socket>()
    const onConnection = (socket: net.Socket) => {
      open.add(socket)
      socket.on("close", () => open.delete(socket))
      let buffer = ""
      let done = false
      socket.setEncoding("utf8")
      socket.on("error", () => socket.destroy())
      socket.on("data", (chunk: string) => {
        if (done) return
        buffer += chunk
        const end = buffer.indexOf("\n")
        if (end < 0 && buffer.length <= maxRequestBytes) return
        done = true
        const reply: Promise<RelayReply> = end < 0
          ? Promise.resolve({ ok: false, error: "the request is too large" })
          : answer(buffer.slice(0, end)).catch((e: unknown) => ({ ok: false, error: reasonOf(e) }))
        void reply.then((r) => socket.end(JSON.stringify(r) + "\n"))
      })
    }

    yield* Effect.acquireRelease(
      Effect.async<net.Server, HookRelayServerError>((resume) => {
        const server = net.createServer(onConnection)
        server.once("error", (e) => resume(Effect.fail(new HookRelayServerError({ reason: reasonOf(e) }))))
        server.listen(socketPath, () => {
          fs.chmodSync(socketPath, 0o600)
          resume(Effect.succeed(server))
        })
      }),
      (server) =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          // connections still open (a hook waiting on a prompt) must not keep the scope from closing
          for (const socket of open) socket.destroy()
        }).pipe(Effect.timeout("2 seconds"), Effect.ignore, Effect.zipRight(Effect.sync(() => fs.rmSync(socketPath, { force: true }))))
    )
    return { socketPath, tokenFor } satisfies HookRelayServer
  })
