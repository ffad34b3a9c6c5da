// The PostgreSQL store's writes and working-set reads (issue 33), apart from its locks (PgSessionStore.ts): the batched,
// fenced appends of a held session with its copy in memory following them, the staging of a turn's records until its
// outcome is written (WorkingSets), the snapshot moved as the tail grows or ages, and the index lookup of a reference.
// Everything here runs under the session's gate (the store's per-session semaphore), as the store's own writes do.
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Duration, Effect, Schedule, type Scope } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import {
  type Companion,
  contentsOf,
  insertBatch,
  lookupIds,
  moveSnapshot,
  readWorking,
  unstaged,
  type Working,
  workingOf,
  type WorkingSetsService
} from "./PgWorkingSet.js"
import { choose, defaultSnapshotOptions, due, type SnapshotOptions } from "./SessionSnapshot.js"
import { encodeRecord, type InvalidSessionId, SessionStoreError } from "./SessionStore.js"

/** A session this process holds: its lock, why the lock is no longer ours once that is known, and its working set. */
export interface HeldSession<L> {
  /** the lock's connection: a new one once the old one died and the lock was taken again */
  lock: L
  lost: string | undefined
  /** the session's working set, as this process wrote and read it */
  work: Working
  /** the messages whose turns' records are staged (WorkingSets.stage) */
  readonly staging: Set<string>
  /** a write of what is staged is scheduled */
  flushing: boolean
}

export interface WritesDeps<L> {
  readonly sql: SqlClient.SqlClient
  readonly storeScope: Scope.Scope
  readonly stageFor: Duration.DurationInput
  /** records older than this may go behind a held session's snapshot */
  readonly retention: Duration.DurationInput | undefined
  readonly held: Map<string, HeldSession<L>>
  readonly gated: <A, E, R>(sessionId: string, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** the lock is held, right now, by this process's lock connection */
  readonly fence: (sessionId: string, lock: L) => Fragment
  readonly dead: (lock: L) => boolean
  /** the lock of a connection that died, taken again on a live one when nobody wrote the session meanwhile */
  readonly retake: (sessionId: string, entry: HeldSession<L>) => Effect.Effect<void, SessionStoreError>
  /** after a fence that failed: whether the lock's connection is dead (then the lock is taken again, else it was lost) */
  readonly confirmDead: (lock: L) => Effect.Effect<boolean>
  /** how long a held session's write is tried again while the database is unreachable */
  readonly writeRetryBound: Duration.DurationInput
  readonly lostError: (sessionId: string, why: string) => SessionStoreError
  /** the fence found the lock gone: this hold is over for good */
  readonly lose: (sessionId: string, entry: HeldSession<L>) => SessionStoreError
  readonly storeError: (sessionId: string) => (e: SqlError) => SessionStoreError
}

/** at most this many records wait in a staged turn; the next one writes them */
const maxStaged = 256

/** a turn's reply and end: what TurnLedger reads back as a turn's outcome when its runner died (mirroredEnd) */
const closesTurn: ReadonlySet<SessionRecord["_tag"]> = new Set(["assistant", "turn"])

export const makeWrites = <L>(deps: WritesDeps<L>) => {
  const { gated, held, sql, storeError } = deps
  const snapshotOptions = (): SnapshotOptions => ({
    ...defaultSnapshotOptions,
    cutoff: deps.retention === undefined ? undefined : Date.now() - Duration.toMillis(deps.retention)
  })
  // ids known to exist (nothing in the store deletes a session): a whole id seen once is never looked up again
  const known = new Map<string, true>()
  const remember = (sessionId: string) => {
    if (known.has(sessionId)) return
    if (known.size >= 100_000) known.delete(known.keys().next().value!)
    known.set(sessionId, true)
  }

  /** the records after `lastSeq`, when they are exactly `records`: a write that committed before its answer was lost */
  const committed = (sessionId: string, lastSeq: number, records: ReadonlyArray<SessionRecord>) =>
    Effect.map(
      sql<{ seq: number; record: string }>`SELECT seq, record FROM harness_records WHERE session_id = ${sessionId} AND seq > ${lastSeq}
        ORDER BY seq LIMIT ${records.length + 1}`,
      (rows) => rows.length === records.length && rows.every((row, i) => row.record === encodeRecord(records[i]!))
        ? lastSeq + records.length
        : undefined
    )

  /**
   * What is staged and `records`, in one statement fenced on the lock, with the snapshot that was due and `companion`;
   * the copy in memory follows. Returns the companion's row count. A statement that failed on the way (a restart, a
   * dropped connection) is tried again for `writeRetryBound`, after checking whether it had committed, and a lock whose
   * connection died is taken again first; a lock taken away by someone else ends the hold.
   */
  const writeHeld = (
    sessionId: string,
    entry: HeldSession<L>,
    records: ReadonlyArray<SessionRecord>,
    companion?: Companion,
    /** how many of the staged records go (the first ones): all of them unless said */
    take?: (staged: ReadonlyArray<SessionRecord>) => number
  ) => {
    let attempt = 0
    const once = Effect.gen(function* () {
      if (entry.lost !== undefined) return yield* deps.lostError(sessionId, entry.lost)
      const w = entry.work
      const taken = take === undefined ? w.staged.length : take(w.staged)
      const all = [...w.staged.slice(0, taken), ...records]
      if (all.length === 0 && companion === undefined) return 0
      if (attempt++ > 0 && all.length > 0) {
        const last = yield* committed(sessionId, w.lastSeq, all).pipe(Effect.mapError(storeError(sessionId)))
        if (last !== undefined) {
          // it did: the copy in memory is read again rather than guessed (a snapshot may have moved with it)
          w.lastSeq = last
          w.staged = w.staged.slice(taken)
          w.stale = true
          remember(sessionId)
          // the companion went with them; how many rows it changed is not known
          return -1
        }
      }
      if (deps.dead(entry.lock)) yield* deps.retake(sessionId, entry)
      const snapshot = w.stale ? undefined : w.next
      const [row] = yield* insertBatch(sql, { sessionId, records: all, fence: deps.fence(sessionId, entry.lock), snapshot, companion }).pipe(
        Effect.mapError(storeError(sessionId))
      )
      if (all.length > 0 || row?.fenced === false) {
        if (row?.last_seq === null || row?.last_seq === undefined) {
          // not held by its connection any more: the lock of a connection that died is taken again, one taken away is lost
          if (!(yield* deps.confirmDead(entry.lock))) return yield* deps.lose(sessionId, entry)
          return yield* new SessionStoreError({ path: `postgres session ${sessionId}`, reason: "its lock connection was gone; taking the lock again" })
        }
        const last = Number(row.last_seq)
        // another process wrote it without holding it: the copy is read again before it is served
        if (last !== w.lastSeq + all.length) w.stale = true
        all.forEach((record, i) => w.tail.push({ seq: last - all.length + 1 + i, record }))
        w.lastSeq = last
        w.staged = w.staged.slice(taken)
        remember(sessionId)
        if (snapshot !== undefined) {
          w.snapshotSeq = snapshot.seq
          w.keep = snapshot.keep
          w.tail = w.tail.filter((e) => e.seq > snapshot.seq)
          w.next = undefined
        }
        const options = snapshotOptions()
        if (!w.stale && w.next === undefined && due(w.tail, options)) w.next = choose(w.keep, w.tail, options)
      }
      return Number(row?.companion ?? 0)
    })
    return once.pipe(
      Effect.retry({
        schedule: Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("1 second")), Schedule.upTo(deps.writeRetryBound)),
        while: () => entry.lost === undefined
      })
    )
  }

  /**
   * What is staged, written within `stageFor` whoever else writes first, up to a turn's reply or end while a turn is
   * staged: those (and what follows them) go only with the turn's outcome (flushWith), so a runner that dies between
   * the two leaves neither, and a turn the ledger reports lost has no reply in the mirror (the chaos test found one
   * written by this timer and its outcome never). A write that failed (the database away for longer than
   * `writeRetryBound`) is scheduled again while the hold lasts, so nothing staged waits for a next append.
   */
  const flushLater = (sessionId: string, entry: HeldSession<L>): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (entry.flushing) return Effect.void
      entry.flushing = true
      return Effect.sleep(deps.stageFor).pipe(
        Effect.zipRight(gated(sessionId, Effect.suspend(() => writeHeld(sessionId, entry, [], undefined, (staged) => timedPrefix(entry, staged))))),
        Effect.ensuring(Effect.sync(() => (entry.flushing = false))),
        Effect.catchAll((e) =>
          Effect.logWarning(`session ${sessionId}: staged records not written yet: ${e.message}`).pipe(
            Effect.zipRight(Effect.suspend(() =>
              entry.lost === undefined && held.get(sessionId) === entry && entry.work.staged.length > 0 ? flushLater(sessionId, entry) : Effect.void
            ))
          )
        ),
        Effect.forkIn(deps.storeScope),
        Effect.asVoid
      )
    })

  /** the staged records the timer may write: before the first reply or turn end while a turn is staged, else all */
  const timedPrefix = (entry: HeldSession<L>, staged: ReadonlyArray<SessionRecord>) => {
    if (entry.staging.size === 0) return staged.length
    const closing = staged.findIndex((r) => closesTurn.has(r._tag))
    return closing < 0 ? staged.length : closing
  }

  /** a held session's record: staged while a turn of it is, else written now with whatever was staged */
  const appendHeld = (sessionId: string, entry: HeldSession<L>, record: SessionRecord) =>
    Effect.suspend(() => {
      if (entry.staging.size > 0 && !unstaged.has(record._tag) && entry.work.staged.length < maxStaged && entry.lost === undefined) {
        entry.work.staged.push(record)
        return flushLater(sessionId, entry)
      }
      return Effect.asVoid(writeHeld(sessionId, entry, [record]))
    })

  /** a session this process does not hold: one statement, no fence */
  const insertUnheld = (sessionId: string, records: ReadonlyArray<SessionRecord>) =>
    insertBatch(sql, { sessionId, records }).pipe(
      Effect.tap(() => remember(sessionId)),
      Effect.mapError(storeError(sessionId)),
      Effect.asVoid
    )

  /** a held session's staged records, written now (before a full read, a rewrite, a release) */
  const flushNow = (sessionId: string, entry: HeldSession<L>) =>
    entry.work.staged.length === 0 ? Effect.void : Effect.asVoid(writeHeld(sessionId, entry, []))

  /** the working set: from memory while held here (read again when someone else wrote it), else one statement */
  const recent = (sessionId: string): Effect.Effect<ReturnType<typeof contentsOf>, SessionStoreError | InvalidSessionId> =>
    gated(sessionId, Effect.suspend(() => {
      const entry = held.get(sessionId)
      if (entry === undefined || entry.lost !== undefined) {
        return Effect.map(readWorking(sql, sessionId), (rows) => contentsOf(workingOf(rows)))
      }
      if (!entry.work.stale) return Effect.succeed(contentsOf(entry.work))
      return flushNow(sessionId, entry).pipe(
        Effect.zipRight(readWorking(sql, sessionId)),
        Effect.map((rows) => contentsOf((entry.work = workingOf(rows))))
      )
    })).pipe(Effect.mapError((e) => (e._tag === "SqlError" ? storeError(sessionId)(e) : e)))

  const lookup = (ref: string, limit: number) =>
    known.has(ref)
      ? Effect.succeed({ ids: [ref], matches: 1 })
      : lookupIds(sql, ref, limit).pipe(
        Effect.map((rows) => {
          if (rows[0]?.id === ref) remember(ref)
          return { ids: rows.map((r) => r.id), matches: Number(rows[0]?.matches ?? 0) }
        }),
        Effect.mapError((e) => new SessionStoreError({ path: "postgres sessions", reason: e.message }))
      )

  const service: WorkingSetsService = {
    stage: (sessionId, key) =>
      Effect.sync(() => {
        const entry = held.get(sessionId)
        // a few messages of a session are under way at most; a key never flushed (its caller gone) goes with the hold
        if (entry !== undefined && entry.staging.size < 64) entry.staging.add(key)
      }),
    flushWith: (sessionId, key, companion) =>
      gated(sessionId, Effect.suspend(() => {
        const entry = held.get(sessionId)
        entry?.staging.delete(key)
        if (entry === undefined) return Effect.succeed(undefined)
        if (entry.lost !== undefined) {
          // another process has the session now, but this turn ran here: its records and its outcome still go together
          // (without the lock: the seqs come from the session's row, so they follow whatever the other one wrote)
          const staged = entry.work.staged
          return insertBatch(sql, { sessionId, records: staged, companion }).pipe(
            Effect.mapError(storeError(sessionId)),
            // forgotten once written: a write that failed keeps them for the caller's next try
            Effect.tap(() => Effect.sync(() => (entry.work.staged = entry.work.staged.slice(staged.length)))),
            Effect.map(([row]) => Number(row?.companion ?? 0))
          )
        }
        // a lock whose connection died (a restart) is taken again by the write: what is staged goes with the companion
        return writeHeld(sessionId, entry, [], companion)
      })),
    moveSnapshot: (sessionId, cutoff) =>
      gated(sessionId, Effect.gen(function* () {
        const entry = held.get(sessionId)
        if (entry === undefined || entry.lost !== undefined || entry.work.stale) return false
        yield* flushNow(sessionId, entry)
        const w = entry.work
        const next = choose(w.keep, w.tail, { ...snapshotOptions(), cutoff })
        if (next === undefined) return false
        yield* moveSnapshot(sql, sessionId, next).pipe(Effect.mapError(storeError(sessionId)))
        w.snapshotSeq = next.seq
        w.keep = next.keep
        w.tail = w.tail.filter((e) => e.seq > next.seq)
        w.next = undefined
        return true
      }))
  }

  return { writeHeld, appendHeld, insertUnheld, flushNow, recent, lookup, service }
}
