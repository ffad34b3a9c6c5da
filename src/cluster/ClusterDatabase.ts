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
import { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "@effect/cluster/SqlRunnerStorage"
import { Data, Duration, Effect, Layer, type Scope } from "effect"
import pg from "pg"

/** "code" << 32 | "hars": the bootstrap's advisory lock, outside every cluster shard lock (their high word is 0) */
export const bootstrapLockKey = "7165055918875439731"

/**
 * What every process of a cluster must agree on (CLUSTER-NOTES trap 4): shards per group, and the timings.
 *
 * The lock refresh is also the bound of each refresh (@effect/cluster 0.60.2 waits min(refresh, expiry / 3) for it, then
 * drops every shard the runner holds, stopping its entities): with a 1 s refresh, one slow statement on a loaded machine
 * dropped all of a runner's shards (seen in this suite under two busy loops, and a 1.5 s stall interrupted turns). So
 * 3 s. The expiry is 16 s: the fence (below) must come before it, and a stall is measured from the last renewal,
 * which may be up to one refresh (3 s) old when the stall begins; with a 12 s expiry and a 9 s fence, a 6 s stall on a
 * loaded machine fenced the runners (the renewal after it came back more than 9 s after the one before the stall). The
 * expiry no longer sets the failover time: a dead runner is marked unhealthy as soon as
 * its connection is gone (RunnerLiveness), where before, a dead runner that hosted the health-check singleton was only
 * noticed once its heartbeat expired (6.2-6.7 s after a kill -9 with a 6 s expiry). A refresh that does not answer in
 * time no longer drops the shards either (LockRenewal keeps them up to `fenceAfter`). The runners table is read every
 * 500 ms, so a runner marked gone loses its shards to the others within about half a second of it.
 */
export const defaultShardsPerGroup = 300
export const fastTimings = {
  shardLockExpiration: Duration.seconds(16),
  shardLockRefreshInterval: Duration.seconds(3),
  refreshAssignmentsInterval: Duration.millis(500),
  runnerHealthCheckInterval: Duration.seconds(2),
  entityMessagePollInterval: Duration.seconds(1)
} as const

/**
 * How long PostgreSQL keeps the connections of a runner that says nothing: `idle_session_timeout`, and TCP keepalive
 * (10 s, then 3 probes 2 s apart) and `tcp_user_timeout` for one whose machine or network is gone. With them go its
 * advisory locks, its shards' and its sessions', which is the earliest another runner can take its sessions. Equal to
 * the shard lock expiry, so the heartbeat expiry and the locks agree.
 */
export const lockExpiry = fastTimings.shardLockExpiration

/**
 * How long a runner keeps its shards and its running turns while PostgreSQL does not renew its locks (LockRenewal): a
 * stall or restart that ends within this of the last renewal is ridden out (a 6 s one, begun up to a refresh after that
 * renewal, leaves 3 s for PostgreSQL and the runner to answer again on a loaded machine); past it the runner stops its
 * turns (fences itself), 4 s before the database may drop its connections at `lockExpiry`, which leaves that much for a
 * slow event loop on a loaded machine.
 */
export const fenceAfter = Duration.seconds(12)

/**
 * What every connection of a cluster process starts with (libpq's startup `options`): a statement or a lock wait has a
 * bound (a statement waits for a row another process holds at most `lock_timeout`), a transaction left open is ended,
 * and an idle or silent connection is dropped by the server at `lockExpiry` (a runner's lock connections are never idle
 * that long: the shard locks are refreshed every 3 s, the session locks' connection is pinged as often). PostgreSQL 14 or
 * later (idle_session_timeout).
 */
export const connectionSettings: Readonly<Record<string, number>> = {
  statement_timeout: 10_000,
  lock_timeout: 5_000,
  idle_in_transaction_session_timeout: 10_000,
  idle_session_timeout: Duration.toMillis(lockExpiry),
  tcp_keepalives_idle: 10,
  tcp_keepalives_interval: 2,
  tcp_keepalives_count: 3,
  tcp_user_timeout: Duration.toMillis(lockExpiry)
}

/** what a runner's connections are called in pg_stat_activity (PostgreSQL keeps 63 bytes of it) */
export const applicationNamePrefix = "codex-harness runner "
export const applicationNameOf = (runner: string | undefined) =>
  runner === undefined ? "codex-harness client" : `${applicationNamePrefix}${runner}`.slice(0, 63)

export class ClusterDatabaseError extends Data.TaggedError("ClusterDatabaseError")<{ readonly message: string }> {}

/**
 * The most connections a process of the cluster opens (`serve --cluster --database-connections N`): the first limit a
 * growing cluster meets is PostgreSQL's `max_connections` (bench/README.md, issue 33), and the pool bound is what sets
 * it. Two of a runner's connections are held for good (its shard locks, its sessions' locks), the retention job borrows
 * one for its pass, and the rest carry statements (measured: 6-8 open at most under a busy cluster's load, 2-3 idle).
 */
export const defaultConnections = 12
/** a runner's two lock connections, one the retention job borrows, and one for statements */
export const minimumRunnerConnections = 4

/** the pool of a cluster process: the settings above on every connection, TCP keepalive on its side too */
const makePool = (url: string, runner: string | undefined, max: number) => {
  const pool = new pg.Pool({
    connectionString: url,
    application_name: applicationNameOf(runner),
    options: Object.entries(connectionSettings).map(([name, value]) => `-c ${name}=${value}`).join(" "),
    keepAlive: true,
    keepAliveInitialDelayMillis: 6_000,
    // the lock connections are reserved for good; the rest serve turns' ledger writes and the session store
    max,
    connectionTimeoutMillis: 10_000,
    // ended here before the server's idle_session_timeout ends them
    idleTimeoutMillis: 8_000
  })
  // an idle client whose server went away (a restart) errors here; the pool drops it and the next query connects anew
  pool.on("error", () => {})
  return pool
}

/** where a database is, for a message a person reads: USER@HOST:PORT/DB, never its password */
export const databaseName = (url: string): string => {
  try {
    const parsed = new URL(url)
    return `${parsed.username === "" ? "" : `${decodeURIComponent(parsed.username)}@`}${parsed.host}${parsed.pathname}`
  } catch {
    return "the cluster's database"
  }
}

/**
 * Why a first connection failed, in one line: the server's own words (a wrong password, a database that does not exist)
 * or the socket's. A host name with two addresses (localhost: ::1 and 127.0.0.1) fails with an AggregateError whose
 * message is empty; its first error, or its code, says it.
 */
export const connectFailure = (cause: unknown): string => {
  const first = cause instanceof AggregateError && cause.errors.length > 0 ? cause.errors[0] : cause
  const text = first instanceof Error ? first.message : ""
  const code = typeof first === "object" && first !== null && "code" in first ? String(first.code) : undefined
  const line = (text !== "" ? text : code ?? String(first)).split("\n")[0] ?? ""
  return line.slice(0, 300)
}

/**
 * The process's PgClient (and SqlClient). `runner` is the runner's address (HOST:PORT), or undefined for a process that
 * only sends messages (`cluster status`, a client-only serve); `connections` bounds its pool. Fails when PostgreSQL does
 * not answer within 10 s.
 */
export const pgLayer = (url: string, runner?: string, connections: number = defaultConnections) =>
  PgClient.layerFromPool({
    applicationName: applicationNameOf(runner),
    acquire: Effect.gen(function* () {
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => makePool(url, runner, connections)),
        (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption("1 second"))
      )
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: `cannot reach PostgreSQL at ${databaseName(url)}: ${connectFailure(cause)}` })
      }).pipe(
        Effect.timeoutFail({
          duration: "10 seconds",
          onTimeout: () =>
            new SqlError({ cause: new Error("Connection timed out"), message: `PostgreSQL at ${databaseName(url)} did not answer within 10 s` })
        })
      )
      return pool
    })
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
      // the wait for another process's bootstrap has its own bound (`wait`), not the connections' statement bounds
      yield* conn.executeRaw("SET statement_timeout = 0; SET lock_timeout = 0", [])
      yield* Effect.addFinalizer(() => Effect.ignore(conn.executeRaw("RESET statement_timeout; RESET lock_timeout", [])))
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

/** How many more connections PostgreSQL takes from a role like ours: `max_connections` less the reserved slots, less
 * the connections open now (every database's, as the server counts them). */
export interface ConnectionRoom {
  readonly max: number
  readonly reserved: number
  readonly open: number
  readonly room: number
}

export const connectionRoom: Effect.Effect<ConnectionRoom, SqlError, SqlClient.SqlClient> = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ max: number; reserved: number; open: number }>`SELECT current_setting('max_connections')::integer AS max,
    current_setting('superuser_reserved_connections')::integer
      + coalesce(nullif(current_setting('reserved_connections', true), '')::integer, 0) AS reserved,
    (SELECT count(*)::integer FROM pg_stat_activity WHERE backend_type = 'client backend') AS open`).pipe(
  Effect.map(([row]) => {
    const max = Number(row?.max ?? 0)
    const reserved = Number(row?.reserved ?? 0)
    const open = Number(row?.open ?? 0)
    return { max, reserved, open, room: Math.max(0, max - reserved - open) }
  })
)

/**
 * Said once as a runner joins when the database cannot give it the connections it may open: past that PostgreSQL
 * refuses a connection ("too many clients already") in the middle of a turn, which the turn's client sees as the
 * database not answering. The runner still joins (a runner being replaced frees its connections a moment later).
 */
export const warnWhenShort = (connections: number): Effect.Effect<void, never, SqlClient.SqlClient> =>
  connectionRoom.pipe(
    Effect.flatMap((r) =>
      r.room >= connections
        ? Effect.void
        : Effect.logWarning(
          `PostgreSQL has room for ${r.room} more connection(s) (max_connections ${r.max}, ${r.reserved} reserved, ${r.open} open) ` +
            `and this runner may open ${connections} (--database-connections): raise max_connections on the database ` +
            `(at least ${connections} x runners + clients + ${r.reserved + 10}) or lower --database-connections`
        )
    ),
    Effect.catchAll((error) => Effect.logDebug(`the database's connection room was not read: ${error.message}`))
  )
