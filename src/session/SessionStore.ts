// Where session records live: the store's interface, its errors, the record codec and the in-memory store (for tests
// and embedders that keep their own). The file-backed store is FileSessionStore. A corrupt line never hides the rest of
// a file.
import { Context, Effect, Layer, Schema, type Scope } from "effect"
import { SessionRecord } from "../../schemas/session.js"
import type { SessionLocked, SessionLockFailed } from "./SessionLock.js"

export { SessionLocked, SessionLockFailed } from "./SessionLock.js"

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
  /**
   * What a turn needs of the session, when the store can give less than `read` (the PostgreSQL store: the records its
   * state comes from and the recent tail, SessionSnapshot.ts; from memory while this process holds the session). Its
   * state is the whole transcript's. Optional: `read` otherwise.
   */
  readonly readRecent?: ((sessionId: string) => Effect.Effect<SessionContents, SessionStoreError | InvalidSessionId>) | undefined
  /**
   * The ids `ref` names without listing every session (an index lookup): `ref` itself first when it is one, then the
   * ids it is the start of, most recent first, at most `limit`; `matches` counts them all. Optional: `list` otherwise.
   */
  readonly lookup?: ((ref: string, limit: number) => Effect.Effect<{ readonly ids: ReadonlyArray<string>; readonly matches: number }, SessionStoreError>) | undefined
  /** where a session's records are kept, for messages (a path, or a description for non-file stores) */
  readonly locate: (sessionId: string) => string
  /**
   * Rewrites harness-owned content records of the session after the fact (a redaction, S40): `change` returns the new
   * record, or undefined to keep a record as it is. Only content records may change, each into one of its own kind
   * (RecordRewriteRefused otherwise, before anything is written); every other line stays byte for byte. The file is
   * replaced atomically under the session's lock; a failed write leaves it untouched. Returns how many records changed.
   */
  readonly rewrite: (sessionId: string, change: RecordChange) => Effect.Effect<number, SessionRewriteError>
  /**
   * Makes this process the session's one writer for the Scope (shared by every operation of this process on it); a
   * session held by another live process is refused with SessionLocked. The first hold in a process also repairs what
   * a crash left: a torn last line, prompts and compactions without an outcome.
   */
  readonly hold: (sessionId: string) => Effect.Effect<void, SessionHoldError, Scope.Scope>
  /**
   * Lets go of the session at once once nobody in this process holds it, instead of keeping the lock a few seconds
   * for the next operation: another process takes it next (a cluster runner the session moved to). Optional.
   */
  readonly release?: ((sessionId: string) => Effect.Effect<void>) | undefined
}

export type SessionHoldError = SessionLocked | SessionLockFailed | SessionStoreError | InvalidSessionId

/** A record's replacement, or undefined to keep it. */
export type RecordChange = (record: SessionRecord) => SessionRecord | undefined

export class RecordRewriteRefused extends Schema.TaggedError<RecordRewriteRefused>()("RecordRewriteRefused", {
  sessionId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId}: rewrite refused: ${this.reason}`
  }
}

export type SessionRewriteError = SessionHoldError | RecordRewriteRefused


export class SessionStore extends Context.Tag("codex-harness/SessionStore")<SessionStore, SessionStoreService>() {}

/** Records whose loss would strand a session: written with fsync. */
export const durableTags: ReadonlySet<SessionRecord["_tag"]> = new Set(["binding", "model", "detached", "probe", "branch"])

const validId = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/
export const checkSessionId = (sessionId: string): Effect.Effect<string, InvalidSessionId> =>
  validId.test(sessionId) && !sessionId.includes("..")
    ? Effect.succeed(sessionId)
    : Effect.fail(new InvalidSessionId({ sessionId }))

export const encodeRecord = Schema.encodeSync(Schema.parseJson(SessionRecord))
const decodeRecord = Schema.decodeUnknownEither(Schema.parseJson(SessionRecord))

// every record kind; the type makes a new kind a compile error here until it is listed
const recordKinds: Record<SessionRecord["_tag"], true> = {
  user: true,
  assistant: true,
  message: true,
  reasoning: true,
  plan: true,
  media: true,
  tool: true,
  compaction: true,
  heartbeat: true,
  binding: true,
  detached: true,
  model: true,
  notice: true,
  turn: true,
  probe: true,
  branch: true,
  settled: true
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

/**
 * The one warning about a session's corrupt lines, in the one format every command uses: the file and first line
 * (`file:line:`, as compilers do), each line's reason, and the way out (`sessions repair` drops them, keeping a backup).
 */
export const corruptWarning = (file: string, sessionId: string, corrupt: ReadonlyArray<CorruptLine>): string => {
  const fix = `\`codex-harness sessions repair ${sessionId}\` removes ${corrupt.length === 1 ? "it" : "them"}, keeping a backup`
  const first = corrupt[0]!
  return corrupt.length === 1
    ? `${file}:${first.line}: skipped a corrupt record (${first.reason}); ${fix}`
    : `${file}:${first.line}: skipped ${corrupt.length} corrupt records (${corrupt.map((c) => `line ${c.line}: ${c.reason}`).join("; ")}); ${fix}`
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

/**
 * The records a rewrite may change: what was said and shown. Bindings, probes, model choices, detachments, turn
 * outcomes, settlements and compaction statuses are what the session's state is read from, and stay as written.
 */
export const rewritableTags: ReadonlySet<SessionRecord["_tag"]> = new Set([
  "user",
  "assistant",
  "message",
  "reasoning",
  "plan",
  "media",
  "tool",
  "heartbeat",
  "notice"
])

/** Session files larger than this are not rewritten (the whole file is read and written again in memory). */
export const maxRewriteBytes = 64 * 1024 * 1024

/**
 * A session file's body with `change` applied, line by line. Pure. Lines that do not decode (corrupt, or a kind this
 * version does not know) and records left unchanged are kept byte for byte; a change of a structural record or into
 * another kind is refused with its line number.
 */
export const rewriteBody = (
  body: string,
  change: RecordChange
): { readonly body: string; readonly changed: number } | { readonly refused: string } => {
  const lines = body.split("\n")
  let changed = 0
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (line.trim() === "") continue
    const decoded = decodeRecord(line)
    if (decoded._tag === "Left") continue
    const next = change(decoded.right)
    if (next === undefined) continue
    if (!rewritableTags.has(decoded.right._tag)) return { refused: `line ${i + 1} is a ${decoded.right._tag} record, which stays as written` }
    if (next._tag !== decoded.right._tag) return { refused: `line ${i + 1}: a ${decoded.right._tag} record cannot become a ${next._tag} record` }
    lines[i] = encodeRecord(next)
    changed++
  }
  return { body: lines.join("\n"), changed }
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
      checkSessionId(sessionId).pipe(Effect.map((id) => ({ records: [...(sessions.get(id) ?? [])], corrupt: [] }))),
    rewrite: (sessionId, change) =>
      checkSessionId(sessionId).pipe(
        Effect.flatMap((id) => {
          const list = sessions.get(id) ?? []
          const next = rewriteBody(list.map((r) => encodeRecord(r)).join("\n"), change)
          if ("refused" in next) return Effect.fail(new RecordRewriteRefused({ sessionId: id, reason: next.refused }))
          if (next.changed > 0) sessions.set(id, [...parseLines(next.body).records])
          return Effect.succeed(next.changed)
        })
      ),
    // one process, nothing to exclude
    hold: (sessionId) => Effect.asVoid(checkSessionId(sessionId))
  }
}

export const memoryLayer = Layer.sync(SessionStore, memoryStore)
