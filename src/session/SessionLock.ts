// One writer per session across processes: an advisory lock file `<id>.lock` beside the session file, made with
// O_EXCL and holding its owner (pid, process start time, host, command, since when). A second process on the same
// session refuses in one line naming the holder; a lock whose owner is gone (its pid dead, or reused by another
// process) is taken over. Within one process the lock is shared (refcounted) by every operation on the session.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Effect, Schema, type Scope } from "effect"
import * as os from "node:os"
import { describeFileError } from "../platform/fileErrors.js"
import { isAlive } from "../platform/processAlive.js"

export class SessionLocked extends Schema.TaggedError<SessionLocked>()("SessionLocked", {
  sessionId: Schema.String,
  pid: Schema.Number,
  command: Schema.String,
  since: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} is in use by another codex-harness process (pid ${this.pid}, ${this.command}, since ${this.since}); ` +
      "wait for it to finish, or use another session"
  }
}

export class SessionLockFailed extends Schema.TaggedError<SessionLockFailed>()("SessionLockFailed", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot lock the session (${this.path}): ${this.reason}`
  }
}

const Owner = Schema.parseJson(
  Schema.Struct({
    pid: Schema.Number,
    startTime: Schema.optional(Schema.String),
    host: Schema.String,
    command: Schema.String,
    since: Schema.String
  })
)
type Owner = typeof Owner.Type
const decodeOwner = Schema.decodeUnknownOption(Owner)
const encodeOwner = Schema.encodeSync(Owner)

/** The lock file of the session file `<dir>/<id>.jsonl`: `<dir>/<id>.lock`. */
export const lockFileOf = (sessionFile: string): string => `${sessionFile.replace(/\.jsonl$/, "")}.lock`

/** A lock file whose content cannot be read is someone still writing it, unless it is older than this. */
const unreadableGraceMs = 5_000

/** Field 22 of /proc/PID/stat: when the process started, so a reused pid is not mistaken for the owner. */
const startTimeOf = (fs: FileSystem.FileSystem, pid: number) =>
  fs.readFileString(`/proc/${pid}/stat`).pipe(
    Effect.map((stat) => stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]),
    Effect.orElseSucceed(() => undefined)
  )

const commandName = () => process.argv[2] !== undefined && !process.argv[2].startsWith("-") ? process.argv[2] : "an embedder"

/** Holds the lock file at `file` for the Scope; releasing removes it only if it is still ours. */
export const hold = (
  fs: FileSystem.FileSystem,
  sessionId: string,
  file: string
): Effect.Effect<void, SessionLocked | SessionLockFailed, Scope.Scope> =>
  Effect.gen(function* () {
    const failed = (e: PlatformError) => new SessionLockFailed({ path: file, reason: describeFileError(e) })
    const mine: Owner = {
      pid: process.pid,
      startTime: yield* startTimeOf(fs, process.pid),
      host: os.hostname(),
      command: commandName(),
      since: new Date().toISOString()
    }
    const text = encodeOwner(mine)

    const alive = (owner: Owner) =>
      Effect.gen(function* () {
        // another host shares the directory: its processes cannot be checked, so it counts as alive
        if (owner.host !== mine.host) return true
        if (!isAlive(owner.pid)) return false
        if (owner.startTime === undefined) return true
        return (yield* startTimeOf(fs, owner.pid)) === owner.startTime
      })

    const attempt = (left: number): Effect.Effect<void, SessionLocked | SessionLockFailed> =>
      fs.writeFileString(file, text, { flag: "wx", mode: 0o600 }).pipe(
        Effect.catchIf(
          (e) => e._tag === "SystemError" && e.reason === "AlreadyExists" && left > 0,
          () =>
            Effect.gen(function* () {
              const content = yield* fs.readFileString(file).pipe(Effect.orElseSucceed(() => ""))
              const owner = decodeOwner(content)
              if (owner._tag === "Some") {
                if (yield* alive(owner.value)) {
                  return yield* new SessionLocked({ sessionId, pid: owner.value.pid, command: owner.value.command, since: owner.value.since })
                }
              } else {
                const age = yield* fs.stat(file).pipe(
                  Effect.map((info) => Date.now() - (info.mtime._tag === "Some" ? info.mtime.value.getTime() : 0)),
                  Effect.orElseSucceed(() => Number.POSITIVE_INFINITY)
                )
                if (age < unreadableGraceMs) {
                  return yield* new SessionLocked({ sessionId, pid: 0, command: "a process starting up", since: "now" })
                }
              }
              // the owner is gone: take the lock over, unless somebody else did in the meantime
              const again = yield* fs.readFileString(file).pipe(Effect.orElseSucceed(() => ""))
              if (again === content) yield* fs.remove(file).pipe(Effect.ignore)
              return yield* attempt(left - 1)
            })
        ),
        Effect.mapError((e) => (e._tag === "SessionLocked" || e._tag === "SessionLockFailed" ? e : failed(e)))
      )

    yield* Effect.acquireRelease(attempt(3), () =>
      fs.readFileString(file).pipe(
        Effect.flatMap((content) => (content === text ? fs.remove(file) : Effect.void)),
        Effect.ignore
      ))
  })
