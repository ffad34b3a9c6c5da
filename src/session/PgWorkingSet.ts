// The statements of the PostgreSQL store that keep a turn's database work bounded (issue 33), and the in-memory working
// set of a session this process holds:
// - a session's working set (its snapshot's keep and its tail, SessionSnapshot.ts) is read in one statement, when the
//   session is taken (a session that moved to this runner), never the whole transcript; while this process holds the
//   session it is the only writer, so its reads are served from memory and its appends keep the copy current;
// - appends go in batches: one statement inserts any number of records with their seqs, moves the snapshot when one is
//   due, and may carry one more statement of the caller's as a CTE (the cluster's turn ledger records a turn's outcome
//   in the statement that writes the turn's closing records, SessionStaging);
// - a session reference is resolved by an index lookup (a whole id, or the ids a prefix starts, in byte order), and an id
//   seen once is known for good (nothing in the store deletes a session).
import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment, Statement } from "@effect/sql/Statement"
import { Context, type Effect } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import type { Entry, Snapshot } from "./SessionSnapshot.js"
import { encodeRecord, parseLines, type SessionContents, type SessionStoreError } from "./SessionStore.js"

/** A held session's records as this process knows them: the snapshot's keep, then the tail, and what waits to be written. */
export interface Working {
  lastSeq: number
  snapshotSeq: number
  keep: ReadonlyArray<Entry>
  tail: Array<Entry>
  /** records appended while a turn's records are staged, not written yet (their seqs are lastSeq + 1, ...) */
  staged: Array<SessionRecord>
  /** a snapshot chosen after an earlier write, to be written with the next one */
  next: Snapshot | undefined
  /** someone else wrote the session (a seq came back other than expected): read it again before serving it */
  stale: boolean
  corrupt: SessionContents["corrupt"]
}

/** the records of a working set (staged ones included: they are what this process appended) */
export const contentsOf = (w: Working): SessionContents => ({
  records: [...w.keep.map((e) => e.record), ...w.tail.map((e) => e.record), ...w.staged],
  corrupt: w.corrupt
})

interface WorkingRow {
  readonly seq: number | null
  readonly record: string | null
  readonly last_seq: number
  readonly snapshot_seq: number
  readonly snapshot_keep: ReadonlyArray<number>
}

/** the working set of a session from the database, in one statement (an unknown session: empty) */
export const readWorking = (sql: SqlClient.SqlClient, sessionId: string) =>
  sql<WorkingRow>`WITH s AS (SELECT last_seq, snapshot_seq, snapshot_keep FROM harness_sessions WHERE id = ${sessionId})
    SELECT r.seq, r.record, s.last_seq, s.snapshot_seq, s.snapshot_keep FROM s
    LEFT JOIN harness_records r ON r.session_id = ${sessionId} AND (r.seq > s.snapshot_seq OR r.seq = ANY (s.snapshot_keep))
    ORDER BY r.seq`

export const workingOf = (rows: ReadonlyArray<WorkingRow>): Working => {
  const first = rows[0]
  const keep: Array<Entry> = []
  const tail: Array<Entry> = []
  const corrupt: Array<SessionContents["corrupt"][number]> = []
  const snapshotSeq = Number(first?.snapshot_seq ?? 0)
  for (const row of rows) {
    if (row.seq === null || row.record === null) continue
    const seq = Number(row.seq)
    const parsed = parseLines(row.record)
    if (parsed.records.length !== 1 || parsed.corrupt.length > 0) {
      corrupt.push({ line: seq, reason: parsed.corrupt[0]?.reason ?? "not one session record" })
      continue
    }
    ;(seq > snapshotSeq ? tail : keep).push({ seq, record: parsed.records[0]! })
  }
  return { lastSeq: Number(first?.last_seq ?? 0), snapshotSeq, keep, tail, staged: [], next: undefined, stale: false, corrupt }
}

export interface Batch {
  readonly sessionId: string
  readonly records: ReadonlyArray<SessionRecord>
  /** the fence (the session's lock still held by this process's lock connection), when it is held */
  readonly fence?: Fragment | undefined
  /** a snapshot to move to in the same statement */
  readonly snapshot?: Snapshot | undefined
  /**
   * One more statement run as a CTE of this one (an UPDATE ... RETURNING, say); its rows are counted. It is given the
   * fence as `guard` to put in its WHERE: a data-modifying CTE runs whatever the rest of the statement does, so without
   * it a write the fence refused still ran its companion (an outcome recorded without the records it goes with).
   */
  readonly companion?: Companion | undefined
}

/** a statement to run with a batch, given the condition (the fence, or TRUE) it must hold under */
export type Companion = (guard: Fragment) => Statement<object>

/**
 * One statement: the records with the session's next seqs (handed out by its row, so concurrent writers anywhere get
 * distinct gap-free numbers), the snapshot moved, the companion run. Returns the last seq written (undefined: the fence
 * held no more, nothing was written) and the companion's row count.
 */
export const insertBatch = (sql: SqlClient.SqlClient, batch: Batch) => {
  const { records, sessionId } = batch
  const n = records.length
  const guard = batch.fence ?? sql.literal("TRUE")
  const companion = batch.companion === undefined ? sql.literal("") : sql`, companion AS (${batch.companion(guard)})`
  const counted = sql.literal(batch.companion === undefined ? "0" : "(SELECT count(*) FROM companion)::integer")
  if (n === 0) {
    // no records to tell whether the fence held: said in `fenced`
    return sql<{ last_seq: number | null; companion: number; fenced: boolean }>`WITH nothing AS (SELECT 1)${companion}
      SELECT NULL::integer AS last_seq, ${counted} AS companion, ${guard} AS fenced`
  }
  const snapshot = batch.snapshot === undefined
    ? sql.literal("")
    : sql`, snapshot_seq = ${batch.snapshot.seq}::integer, snapshot_keep = ${batch.snapshot.keep.map((e) => e.seq)}::integer[]`
  return sql<{ last_seq: number | null; companion: number; fenced?: boolean }>`WITH next AS (
      INSERT INTO harness_sessions AS s (id, last_seq) SELECT ${sessionId}, ${n}::integer
        ${batch.fence === undefined ? sql.literal("") : sql`WHERE ${batch.fence}`}
      ON CONFLICT (id) DO UPDATE SET last_seq = s.last_seq + ${n}::integer, updated_at = now()${snapshot} RETURNING last_seq
    ), rows AS (
      INSERT INTO harness_records (session_id, seq, tag, record)
      SELECT ${sessionId}, next.last_seq - ${n}::integer + r.n::integer, r.tag, r.record
      FROM next, unnest(${records.map((r) => r._tag)}::text[], ${records.map((r) => encodeRecord(r))}::text[]) WITH ORDINALITY AS r(tag, record, n)
      RETURNING seq
    )${companion} SELECT (SELECT max(seq) FROM rows) AS last_seq, ${counted} AS companion`
}

/** the snapshot moved without an append (the retention job, for a session nobody holds) */
export const moveSnapshot = (sql: SqlClient.SqlClient, sessionId: string, snapshot: Snapshot) =>
  sql`UPDATE harness_sessions SET snapshot_seq = ${snapshot.seq}, snapshot_keep = ${snapshot.keep.map((e) => e.seq)}::integer[]
    WHERE id = ${sessionId} AND snapshot_seq < ${snapshot.seq}`

/** the ids a reference names: the id itself, or those it is a prefix of (byte order: ids are ASCII), most recent first */
export const lookupIds = (sql: SqlClient.SqlClient, ref: string, limit: number) =>
  sql<{ id: string; matches: number }>`SELECT id, count(*) OVER ()::integer AS matches FROM harness_sessions
    WHERE id COLLATE "C" >= ${ref} AND id COLLATE "C" < ${`${ref}\u007f`} ORDER BY (id = ${ref}) DESC, updated_at DESC, id LIMIT ${limit}`

/**
 * The working sets of the sessions this process holds, for the layers above the store. A turn's records are written
 * with its outcome: while a session's turn is staged (`stage`), the records it appends that need not be stored before
 * anything else happens (its replies, tool calls, reasoning and its end; never a prompt, a binding or a model choice)
 * wait in memory, and are written in one statement with the next record that must be, with the statement `flushWith`
 * is given (the cluster ledger's outcome), or after `PgStoreOptions.stageFor` (1 s) at the latest.
 */
export interface WorkingSetsService {
  /** the turn that carries message `key` of the session started: stage its records until `flushWith(key)` */
  readonly stage: (sessionId: string, key: string) => Effect.Effect<void>
  /**
   * The staged records and `companion` in one statement, and `key` no longer staged. A hold this process lost (another
   * process has the session) still writes them together, without the lock: the turn ran here. Returns the companion's
   * row count (-1: not known, the statement had committed before its answer was lost); `undefined`: the session is not
   * held here, nothing was run (the caller runs its statement itself, with the guard TRUE).
   */
  readonly flushWith: (sessionId: string, key: string, companion: Companion) => Effect.Effect<number | undefined, SessionStoreError>
  /**
   * Moves the snapshot of a session held here past the records older than `cutoff` (ms since the epoch) where it can
   * (the retention job, for a session nobody else holds); whether it moved.
   */
  readonly moveSnapshot: (sessionId: string, cutoff: number) => Effect.Effect<boolean, SessionStoreError>
}

export class WorkingSets extends Context.Tag("codex-harness/session/WorkingSets")<WorkingSets, WorkingSetsService>() {}

/** records that are written at once even while a turn is staged: what the next step relies on being stored */
export const unstaged: ReadonlySet<SessionRecord["_tag"]> = new Set(["user", "settled", "binding", "model", "detached", "probe", "branch"])
