// The native hook relay's socket (S20): one Unix-domain socket per harness process, in a private directory (0700), that
// the `codex-harness hook-relay` command Codex runs for each hook connects to. A request is one JSON line
// `{token, nonce, event, payload}`; the reply is one JSON line, `{ok: true, output}` or `{ok: false, error}`.
//
// Secrets: each session gets a random token of its own, written to a file (0600) in the private directory; the hook
// command line names the file (`--token-file`), never the token, because a command line is readable by every user of
// the machine. A request with an unknown token is refused, and so is a nonce the server has already seen among the last
// `rememberedNonces` requests (a replayed request).
//
// Leftovers: the directory is `codex-hr-<pid>-XXXXXX`, so a harness that was SIGKILLed (no finalizer ran) leaves a
// directory that says whose it was; every server that starts removes the siblings of this user whose owner process is
// gone, and those of the old format without a pid whose socket nobody listens on (RelayDirs.ts). The platform's socket server runs each connection's handler in a fiber of this scope, so closing the scope
// interrupts hooks still waiting on a decision, closes the server and removes the socket and its directory; a relay
// that goes away first (past its deadline) interrupts the decision it was waiting for.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import * as Socket from "@effect/platform/Socket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import { Deferred, Effect, Fiber, Option, Schema, type Scope } from "effect"
import * as crypto from "node:crypto"
import * as os from "node:os"
import * as path from "node:path"
import { describeFileError } from "../platform/fileErrors.js"
import { dirPrefix, removeStaleDirs, socketName } from "./RelayDirs.js"
import * as HarnessLog from "../platform/HarnessLog.js"

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
  /**
   * The file holding the session's token: created (0600, in the private directory) on first use, the same path for the
   * server's life, so the hook command (and its trust hash) stays the same for the session. Its name is not the token.
   */
  readonly tokenFileFor: (sessionId: string) => Effect.Effect<string, HookRelayServerError>
}

export interface HookRelayServerOptions {
  /** the parent of the private socket directory; default os.tmpdir() (socket paths are limited to ~107 bytes) */
  readonly parentDir?: string | undefined
  readonly handle: (call: HookCall) => Effect.Effect<HookOutput>
}

/** requests larger than this are refused (a hook payload is a few KB) */
export const maxRequestBytes = 4 * 1024 * 1024

/**
 * How many request nonces the server remembers (about 150 KB): a nonce seen among the last this many accepted requests
 * is refused. Older ones are forgotten, so memory stays bounded however long the harness runs.
 */
export const rememberedNonces = 4096

/** a client nonce: 16 to 128 characters of [A-Za-z0-9_-] (the relay sends 32 hex digits) */
const nonceShape = /^[A-Za-z0-9_-]{16,128}$/

const newline = 0x0a
const failed = (e: PlatformError) => new HookRelayServerError({ reason: describeFileError(e) })

/** The nonces seen lately, oldest first (a Set keeps insertion order); `fresh` records one and says if it was new. */
const makeNonceMemory = (capacity: number) => {
  const seen = new Set<string>()
  return {
    fresh: (nonce: string): boolean => {
      if (seen.has(nonce)) return false
      seen.add(nonce)
      if (seen.size > capacity) seen.delete(seen.values().next().value!)
      return true
    }
  }
}

export const make = (
  options: HookRelayServerOptions
): Effect.Effect<HookRelayServer, HookRelayServerError, Scope.Scope | FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const scope = yield* Effect.scope
    const parent = options.parentDir ?? os.tmpdir()
    const stale = yield* removeStaleDirs(parent)
    if (stale.length > 0) yield* HarnessLog.debug(`removed ${stale.length} relay directories of harnesses that are gone`)
    // removed with everything in it when the scope closes (after the server, whose finalizer runs first)
    const dir = yield* fs.makeTempDirectoryScoped({ directory: parent, prefix: `${dirPrefix}${process.pid}-` }).pipe(
      Effect.mapError(failed)
    )
    yield* fs.chmod(dir, 0o700).pipe(Effect.mapError(failed))
    const socketPath = path.join(dir, socketName)
    const sessionsByToken = new Map<string, string>()
    const filesBySession = new Map<string, string>()
    const nonces = makeNonceMemory(rememberedNonces)
    // the next session's token file is written ahead (the first while the server starts, each next one in the
    // background once the last is taken), so a turn's thread setup does no file I/O for it
    let written = 0
    const writeTokenFile = Effect.suspend(() => {
      const token = crypto.randomBytes(24).toString("hex")
      const file = path.join(dir, `session-${++written}.token`)
      return fs.writeFileString(file, token, { flag: "wx", mode: 0o600 }).pipe(
        Effect.zipRight(fs.chmod(file, 0o600)),
        Effect.mapError(failed),
        Effect.as({ file, token })
      )
    })
    let spare: Fiber.Fiber<{ readonly file: string; readonly token: string }, HookRelayServerError> = Fiber.succeed(
      yield* writeTokenFile
    )
    // one at a time, so two turns of a new session never take two tokens
    const lock = yield* Effect.makeSemaphore(1)
    const tokenFileFor = (sessionId: string) =>
      lock.withPermits(1)(Effect.suspend(() => {
        const known = filesBySession.get(sessionId)
        if (known !== undefined) return Effect.succeed(known)
        // a spare that could not be written is written again, now
        return Fiber.join(spare).pipe(
          Effect.orElse(() => writeTokenFile),
          Effect.tap(({ file, token }) =>
            Effect.sync(() => {
              filesBySession.set(sessionId, file)
              sessionsByToken.set(token, sessionId)
            })
          ),
          Effect.zipLeft(Effect.flatMap(Effect.forkIn(writeTokenFile, scope), (next) => Effect.sync(() => (spare = next)))),
          Effect.map(({ file }) => file)
        )
      }))

    const answer = (line: string): Effect.Effect<RelayReply> => {
      let request: unknown
      try {
        request = JSON.parse(line)
      } catch {
        return Effect.succeed({ ok: false, error: "the request is not JSON" })
      }
      if (typeof request !== "object" || request === null) return Effect.succeed({ ok: false, error: "the request is not an object" })
      const { event, nonce, payload, token } = request as Record<string, unknown>
      const sessionId = typeof token === "string" ? sessionsByToken.get(token) : undefined
      if (sessionId === undefined) return Effect.succeed({ ok: false, error: "refused: unknown token" })
      if (typeof nonce !== "string" || !nonceShape.test(nonce)) return Effect.succeed({ ok: false, error: "refused: no nonce" })
      if (!nonces.fresh(nonce)) return Effect.succeed({ ok: false, error: "refused: a nonce already used (a replayed request)" })
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
        const gone = yield* Deferred.make<void>()
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
            // the peer went away (before a whole line arrived, or while its answer was being decided)
            Effect.ensuring(Effect.zipRight(Deferred.succeed(request, undefined), Deferred.succeed(gone, undefined))),
            Effect.ignore,
            Effect.forkScoped
          )
        const line = yield* Deferred.await(request)
        if (line === undefined) {
          yield* write(JSON.stringify({ ok: false, error: size > maxRequestBytes ? "the request is too large" : "no request" }) + "\n")
          return yield* write(new Socket.CloseEvent())
        }
        // a relay that gave up (its deadline passed, Codex killed it) gets no answer: the decision (a prompt, a policy)
        // is interrupted rather than left waiting for nobody
        const reply = yield* Effect.raceFirst(Effect.asSome(answer(line)), Effect.as(Deferred.await(gone), Option.none<RelayReply>()))
        if (Option.isNone(reply)) return
        yield* write(JSON.stringify(reply.value) + "\n")
        yield* write(new Socket.CloseEvent())
      }).pipe(Effect.scoped, Effect.ignore)

    const server = yield* NodeSocketServer.make({ path: socketPath }).pipe(
      Effect.mapError((e) => new HookRelayServerError({ reason: e.message }))
    )
    yield* fs.chmod(socketPath, 0o600).pipe(Effect.mapError(failed))
    yield* server.run(serve).pipe(Effect.ignore, Effect.forkScoped)
    return { socketPath, tokenFileFor } satisfies HookRelayServer
  })
