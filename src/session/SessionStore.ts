// Where session records live. The file-backed store keeps one JSONL file per session under `<stateDir>/sessions`;
// the in-memory store is for tests and embedders that keep their own. A corrupt line never hides the rest of a file.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Context, Effect, Layer, Option, Schema } from "effect"
import * as path from "node:path"
import { SessionRecord } from "../../schemas/session.js"
import { ensureDir, type NotADirectory } from "../platform/ensureDir.js"
import { describeFileError, isNotFound } from "../platform/fileErrors.js"

export class SessionStoreError extends Schema.TaggedError<SessionStoreError>()("SessionStoreError", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `session store ${this.path}: ${this.reason}`
  }
}

export class InvalidSessionId extends Schema.TaggedError<InvalidSessionId>()("InvalidSessionId", {
  sessionId: Schema.String
}) {
  override get message() {
    return `invalid session id ${JSON.stringify(this.sessionId)}: use letters, digits, '.', '_' or '-' (at most 128)`
  }
}

export interface CorruptLine {
  readonly line: number
  readonly reason: string
}

export interface SessionContents {
  readonly records: ReadonlyArray<SessionRecord>
  readonly corrupt: ReadonlyArray<CorruptLine>
}

export interface SessionSummary {
  readonly sessionId: string
  readonly updatedAt: Date
}

export interface SessionStoreService {
  readonly append: (sessionId: string, record: SessionRecord) => Effect.Effect<void, SessionStoreError | InvalidSessionId>
  readonly read: (sessionId: string) => Effect.Effect<SessionContents, SessionStoreError | InvalidSessionId>
  /** every session, most recently updated first */
  readonly list: Effect.Effect<ReadonlyArray<SessionSummary>, SessionStoreError>
  /** where a session's records are kept, for messages (a path, or a description for non-file stores) */
  readonly locate: (sessionId: string) => string
}

export class SessionStore extends Context.Tag("codex-harness/SessionStore")<SessionStore, SessionStoreService>() {}

/** Records whose loss would strand a session: written with fsync. */
const durableTags: ReadonlySet<SessionRecord["_tag"]> = new Set(["binding", "model", "detached", "probe"])

const validId = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
export const checkSessionId = (sessionId: string): Effect.Effect<string, InvalidSessionId> =>
  validId.test(sessionId) && !sessionId.includes("..")
    ? Effect.succeed(sessionId)
    : Effect.fail(new InvalidSessionId({ sessionId }))

const encodeRecord = Schema.encodeSync(Schema.parseJson(SessionRecord))
const decodeRecord = Schema.decodeUnknownEither(Schema.parseJson(SessionRecord))

// every record kind; the type makes a new kind a compile error here until it is listed
const recordKinds: Record<SessionRecord["_tag"], true> = {
  user: true,
  assistant: true,
  message: true,
  reasoning: true,
  plan: true,
  media: true,
  compaction: true,
  heartbeat: true,
  binding: true,
  detached: true,
  model: true,
  notice: true,
  turn: true,
  probe: true
}
const knownTags: ReadonlySet<string> = new Set(Object.keys(recordKinds))

/** A short reason for a line that did not decode (the schema's own message spells out the whole union). */
const corruptReason = (line: string): string => {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return "not JSON (a torn or hand-edited line)"
  }
  const tag = (value as { _tag?: unknown } | null)?._tag
  if (typeof tag !== "string") return "not a session record (no _tag)"
  if (!knownTags.has(tag)) return `unknown record kind ${JSON.stringify(tag)}`
  return `a ${tag} record with missing or invalid fields`
}

/** Parses a JSONL body; bad lines are reported by number and skipped. */
export const parseLines = (body: string): SessionContents => {
  const records: Array<SessionRecord> = []
  const corrupt: Array<CorruptLine> = []
  const lines = body.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (line.trim() === "") continue
    const decoded = decodeRecord(line)
    if (decoded._tag === "Right") records.push(decoded.right)
    else corrupt.push({ line: i + 1, reason: corruptReason(line) })
  }
  return { records, corrupt }
}

const newline = 0x0a
const encoder = new TextEncoder()

/**
 * The file-backed store: one JSONL file per session. An append is one write of one whole line with O_APPEND; a write
 * that fails (or is cut short and cannot be finished, on a full disk) fails the append, so the operation that wanted
 * the record fails before anything is sent. A file whose last line was torn (a crash mid-write) gets a newline first,
 * so the new record never glues onto the fragment: the fragment is skipped as one corrupt line, the record is kept.
 */
export const fileStore = (stateDir: string): Effect.Effect<SessionStoreService, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = path.join(stateDir, "sessions")
    let dirReady = false
    const locate = (sessionId: string) => path.join(dir, `${sessionId}.jsonl`)
    const fail = (file: string) => (e: PlatformError | NotADirectory) =>
      new SessionStoreError({ path: file, reason: e._tag === "NotADirectory" ? e.message : describeFileError(e) })

    const write = (file: string, record: SessionRecord) =>
      Effect.gen(function* () {
        if (!dirReady) {
          yield* ensureDir(dir).pipe(Effect.provideService(FileSystem.FileSystem, fs))
          dirReady = true
        }
        const handle = yield* fs.open(file, { flag: "a+", mode: 0o600 })
        const size = Number((yield* handle.stat).size)
        let torn = false
        if (size > 0) {
          const last = new Uint8Array(1)
          yield* handle.seek(size - 1, "start")
          torn = Number(yield* handle.read(last)) === 1 && last[0] !== newline
        }
        yield* handle.writeAll(encoder.encode(`${torn ? "\n" : ""}${encodeRecord(record)}\n`))
        // bindings and model choices are what a restart needs to find its thread: on disk before we go on
        if (durableTags.has(record._tag)) yield* handle.sync
      }).pipe(Effect.scoped, Effect.mapError(fail(file)))

    return {
      locate,
      append: (sessionId, record) => checkSessionId(sessionId).pipe(Effect.flatMap((id) => write(locate(id), record))),
      read: (sessionId) =>
        checkSessionId(sessionId).pipe(
          Effect.flatMap((id) => {
            const file = locate(id)
            return fs.readFileString(file).pipe(
              Effect.catchIf(isNotFound, () => Effect.succeed("")),
              Effect.mapError(fail(file)),
              Effect.map(parseLines)
            )
          })
        ),
      list: Effect.gen(function* () {
        const names = yield* fs.readDirectory(dir).pipe(Effect.catchIf(isNotFound, () => Effect.succeed([] as Array<string>)))
        const sessions = yield* Effect.forEach(
          names.filter((name) => name.endsWith(".jsonl")),
          (name) =>
            Effect.map(fs.stat(path.join(dir, name)), (info) => ({
              sessionId: name.slice(0, -".jsonl".length),
              updatedAt: Option.getOrElse(info.mtime, () => new Date(0))
            })),
          { concurrency: 8 }
        )
        return sessions.sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime())
      }).pipe(Effect.mapError(fail(dir)))
    } satisfies SessionStoreService
  })

export const memoryStore = (): SessionStoreService => {
  const sessions = new Map<string, Array<SessionRecord>>()
  const updated = new Map<string, Date>()
  return {
    list: Effect.sync(() =>
      [...updated.entries()]
        .map(([sessionId, updatedAt]) => ({ sessionId, updatedAt }))
        .sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime())
    ),
    locate: (sessionId) => `memory:${sessionId}`,
    append: (sessionId, record) =>
      checkSessionId(sessionId).pipe(
        Effect.map((id) => {
          const list = sessions.get(id) ?? []
          list.push(record)
          sessions.set(id, list)
          updated.set(id, new Date())
        })
      ),
    read: (sessionId) =>
      checkSessionId(sessionId).pipe(Effect.map((id) => ({ records: [...(sessions.get(id) ?? [])], corrupt: [] })))
  }
}

export const fileLayer = (stateDir: string): Layer.Layer<SessionStore, never, FileSystem.FileSystem> =>
  Layer.effect(SessionStore, fileStore(stateDir))
export const memoryLayer = Layer.sync(SessionStore, memoryStore)
