// Where session records live. The file-backed store keeps one JSONL file per session under `<stateDir>/sessions`;
// the in-memory store is for tests and embedders that keep their own. A corrupt line never hides the rest of a file.
import { Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { SessionRecord } from "../../schemas/session.js"
import { ensureDirSync } from "../platform/ensureDir.js"

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

export const fileStore = (stateDir: string): SessionStoreService => {
  const dir = path.join(stateDir, "sessions")
  let dirReady = false
  const locate = (sessionId: string) => path.join(dir, `${sessionId}.jsonl`)
  const fail = (file: string) => (e: unknown) =>
    new SessionStoreError({ path: file, reason: e instanceof Error ? e.message.replace(/^[A-Z]+: /, "") : String(e) })
  return {
    locate,
    append: (sessionId, record) =>
      checkSessionId(sessionId).pipe(
        Effect.flatMap((id) => {
          const file = locate(id)
          return Effect.tryPromise({
            try: async () => {
              if (!dirReady) {
                ensureDirSync(dir)
                dirReady = true
              }
              // one write per record with O_APPEND: a crash can only tear the last line, which reading skips, so the
              // previous binding always survives; bindings are also fsynced so a restart finds the thread it had
              const handle = await fs.open(file, "a", 0o600)
              try {
                await handle.write(encodeRecord(record) + "\n")
                if (durableTags.has(record._tag)) await handle.sync()
              } finally {
                await handle.close()
              }
            },
            catch: fail(file)
          })
        })
      ),
    read: (sessionId) =>
      checkSessionId(sessionId).pipe(
        Effect.flatMap((id) => {
          const file = locate(id)
          return Effect.tryPromise({
            try: () => fs.readFile(file, "utf8").catch((e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? "" : Promise.reject(e))),
            catch: fail(file)
          }).pipe(Effect.map(parseLines))
        })
      ),
    list: Effect.tryPromise({
      try: async () => {
        const names = await fs.readdir(dir).catch((e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? [] : Promise.reject(e)))
        const sessions = await Promise.all(
          names
            .filter((name) => name.endsWith(".jsonl"))
            .map(async (name) => ({
              sessionId: name.slice(0, -".jsonl".length),
              updatedAt: (await fs.stat(path.join(dir, name))).mtime
            }))
        )
        return sessions.sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime())
      },
      catch: fail(dir)
    })
  }
}

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

export const fileLayer = (stateDir: string) => Layer.succeed(SessionStore, fileStore(stateDir))
export const memoryLayer = Layer.sync(SessionStore, memoryStore)
