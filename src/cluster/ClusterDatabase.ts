// The cluster's PostgreSQL, as every process of a cluster sees it: one PgClient per process whose `application_name` names
// the runner (so `cluster status` can tell whose shard locks are whose in pg_locks), the one-time bootstrap of the tables,
// and the small table of which runner hosts which session.
//
// Why a bootstrap under a lock: @effect/cluster creates its tables (cluster_runners, cluster_messages, cluster_replies,
// cluster_migrations) when its storage layers are built, and two runners starting together on an empty database race on
// that (`duplicate key value violates unique constraint "pg_class_relname_nsp_index"`, CLUSTER-NOTES trap 9). Every
// process therefore creates them once under a PostgreSQL session advisory lock before its cluster layers start; the
// second process to get the lock finds everything there. The lock key is a 64-bit key whose high word is not 0, so it
// can never be one of the cluster's shard locks (1_000_000 * (group + 1) + shard, high word 0).
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import { Data, Duration, Effect, Layer, Redacted, type Scope } from "effect"

/** "code" << 32 | "hars": the bootstrap's advisory lock, outside every cluster shard lock (their high word is 0) */
export const bootstrapLockKey = "7165055918875439731"

/**
 * What every process of a cluster must agree on (CLUSTER-NOTES trap 4): shards per group, and the timings.
 *
 * The lock refresh is also the bound of each refresh (@effect/cluster 0.60.2 waits min(refresh, expiry / 3) for it, then
 * drops every shard the runner holds, stopping its entities): with a 1 s refresh, one slow statement on a loaded machine
 * dropped all of a runner's shards (seen in this suite under two busy loops, and a 1.5 s stall interrupted turns). So
 * 3 s and an expiry of 12 s. The expiry no longer sets the failover time: a dead runner is marked unhealthy as soon as
 * its connection is gone (RunnerLiveness), where before, a dead runner that hosted the health-check singleton was only
 * noticed once its heartbeat expired (6.2-6.7 s after a kill -9 with a 6 s expiry).
 */
export const defaultShardsPerGroup = 300
export const fastTimings = {
  shardLockExpiration: Duration.seconds(12),
  shardLockRefreshInterval: Duration.seconds(3),
  refreshAssignmentsInterval: Duration.seconds(1),
  runnerHealthCheckInterval: Duration.seconds(2),
  entityMessagePollInterval: Duration.seconds(1)
} as const

/** what a runner's connections are called in pg_stat_activity (PostgreSQL keeps 63 bytes of it) */
export const applicationNamePrefix = "codex-harness runner "
export const applicationNameOf = (runner: string | undefined) =>
  runner === undefined ? "codex-harness client" : `${applicationNamePrefix}${runner}`.slice(0, 63)

export class ClusterDatabaseError extends Data.TaggedError("ClusterDatabaseError")<{ readonly message: string }> {}

/**
 * The process's PgClient (and SqlClient). `runner` is the runner's address (HOST:PORT), or undefined for a process that
 * only sends messages (`cluster status`, a client-only serve).
 */
export const pgLayer = (url: string, runner?: string) =>
  PgClient.layer({
    url: Redacted.make(url),
    applicationName: applicationNameOf(runner),
    // the shard-lock connection is reserved for good; the rest serve turns' ledger writes and the session store
    maxConnections: 12,
    connectTimeout: Duration.seconds(10)
  })

/**
 * The tables of src/cluster. (`harness_turn_messages`, the TurnLedger's, belongs to PgSessionStore's migrations, which
 * the bootstrap runs first.)
 */
const migrations = Migrator.fromRecord({
  "1_session_owners": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`CREATE TABLE IF NOT EXISTS harness_session_owners (
      session_id text PRIMARY KEY,
      runner text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`),
  // approvals and questions waiting on each runner, for Pending and Answer from any serve (ClusterViews.ts)
  "2_interactions": Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`CREATE TABLE IF NOT EXISTS harness_interactions (
      id text PRIMARY KEY,
      session_id text NOT NULL,
      runner text NOT NULL,
      event jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`)
})

/** runs src/cluster's own migrations (their bookkeeping is in harness_cluster_migrations) */
export const migrate = Migrator.make({})({ loader: migrations, table: "harness_cluster_migrations" })

/**
 * Creates every table the cluster needs, once, under the bootstrap lock: the cluster's own (by building its SQL storage
 * layers with this sharding config and closing them again), then what `first` does (building the session store's layer,
 * so its migrations cannot race either), then src/cluster's. Waits at most `wait` for another process's bootstrap.
 */
export const bootstrap = <E, R>(
  config: Partial<ShardingConfig.ShardingConfig["Type"]>,
  first: Effect.Effect<void, E, R>,
  wait: Duration.DurationInput = Duration.seconds(60)
): Effect.Effect<void, ClusterDatabaseError, SqlClient.SqlClient | Exclude<R, Scope.Scope>> =>
  Effect.scoped(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const conn = yield* sql.reserve
      yield* conn.executeRaw(`SELECT pg_advisory_lock(${bootstrapLockKey})`, []).pipe(
        Effect.timeoutFail({
          duration: wait,
          onTimeout: () => new ClusterDatabaseError({ message: `another process held the cluster's bootstrap lock for over ${Duration.format(wait)}` })
        })
      )
      // released before the connection goes back to the pool (finalizers run in reverse)
      yield* Effect.addFinalizer(() => Effect.ignore(conn.executeRaw(`SELECT pg_advisory_unlock(${bootstrapLockKey})`, [])))
      yield* Effect.scoped(
        Layer.build(
          Layer.mergeAll(SqlMessageStorage.layer, SqlRunnerStorage.layer).pipe(Layer.provide(ShardingConfig.layer(config)))
        )
      )
      yield* Effect.scoped(first)
      yield* migrate
    })
  ).pipe(
    Effect.catchAll((error) =>
      Effect.fail(error instanceof ClusterDatabaseError ? error : new ClusterDatabaseError({ message: `cluster bootstrap: ${describe(error)}` }))
    ),
    Effect.withSpan("ClusterDatabase.bootstrap")
  )

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ""}` : String(error)

/** this runner hosts the session now (its entity started here) */
export const recordOwner = (sessionId: string, runner: string): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO harness_session_owners (session_id, runner, updated_at) VALUES (${sessionId}, ${runner}, now())
      ON CONFLICT (session_id) DO UPDATE SET runner = EXCLUDED.runner, updated_at = EXCLUDED.updated_at`).pipe(Effect.asVoid)

/** the session's entity stopped here (idle, handed off, drained); a newer owner's row stays */
export const releaseOwner = (sessionId: string, runner: string): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`DELETE FROM harness_session_owners WHERE session_id = ${sessionId} AND runner = ${runner}`).pipe(Effect.asVoid)
