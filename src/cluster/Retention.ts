// Retention (issue 33): what a cluster writes for every turn is kept for a period (`serve --retention HOURS`, a day by
// default), not forever, so the tables' sizes and a turn's cost stay flat however many turns have run:
// - the turn ledger (`harness_turn_messages`): a message's row only has to outlive its redeliveries (minutes);
// - @effect/cluster's processed messages and their replies (`cluster_messages`, `cluster_replies`): ids are snowflakes,
//   whose high bits are their time, so "older than the cutoff" is an id range;
// - transcript records (`harness_records`) behind a session's snapshot (SessionSnapshot.ts): the records its state still
//   comes from (the snapshot's keep) and every record after it stay, so a session continues as it was however old it
//   is; `sessions show` then starts at the retention period. A held session's snapshot moves forward with its writes;
//   that of a session nobody holds is moved here, under the session's lock, taken and let go at once;
// - owner rows left by runners that are gone, and interactions they left waiting.
// Every runner tries a pass every `every` (a minute); one at a time runs it, the one that takes the job's advisory lock
// (the others find it taken and wait for the next minute; a runner that dies mid-pass lets the lock go with its
// connection). Not an @effect/cluster singleton: with one registered, a runner's graceful stop took the entity
// termination timeout (15 s) longer here. A pass deletes in batches (bounded statements, none holding row locks for
// long) and VACUUMs what it deleted from, so the space is reused at once (PostgreSQL's autovacuum would, later).
import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, Option, Schedule } from "effect"
import { bootstrapLockKey } from "./ClusterDatabase.js"
import { WorkingSets } from "../session/PgWorkingSet.js"
import { SessionStore } from "../session/SessionStore.js"

export const defaultRetention = Duration.hours(24)

/** the job's advisory lock: the bootstrap's key + 1 (its high word is not 0, so no shard lock can be it) */
export const retentionLockKey = (BigInt(bootstrapLockKey) + 1n).toString()

/** @effect/cluster's snowflake epoch (2025-01-01) and the shift of its timestamp bits */
const snowflakeEpoch = Date.UTC(2025, 0, 1)
/** the smallest snowflake id made at `ms` (ids below it are older) */
export const snowflakeAt = (ms: number): string => (BigInt(Math.max(0, ms - snowflakeEpoch)) << 22n).toString()

export interface RetentionOptions {
  readonly retention?: Duration.DurationInput | undefined
  /** how often a pass runs; default 1 minute */
  readonly every?: Duration.DurationInput | undefined
  /** rows per DELETE; default 5,000 */
  readonly batch?: number | undefined
}

export interface PassResult {
  readonly ledger: number
  readonly messages: number
  readonly replies: number
  readonly records: number
  readonly snapshots: number
  readonly owners: number
  readonly ms: number
}

const tables = ["harness_turn_messages", "cluster_messages", "cluster_replies", "harness_records"] as const

/** One pass: everything older than the retention period, as of now. */
export const pass = (options: RetentionOptions = {}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const store = yield* SessionStore
    const workingSets = yield* Effect.serviceOption(WorkingSets)
    const started = Date.now()
    const cutoffMs = started - Duration.toMillis(options.retention ?? defaultRetention)
    const cutoff = new Date(cutoffMs)
    const batch = options.batch ?? 5_000
    const snowflake = snowflakeAt(cutoffMs)

    /** a DELETE of at most `batch` rows, run until it deletes fewer */
    const drain = (statement: () => Effect.Effect<ReadonlyArray<{ readonly n: number }>, unknown>) =>
      Effect.gen(function* () {
        let total = 0
        while (true) {
          const n = Number((yield* statement())[0]?.n ?? 0)
          total += n
          if (n < batch) return total
        }
      })

    const ledger = yield* drain(() =>
      sql<{ n: number }>`WITH d AS (DELETE FROM harness_turn_messages WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM harness_turn_messages WHERE created_at < ${cutoff} LIMIT ${batch})) RETURNING 1) SELECT count(*)::integer AS n FROM d`
    )
    const replies = yield* drain(() =>
      sql<{ n: number }>`WITH d AS (DELETE FROM cluster_replies WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM cluster_replies WHERE id < ${snowflake}::bigint LIMIT ${batch})) RETURNING 1) SELECT count(*)::integer AS n FROM d`
    )
    const messages = yield* drain(() =>
      sql<{ n: number }>`WITH d AS (DELETE FROM cluster_messages WHERE ctid = ANY (ARRAY(
        SELECT ctid FROM cluster_messages WHERE processed AND id < ${snowflake}::bigint LIMIT ${batch})) RETURNING 1) SELECT count(*)::integer AS n FROM d`
    )

    // sessions whose tail starts past the cutoff and that nobody holds: their snapshot moved here
    let snapshots = 0
    if (Option.isSome(workingSets)) {
      const idle = yield* sql<{ id: string }>`SELECT s.id FROM harness_sessions s
        JOIN harness_records r ON r.session_id = s.id AND r.seq = s.snapshot_seq + 1
        WHERE s.last_seq > s.snapshot_seq AND r.at < ${cutoff} LIMIT 200`
      for (const { id } of idle) {
        const moved = yield* Effect.scoped(Effect.zipRight(store.hold(id), workingSets.value.moveSnapshot(id, cutoffMs))).pipe(
          // held by a runner (it moves its own), or refused: the next pass tries again
          Effect.catchAll(() => Effect.succeed(false)),
          // let go at once, not kept for the store's idle time: a runner may want it any moment
          Effect.ensuring(store.release === undefined ? Effect.void : store.release(id))
        )
        if (moved) snapshots++
      }
    }
    const records = yield* drain(() =>
      sql<{ n: number }>`WITH d AS (DELETE FROM harness_records WHERE ctid = ANY (ARRAY(
        SELECT r.ctid FROM harness_sessions s JOIN harness_records r ON r.session_id = s.id AND r.seq <= s.snapshot_seq
        WHERE r.at < ${cutoff} AND r.seq <> ALL (s.snapshot_keep) LIMIT ${batch})) RETURNING 1) SELECT count(*)::integer AS n FROM d`
    )
    const owners = yield* sql<{ n: number }>`WITH d AS (DELETE FROM harness_session_owners o WHERE o.updated_at < ${cutoff}
        AND NOT EXISTS (SELECT 1 FROM cluster_runners r WHERE r.address = o.runner) RETURNING 1) SELECT count(*)::integer AS n FROM d`.pipe(
      Effect.map((rows) => Number(rows[0]?.n ?? 0))
    )

    // the space of what went is reused at once (VACUUM runs outside a transaction: one table at a time)
    const deleted = { harness_turn_messages: ledger, cluster_messages: messages, cluster_replies: replies, harness_records: records }
    // and the sessions' rows, which every turn updates in place (a dead row version each): a pass that found turns to
    // delete found that many turns' updates there too, which autovacuum would only get to later
    const vacuumed = [...tables.filter((table) => deleted[table] > 0), ...(ledger + records > 0 ? ["harness_sessions"] : [])]
    for (const table of vacuumed) {
      yield* sql.unsafe(`VACUUM ${table}`).pipe(Effect.catchAll((e) => Effect.logDebug(`retention: VACUUM ${table}: ${e.message}`)))
    }
    return { ledger, messages, replies, records, snapshots, owners, ms: Date.now() - started } satisfies PassResult
  }).pipe(Effect.withSpan("Retention.pass"))

/** A pass, when this process takes the job's lock (another runner's pass is under way otherwise: undefined). */
export const passIfFirst = (options: RetentionOptions = {}) =>
  Effect.scoped(Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const conn = yield* sql.reserve
    const [row] = yield* conn.execute(`SELECT pg_try_advisory_lock(${retentionLockKey}) AS locked`, [], undefined)
    if ((row as { locked?: boolean } | undefined)?.locked !== true) return undefined
    // let go before the connection goes back to the pool (finalizers run in reverse)
    yield* Effect.addFinalizer(() => Effect.ignore(conn.execute(`SELECT pg_advisory_unlock(${retentionLockKey})`, [], undefined)))
    return yield* pass(options)
  }))

/** The retention job of a runner, until its scope closes; a failed pass is logged and the next one tried. */
export const run = (options: RetentionOptions = {}) =>
  passIfFirst(options).pipe(
    Effect.tap((r) =>
      r !== undefined && r.ledger + r.messages + r.replies + r.records + r.owners > 0
        ? Effect.logInfo(`retention: deleted ${r.ledger} ledger rows, ${r.messages} cluster messages, ${r.replies} replies, ` +
          `${r.records} records (${r.snapshots} snapshots moved), ${r.owners} owner rows in ${r.ms} ms`)
        : Effect.void
    ),
    Effect.catchAllCause((cause) => Effect.logWarning("retention: a pass failed; the next one tries again", cause)),
    Effect.repeat(Schedule.spaced(options.every ?? Duration.minutes(1)))
  )
