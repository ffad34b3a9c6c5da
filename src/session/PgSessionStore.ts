// The session store in PostgreSQL (through @effect/sql), for several processes on several machines sharing sessions:
// the same contract as the file store (FileSessionStore), its schema in pgMigrations (run here at start-up).
//
// Appends: one INSERT per record, its `seq` handed out by the session row in the same statement (so it is its own
// transaction, and concurrent appends from anywhere get distinct, gap-free numbers in commit order); within a process a
// session's appends also pass one gate in call order. A committed INSERT is durable, so `durableTags` need nothing
// more; an INSERT that fails fails the append. A rewrite (a redaction) is one transaction: checked in full before its
// first UPDATE (RecordRewriteRefused leaves everything as it was), rolled back whole when anything fails.
//
// One writer per session across processes: `hold` takes a PostgreSQL session-level advisory lock in the two-int form
// (lockNamespace, hashtext(id)), which cannot meet @effect/cluster's shard locks (single bigint keys 1000001-1000300).
// Every lock of a process is held by one connection reserved from the pool for the purpose (as the cluster holds its
// shard locks), not one per session: a runner with dozens of sessions would otherwise exhaust its pool. Holds are
// refcounted per session in the process (RcMap), kept a little after the last lets go, as the file store does, and
// the first hold settles what a crash left open (prompts and compactions without an outcome; there is no torn line).
// When the connection holding a lock dies (its process killed with kill -9, its machine gone, or the backend
// terminated), PostgreSQL itself releases the lock at once: that is what makes failover after a kill safe, with no
// lock file or expiry to wait out. A holder that is still alive learns of it at its next write: a held session's
// INSERT is fenced on the lock still being held by that connection (pg_locks), so a writer that lost its lock fails
// instead of interleaving with the new holder, and its next hold takes the lock again (or is refused).
//
// What a turn costs the database (issue 33, PgWorkingSet.ts): a session is taken with one read of its working set (its
// snapshot's keep and tail, SessionSnapshot.ts), which this process then keeps in memory while it holds the session;
// appends go in batches of one statement, and while a turn is staged (WorkingSets) its closing records wait to be
// written with the turn's outcome. A session reference is an index lookup.
//
// A connection that dies with nobody else involved (a PostgreSQL restart, which drops every connection) does not end a
// hold: the lock is taken again on a new connection, and kept only if the session's last seq is still the one this
// process last wrote or read (nobody wrote in between); the lock connection is pinged every few seconds, so that happens
// within seconds of a restart rather than at the next write, and a write that failed on a dropped connection is tried
// again (bounded) after checking whether it had committed (PgSessionWrites.ts). A stall only delays writes.
import * as PgClient from "@effect/sql-pg/PgClient"
import type { MigrationError } from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import type { Statement } from "@effect/sql/Statement"
import { Context, Duration, Effect, ExecutionStrategy, Exit, Layer, RcMap, Redacted, Schedule, Scope } from "effect"
import * as os from "node:os"
import type { SessionRecord } from "../../schemas/session.js"
import { settlements } from "./JournalRepair.js"
import { migrate } from "./pgMigrations.js"
import { type HeldSession, makeWrites } from "./PgSessionWrites.js"
import { contentsOf, readWorking, WorkingSets, type WorkingSetsService, workingOf } from "./PgWorkingSet.js"
import {
  checkSessionId, type CorruptLine, encodeRecord, maxRewriteBytes, parseLines, type RecordChange, RecordRewriteRefused, rewritableTags,
  SessionLocked, SessionLockFailed, SessionStore, SessionStoreError, type SessionStoreService
} from "./SessionStore.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** the first key of every session lock (the second is hashtext of the session id; a collision only refuses a hold) */
export const lockNamespace = 4242

/** how long a session stays held after its last operation in this process ended (as FileSessionStore's) */
export const heldIdleTimeToLive = Duration.seconds(5)

/** how long a staged turn's records wait at most before they are written anyway */
export const stageFor = Duration.seconds(1)

/** how often the lock connection is pinged (it must never sit idle as long as a server's idle_session_timeout) */
export const lockPingInterval = Duration.seconds(3)

/** how long a held session's write is tried again while the database is unreachable (a restart, a short outage) */
export const writeRetryBound = Duration.seconds(10)

export interface PgStoreOptions {
  readonly heldIdleTimeToLive?: Duration.DurationInput
  readonly lockPingInterval?: Duration.DurationInput
  readonly writeRetryBound?: Duration.DurationInput
  readonly stageFor?: Duration.DurationInput
  /** records older than this may go behind a held session's snapshot (the retention period; none: only its length) */
  readonly retention?: Duration.DurationInput | undefined
}

const describe = (e: SqlError): string => {
  const cause = e.cause
  const inner = cause instanceof AggregateError
    ? cause.errors.map((x: unknown) => (x instanceof Error ? x.message : String(x))).join("; ")
    : cause instanceof Error ? cause.message : ""
  return inner === "" ? e.message : `${e.message}: ${inner}`
}

const commandName = () => process.argv[2] !== undefined && !process.argv[2].startsWith("-") ? process.argv[2] : "an embedder"
/** the lock connection's application_name, which a refused process reads back (63 bytes at most) */
const ownerName = () => `codex-harness:${process.pid}:${Math.floor(Date.now() / 1000)}:${commandName()}@${os.hostname()}`.slice(0, 63)
const holderOf = (name: string | null, started: Date | null) => {
  const m = /^codex-harness:(\d+):(\d+):(.*)$/.exec(name ?? "")
  return m !== null
    ? { pid: Number(m[1]), command: m[3]!, since: new Date(Number(m[2]) * 1000).toISOString() }
    : { pid: 0, command: name !== null && name !== "" ? name : "another runner", since: started?.toISOString() ?? "an unknown time" }
}

/** The connection holding this process's session locks (its backend's pid and name), and whether it died. */
interface LockConnection {
  readonly conn: Connection
  readonly backendPid: number
  readonly name: string
  readonly scope: Scope.CloseableScope
  dead: boolean
}
type Held = HeldSession<LockConnection>
interface Row {
  readonly seq: number
  readonly record: string
}

export const pgStore = (
  options: PgStoreOptions = {}
): Effect.Effect<SessionStoreService & { readonly workingSets: WorkingSetsService }, SqlError | MigrationError, SqlClient.SqlClient | Scope.Scope> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* migrate
    const storeScope = yield* Effect.scope
    const ns = sql.literal(String(lockNamespace))
    const locate = (sessionId: string) => `postgres session ${sessionId}`
    const storeError = (sessionId: string) => (e: SqlError) => new SessionStoreError({ path: locate(sessionId), reason: describe(e) })
    const lostError = (sessionId: string, why: string) =>
      new SessionStoreError({ path: locate(sessionId), reason: `this process no longer holds the session (${why}); nothing was written` })
    /** the fence found the lock gone: this hold is over for good */
    const lose = (sessionId: string, entry: Held) =>
      lostError(sessionId, (entry.lost = "its lock was released by the database: the connection that held it closed"))

    /** a statement run on a reserved connection rather than the pool */
    const on = <A extends object>(conn: Connection, statement: Statement<A>) =>
      Effect.suspend(() => {
        const [text, params] = statement.compile()
        return conn.execute(text, params, undefined) as Effect.Effect<ReadonlyArray<A>, SqlError>
      })

    // ---- the lock connection: reserved on first use, replaced when it dies, used by one operation at a time
    let current: LockConnection | undefined
    const lockGate = yield* Effect.makeSemaphore(1)
    const connect = Effect.gen(function* () {
      const scope = yield* Scope.fork(storeScope, ExecutionStrategy.sequential)
      return yield* Effect.gen(function* () {
        const conn = yield* sql.reserve.pipe(Scope.extend(scope))
        const name = ownerName()
        const [row] = yield* on(conn, sql<{ pid: number }>`SELECT pg_backend_pid() AS pid, set_config('application_name', ${name}, false)`)
        return { conn, backendPid: row!.pid, name, scope, dead: false } satisfies LockConnection
      }).pipe(Effect.tapErrorCause(() => Scope.close(scope, Exit.void)))
    })
    // After a failure on it: is the connection still there? If not, it is let go, and with it every lock it held. One
    // that only stopped answering is terminated first (found by its name, never by a pid alone, which PostgreSQL may
    // have given to another backend since), so it cannot go back to the pool still holding locks.
    const check = (lc: LockConnection) =>
      on(lc.conn, sql`SELECT 1`).pipe(
        Effect.timeout(Duration.seconds(2)),
        Effect.catchAll(() =>
          Effect.suspend(() => {
            lc.dead = true
            if (current === lc) current = undefined
            return sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ${lc.backendPid} AND application_name = ${lc.name}`.pipe(
              Effect.timeout(Duration.seconds(2)),
              Effect.ignore,
              Effect.zipRight(Scope.close(lc.scope, Exit.void))
            )
          })
        )
      )
    /** `f` on the lock connection; once more on a new connection if the one it ran on turned out dead */
    const onLockConnection = <A>(f: (lc: LockConnection) => Effect.Effect<A, SqlError>) =>
      lockGate.withPermits(1)(
        Effect.suspend(() => current !== undefined ? Effect.succeed(current) : Effect.tap(connect, (lc) => (current = lc))).pipe(
          Effect.flatMap((lc) => f(lc).pipe(Effect.tapError(() => check(lc)))),
          Effect.retry({ times: 1, while: () => current === undefined })
        )
      )
    const unlock = (lc: LockConnection, sessionId: string) =>
      lockGate.withPermits(1)(
        lc.dead ? Effect.void : on(lc.conn, sql<{ unlocked: boolean }>`SELECT pg_advisory_unlock(${ns}, hashtext(${sessionId})) AS unlocked`).pipe(
          Effect.flatMap(([row]) => row?.unlocked === true ? Effect.void : HarnessLog.warning(`session ${sessionId}: its lock was already gone when released`)),
          Effect.catchAll(() => check(lc))
        )
      )
    /** the lock is held, right now, by this connection */
    const fence = (sessionId: string, lc: LockConnection) =>
      sql`EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = ${ns} AND objid = hashtext(${sessionId})::oid
        AND objsubid = 2 AND pid = ${lc.backendPid} AND granted)`

    const refused = (sessionId: string) =>
      sql<{ application_name: string | null; backend_start: Date | null }>`SELECT a.application_name, a.backend_start
        FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.classid = ${ns}
        AND l.objid = hashtext(${sessionId})::oid AND l.objsubid = 2 AND l.granted LIMIT 1`.pipe(
        Effect.map(([row]) => holderOf(row?.application_name ?? null, row?.backend_start ?? null)),
        Effect.orElseSucceed(() => holderOf(null, null)),
        Effect.flatMap((holder) => new SessionLocked({ sessionId, ...holder }))
      )

    // ---- records
    const readRows = (sessionId: string) =>
      Effect.map(sql<Row>`SELECT seq, record FROM harness_records WHERE session_id = ${sessionId} ORDER BY seq`, (rows) => {
        const records: Array<SessionRecord> = []
        const corrupt: Array<CorruptLine> = []
        for (const row of rows) {
          const parsed = parseLines(row.record)
          if (parsed.records.length === 1 && parsed.corrupt.length === 0) records.push(parsed.records[0]!)
          else corrupt.push({ line: row.seq, reason: parsed.corrupt[0]?.reason ?? "not one session record" })
        }
        return { records, corrupt }
      })
    const lastSeqOf = (sessionId: string) =>
      Effect.map(sql<{ last_seq: number }>`SELECT last_seq FROM harness_sessions WHERE id = ${sessionId}`, ([row]) => Number(row?.last_seq ?? 0))
    /**
     * The lock's connection died (not taken by anyone we know of): the lock again, on the current lock connection, kept
     * only if nobody wrote the session meanwhile. Under the session's gate (callers hold it).
     */
    const retake = (sessionId: string, entry: Held) =>
      Effect.gen(function* () {
        if (entry.lost !== undefined) return yield* lostError(sessionId, entry.lost)
        // taken again already, by a caller that had the gate first (the ping and a write, or two holds, each saw the
        // dead connection before taking the gate): nothing to do. Going on found the lock on the live connection and
        // took that for a lock taken away, and the hold was lost with the turn's staged records (seen in the chaos test)
        if (!entry.lock.dead) return
        const [lc, locked] = yield* onLockConnection((lc) =>
          lc === entry.lock
            // the lock is on this live connection already: a missing lock here was taken away, not dropped
            ? Effect.succeed([lc, false] as const)
            : Effect.map(on(lc.conn, sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${ns}, hashtext(${sessionId})) AS locked`), ([row]) =>
              [lc, row?.locked === true] as const)
        )
        if (!locked) return yield* lostError(sessionId, (entry.lost = "another process took its lock while this one's database connection was gone"))
        const now = yield* lastSeqOf(sessionId)
        if (now !== entry.work.lastSeq) {
          yield* unlock(lc, sessionId)
          return yield* lostError(sessionId, (entry.lost = `another process wrote it (seq ${now}, this process last knew ${entry.work.lastSeq}) while this one's database connection was gone`))
        }
        entry.lock = lc
        yield* Effect.logInfo(`session ${sessionId}: its lock was taken again on a new database connection (nobody wrote it meanwhile)`)
      }).pipe(Effect.mapError((e) => (e._tag === "SqlError" ? storeError(sessionId)(e) : e)))

    // ---- holds, refcounted per session; a key carries a generation, so a hold after a lost lock or a refusal takes
    // the session afresh instead of finding the old outcome cached
    const held = new Map<string, Held>()
    const generations = new Map<string, number>()
    const keyOf = (sessionId: string) => `${generations.get(sessionId) ?? 0} ${sessionId}`
    const bump = (key: string) =>
      Effect.sync(() => {
        const sessionId = key.slice(key.indexOf(" ") + 1)
        if (keyOf(sessionId) === key) generations.set(sessionId, (generations.get(sessionId) ?? 0) + 1)
      })
    const gates = yield* RcMap.make({ lookup: (_: string) => Effect.makeSemaphore(1) })
    /** a session's writes in this process, one at a time in call order */
    const gated = <A, E, R>(sessionId: string, effect: Effect.Effect<A, E, R>) =>
      Effect.scoped(Effect.flatMap(RcMap.get(gates, sessionId), (gate) => gate.withPermits(1)(effect)))

    const writes = makeWrites<LockConnection>({
      sql,
      storeScope,
      stageFor: options.stageFor ?? stageFor,
      retention: options.retention,
      held,
      gated: (sessionId, effect) => gated(sessionId, effect),
      fence,
      dead: (lc) => lc.dead,
      retake,
      // after a fence that failed: a lock connection that turned out dead is taken again, a live one lost the lock
      confirmDead: (lc) => Effect.map(lockGate.withPermits(1)(check(lc)), () => lc.dead),
      writeRetryBound: options.writeRetryBound ?? writeRetryBound,
      lostError,
      lose: (sessionId, entry) => lose(sessionId, entry),
      storeError
    })
    const { appendHeld, insertUnheld, writeHeld } = writes

    const locks = yield* RcMap.make({
      idleTimeToLive: options.heldIdleTimeToLive ?? heldIdleTimeToLive,
      lookup: (key: string) =>
        Effect.gen(function* () {
          const sessionId = key.slice(key.indexOf(" ") + 1)
          // released on whichever connection holds it by then (a retake moves it)
          let holder: Held | undefined
          const [lock, locked] = yield* Effect.acquireRelease(
            onLockConnection((lc) =>
              Effect.map(on(lc.conn, sql<{ locked: boolean }>`SELECT pg_try_advisory_lock(${ns}, hashtext(${sessionId})) AS locked`), ([row]) =>
                [lc, row?.locked === true] as const)
            ).pipe(Effect.mapError((e) => new SessionLockFailed({ path: locate(sessionId), reason: describe(e) }))),
            ([lc, locked]) => (locked ? Effect.suspend(() => unlock(holder?.lock ?? lc, sessionId)) : Effect.void)
          )
          if (!locked) return yield* refused(sessionId)
          // the session's working set, read once: from here this process is its one writer and serves it from memory
          const work = workingOf(yield* readWorking(sql, sessionId).pipe(Effect.mapError(storeError(sessionId))))
          const entry: Held = (holder = { lock, lost: undefined, work, staging: new Set(), flushing: false })
          held.set(sessionId, entry)
          yield* Effect.addFinalizer(() => Effect.sync(() => held.get(sessionId) === entry && held.delete(sessionId)))
          // what is staged is written before the lock goes (this runs before the unlock registered above)
          yield* Effect.addFinalizer(() =>
            gated(sessionId, Effect.suspend(() => writes.flushNow(sessionId, entry))).pipe(
              Effect.catchAll((e) => Effect.logWarning(`session ${sessionId}: staged records lost as it was let go: ${e.message}`))
            )
          )
          const settle = settlements(contentsOf(work).records, new Date().toISOString())
          if (settle.length > 0) yield* gated(sessionId, writeHeld(sessionId, entry, settle))
          return entry
        })
    })
    // the lock connection, pinged: never idle long enough for the server to drop it, and a dead one (a restart) is
    // found within seconds, when every session held on it is taken again
    const ping = Effect.gen(function* () {
      const lc = current
      if (lc === undefined) return
      const alive = yield* lockGate.withPermits(1)(on(lc.conn, sql`SELECT 1`)).pipe(
        Effect.timeout(Duration.sum(options.writeRetryBound ?? writeRetryBound, Duration.seconds(2))),
        Effect.as(true),
        Effect.catchAll(() => Effect.as(check(lc), false))
      )
      if (alive) return
      for (const [sessionId, entry] of held) {
        if (entry.lock !== lc || entry.lost !== undefined) continue
        yield* gated(sessionId, retake(sessionId, entry)).pipe(
          Effect.catchAll((e) => Effect.logWarning(`session ${sessionId}: its lock could not be taken again yet: ${e.reason}`))
        )
      }
    })
    yield* ping.pipe(Effect.repeat(Schedule.spaced(options.lockPingInterval ?? lockPingInterval)), Effect.forkIn(storeScope))
    const take = (sessionId: string) =>
      Effect.gen(function* () {
        for (let attempt = 0; attempt < 2; attempt++) {
          const key = keyOf(sessionId)
          const entry = yield* RcMap.get(locks, key).pipe(Effect.tapError(() => bump(key)))
          // a lock whose connection died is taken again when nobody wrote the session meanwhile
          if (entry.lost === undefined && entry.lock.dead) yield* Effect.ignore(gated(sessionId, retake(sessionId, entry)))
          if (entry.lost === undefined && !entry.lock.dead) return entry
          yield* bump(key)
        }
        return yield* new SessionLockFailed({ path: locate(sessionId), reason: "the lock was lost again as soon as it was taken" })
      })

    const rewrite = (sessionId: string, change: RecordChange) =>
      Effect.scoped(
        Effect.gen(function* () {
          const entry = yield* take(sessionId)
          return yield* gated(
            sessionId,
            // what is staged first; the copy in memory is read again after
            Effect.zipRight(writes.flushNow(sessionId, entry), sql.withTransaction(Effect.gen(function* () {
              const rows = yield* sql<Row>`SELECT seq, record FROM harness_records WHERE session_id = ${sessionId} ORDER BY seq FOR UPDATE`
              if (rows.reduce((n, r) => n + r.record.length, 0) > maxRewriteBytes) {
                return yield* new SessionStoreError({ path: locate(sessionId), reason: `it is larger than ${maxRewriteBytes / 1024 / 1024} MiB, too large to rewrite` })
              }
              // every change checked before the first UPDATE, by the file store's rules (a record's line is its seq)
              const updates: Array<{ readonly seq: number; readonly tag: string; readonly text: string }> = []
              for (const row of rows) {
                const parsed = parseLines(row.record)
                if (parsed.records.length !== 1 || parsed.corrupt.length > 0) continue
                const before = parsed.records[0]!
                const next = change(before)
                if (next === undefined) continue
                if (!rewritableTags.has(before._tag)) {
                  return yield* new RecordRewriteRefused({ sessionId, reason: `line ${row.seq} is a ${before._tag} record, which stays as written` })
                }
                if (next._tag !== before._tag) {
                  return yield* new RecordRewriteRefused({ sessionId, reason: `line ${row.seq}: a ${before._tag} record cannot become a ${next._tag} record` })
                }
                updates.push({ seq: row.seq, tag: next._tag, text: encodeRecord(next) })
              }
              if (updates.length === 0) return 0
              const [still] = yield* sql<{ held: boolean }>`SELECT ${fence(sessionId, entry.lock)} AS held`
              if (still?.held !== true) return yield* lose(sessionId, entry)
              for (const u of updates) {
                yield* sql`UPDATE harness_records SET tag = ${u.tag}, record = ${u.text} WHERE session_id = ${sessionId} AND seq = ${u.seq}`
              }
              yield* sql`UPDATE harness_sessions SET updated_at = now() WHERE id = ${sessionId}`
              entry.work.stale = true
              return updates.length
            })))
          )
        })
      ).pipe(Effect.mapError((e) => (e._tag === "SqlError" ? storeError(sessionId)(e) : e)))

    return {
      locate,
      workingSets: writes.service,
      rewrite: (sessionId, change) => checkSessionId(sessionId).pipe(Effect.flatMap((id) => rewrite(id, change))),
      hold: (sessionId) => checkSessionId(sessionId).pipe(Effect.flatMap(take), Effect.asVoid),
      release: (sessionId) => RcMap.invalidate(locks, keyOf(sessionId)),
      // a session this process holds is written fenced on its lock; any other without one (the file store does the same)
      append: (sessionId, record) =>
        checkSessionId(sessionId).pipe(Effect.flatMap((id) =>
          gated(id, Effect.suspend(() => {
            const entry = held.get(id)
            return entry !== undefined ? appendHeld(id, entry, record) : insertUnheld(id, [record])
          }))
        )),
      // every record (what a staged turn holds back is written first, so it is in the answer)
      read: (sessionId) =>
        checkSessionId(sessionId).pipe(Effect.flatMap((id) =>
          gated(id, Effect.suspend(() => {
            const entry = held.get(id)
            return entry !== undefined ? writes.flushNow(id, entry) : Effect.void
          })).pipe(Effect.zipRight(Effect.mapError(readRows(id), storeError(id))))
        )),
      readRecent: (sessionId) => checkSessionId(sessionId).pipe(Effect.flatMap(writes.recent)),
      lookup: writes.lookup,
      list: sql<{ id: string; updated_at: Date }>`SELECT id, updated_at FROM harness_sessions ORDER BY updated_at DESC, id`.pipe(
        Effect.map((rows) => rows.map((r) => ({ sessionId: r.id, updatedAt: r.updated_at }))),
        Effect.mapError((e) => new SessionStoreError({ path: "postgres sessions", reason: describe(e) }))
      )
    } satisfies SessionStoreService & { readonly workingSets: WorkingSetsService }
  })

/**
 * The SqlClient (a pool) for a postgres:// URL, to share between this store and the cluster's storage. The URL is kept
 * Redacted; errors name the server's address at most, never the password.
 */
export const pgClientLayer = (url: string, options: { readonly maxConnections?: number } = {}) =>
  PgClient.layer({
    url: Redacted.make(url),
    applicationName: "codex-harness",
    connectTimeout: Duration.seconds(10),
    ...(options.maxConnections !== undefined ? { maxConnections: options.maxConnections } : {})
  })

/** The store over a SqlClient the caller provides; migrations run as the layer is built. */
export const pgStoreLayer = (
  options: PgStoreOptions = {}
): Layer.Layer<SessionStore | WorkingSets, SqlError | MigrationError, SqlClient.SqlClient> =>
  Layer.scopedContext(Effect.map(pgStore(options), (store) => Context.make(SessionStore, store).pipe(Context.add(WorkingSets, store.workingSets))))

export const pgLayer = (url: string, options: PgStoreOptions = {}): Layer.Layer<SessionStore | WorkingSets, SqlError | MigrationError> =>
  pgStoreLayer(options).pipe(Layer.provide(pgClientLayer(url)))
