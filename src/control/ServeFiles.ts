// What a running `serve` leaves in its state dir, so the CLI finds it and nobody else can use it:
// - `serve.lock`: one `serve` per state dir (O_EXCL with its owner, taken over when the owner is dead: SessionLock.hold);
// - `serve.token`: the bearer token every call needs, 0600 in a state dir only we can write; kept across restarts while
//   it stays private, so a Control UI tab or a bot keeps working after a restart;
// - `serve.json`: where it listens (0600), written once it listens and removed when it stops.
// A client's reads of them (find, readToken) are ServeFileReads.ts: plain Node, for the CLI's --connect client.
import { FileSystem } from "@effect/platform"
import { Effect, Option, Schema, type Scope } from "effect"
import * as crypto from "node:crypto"
import { describeFileError } from "../platform/fileErrors.js"
import { checkPrivate } from "../platform/trust.js"
import { hold } from "../session/SessionLock.js"
import * as Reads from "./ServeFileReads.js"
import { ServeFilesError } from "./ServeFilesError.js"

export { ServeFilesError } from "./ServeFilesError.js"

export class ServeRunning extends Schema.TaggedError<ServeRunning>()("ServeRunning", {
  stateDir: Schema.String,
  pid: Schema.Number,
  since: Schema.String
}) {
  override get message() {
    return `codex-harness serve is already running for ${this.stateDir} (pid ${this.pid}, since ${this.since}); ` +
      "use it (commands find it by themselves) or stop it first"
  }
}

export type ServeAddress = Reads.ServeAddress

export const files = Reads.files

const tokenPattern = Reads.tokenPattern

/** Holds `serve.lock` for the scope; a live holder is ServeRunning. */
export const lock = (stateDir: string): Effect.Effect<void, ServeRunning | ServeFilesError, FileSystem.FileSystem | Scope.Scope> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    // a state dir that does not exist yet is made private, as the session store makes it for `run`
    fs.makeDirectory(stateDir, { recursive: true, mode: 0o700 }).pipe(
      Effect.mapError((e) => new ServeFilesError({ path: stateDir, reason: e.message })),
      Effect.zipRight(hold(fs, "serve", files(stateDir).lock))
    ).pipe(
      Effect.catchTags({
        SessionLocked: (e) => Effect.fail(new ServeRunning({ stateDir, pid: e.pid, since: e.since })),
        SessionLockFailed: (e) => Effect.fail(new ServeFilesError({ path: e.path, reason: e.reason }))
      })
    ))

/** The token: the existing one when it is private and well-formed, else a new one written 0600. */
export const ensureToken = (stateDir: string): Effect.Effect<string, ServeFilesError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const file = files(stateDir).token
    // kept only while nobody else may read it either
    const unreadableByOthers = Effect.flatMap(fs.stat(file), (info) =>
      (info.mode & 0o077) === 0 ? Effect.void : Effect.fail(new ServeFilesError({ path: file, reason: "readable by others" })))
    const kept = yield* checkPrivate("the serve token", file).pipe(
      Effect.zipRight(unreadableByOthers),
      Effect.zipRight(fs.readFileString(file)),
      Effect.map((text) => text.trim()),
      Effect.option
    )
    if (Option.isSome(kept) && tokenPattern.test(kept.value)) return kept.value
    const token = crypto.randomBytes(32).toString("hex")
    const temp = `${file}.${process.pid}.tmp`
    yield* fs.writeFileString(temp, `${token}\n`, { mode: 0o600 }).pipe(
      Effect.zipRight(fs.chmod(temp, 0o600)),
      Effect.zipRight(fs.rename(temp, file)),
      Effect.mapError((e) => new ServeFilesError({ path: file, reason: describeFileError(e) }))
    )
    return token
  })

/** Reads the token a client presents: only from a private file (never argv). */
export const readToken = (stateDir: string): Effect.Effect<string, ServeFilesError> =>
  Effect.try({
    try: () => Reads.readServeToken(stateDir),
    catch: (e) =>
      e instanceof Reads.ServeFileUnusable
        ? new ServeFilesError({ path: e.path, reason: e.reason })
        : new ServeFilesError({ path: files(stateDir).token, reason: String(e) })
  })

/** Writes `serve.json` for the scope; removes it at the end if it is still ours. */
export const announce = (stateDir: string, address: ServeAddress): Effect.Effect<void, ServeFilesError, FileSystem.FileSystem | Scope.Scope> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const file = files(stateDir).address
    const text = JSON.stringify(address)
    yield* Effect.acquireRelease(
      fs.writeFileString(file, `${text}\n`, { mode: 0o600 }).pipe(
        Effect.mapError((e) => new ServeFilesError({ path: file, reason: describeFileError(e) }))
      ),
      () => fs.readFileString(file).pipe(Effect.flatMap((t) => (t.trim() === text ? fs.remove(file) : Effect.void)), Effect.ignore)
    )
  })

/** The running `serve` of a state dir, if there is one: its `serve.json`, private, naming a live process. */
export const find = (stateDir: string): Effect.Effect<Option.Option<ServeAddress>> =>
  Effect.sync(() => Option.fromNullable(Reads.findServe(stateDir)))
