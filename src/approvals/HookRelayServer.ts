// The native hook relay's socket (S20): one Unix-domain socket per harness process, in a private directory (0700), that
// the `codex-harness hook-relay` command Codex runs for each hook connects to. A request is one JSON line
// `{token, event, payload}`; the reply is one JSON line, `{ok: true, output}` or `{ok: false, error}`. Each session gets
// a random token of its own: a request with an unknown token is refused. The platform's socket server runs each
// connection's handler in a fiber of this scope, so closing the scope interrupts hooks still waiting on a decision,
// closes the server and removes the socket and its directory.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import * as Socket from "@effect/platform/Socket"
import { NodeSocketServer } from "@effect/platform-node"
import { Deferred, Effect, Schema, type Scope } from "effect"
import * as crypto from "node:crypto"
import * as os from "node:os"
import * as path from "node:path"
import { describeFileError } from "../platform/fileErrors.js"

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

const newline = 0x0a
const failed = (e: PlatformError) => new HookRelayServerError({ reason: describeFileError(e) })

export const make = (
  options: HookRelayServerOptions
): Effect.Effect<HookRelayServer, HookRelayServerError, Scope.Scope | FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    // removed with everything in it when the scope closes (after the server, whose finalizer runs first)
    const dir = yield* fs.makeTempDirectoryScoped({ directory: options.parentDir ?? os.tmpdir(), prefix: "codex-hr-" }).pipe(
      Effect.mapError(failed)
    )
    yield* fs.chmod(dir, 0o700).pipe(Effect.mapError(failed))
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

    const answer = (line: string): Effect.Effect<RelayReply> => {
      let request: unknown
      try {
        request = JSON.parse(line)
      } catch {
        return Effect.succeed({ ok: false, error: "the request is not JSON" })
      }
      if (typeof request !== "object" || request === null) return Effect.succeed({ ok: false, error: "the request is not an object" })
      const { event, payload, token } = request as Record<string, unknown>
      const sessionId = typeof token === "string" ? sessionsByToken.get(token) : undefined
      if (sessionId === undefined) return Effect.succeed({ ok: false, error: "refused: unknown token" })
      if (!isHookEventName(event)) return Effect.succeed({ ok: false, error: `unknown hook event ${JSON.stringify(event)}` })
      return options.handle({ sessionId, event, payload }).pipe(
        Effect.map((output): RelayReply => ({ ok: true, output })),
        Effect.catchAllDefect((defect) => Effect.succeed<RelayReply>({ ok: false, error: String(defect) }))
      )
    }

    // one connection: read up to the first newline (bounded), answer with one line, close
    const serve = (socket: Socket.Socket) =>
      Effect.gen(function* () {
        const write = yield* socket.writer
        const request = yield* Deferred.make<string | undefined>()
        const chunks: Array<Uint8Array> = []
        let size = 0
        yield* socket
          .run((chunk: Uint8Array) => {
            const end = chunk.indexOf(newline)
            chunks.push(end < 0 ? chunk : chunk.subarray(0, end))
            size += end < 0 ? chunk.length : end
            if (end >= 0) return Deferred.succeed(request, Buffer.concat(chunks).toString("utf8"))
            return size > maxRequestBytes ? Deferred.succeed(request, undefined) : Effect.void
          })
          .pipe(
            // the peer went away before a whole line arrived
            Effect.ensuring(Deferred.succeed(request, undefined)),
            Effect.ignore,
            Effect.forkScoped
          )
        const line = yield* Deferred.await(request)
        const reply: RelayReply = line === undefined
          ? { ok: false, error: size > maxRequestBytes ? "the request is too large" : "no request" }
          : yield* answer(line)
        yield* write(JSON.stringify(reply) + "\n")
        yield* write(new Socket.CloseEvent())
      }).pipe(Effect.scoped, Effect.ignore)

    const server = yield* NodeSocketServer.make({ path: socketPath }).pipe(
      Effect.mapError((e) => new HookRelayServerError({ reason: e.message }))
    )
    yield* fs.chmod(socketPath, 0o600).pipe(Effect.mapError(failed))
    yield* server.run(serve).pipe(Effect.ignore, Effect.forkScoped)
    return { socketPath, tokenFor } satisfies HookRelayServer
  })
