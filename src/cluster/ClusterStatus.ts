// `codex-harness cluster status`: runners, shard counts and sessions per runner, read from PostgreSQL alone (no runner is
// asked anything, so it works while runners are dying, and from any machine that reaches the database).
// - runners: `cluster_runners` (registered by each runner, heartbeat refreshed with its shard locks);
// - shards: @effect/cluster 0.60.2 exposes no shard table with advisory locks; a runner's shards are the session advisory
//   locks its lock connection holds (single bigint keys 1_000_000 * (group + 1) + shard, so classid 0 and objsubid 1 in
//   pg_locks), and that connection is told apart by its `application_name`, which ClusterDatabase.pgLayer sets to
//   "codex-harness runner HOST:PORT";
// - sessions: `harness_session_owners`, written when a Session entity starts on a runner and removed when it stops there
//   (idle, handed off, drained). A session recorded on a runner that is not alive (no longer registered, its heartbeat
//   expired, marked unhealthy, or without a connection to the database: a killed runner's connections end with its
//   process, seconds before its heartbeat expires or a surviving runner marks it, and there may be no survivor) is moving: its runner died, and the next message takes it to another runner; it is
//   counted as moving, never as active.
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect } from "effect"
import { applicationNamePrefix, ClusterDatabaseError, defaultShardsPerGroup, fastTimings, pgLayer } from "./ClusterDatabase.js"

export interface RunnerStatus {
  readonly address: string
  readonly machineId: number
  /** the cluster's own health flag (ping checks by the health singleton) */
  readonly healthy: boolean
  /** its heartbeat is within the lock expiry: other runners count it */
  readonly fresh: boolean
  readonly lastHeartbeatAgoMs: number
  /** some connection of its own is open to the database (the same check as RunnerLiveness and the turn ledger) */
  readonly connected: boolean
  readonly shards: number
  /** sessions active on it (0 when it is not alive: they are moving) */
  readonly sessions: number
  /** sessions recorded on it while it is not alive */
  readonly moving: number
}

export interface ClusterStatusReport {
  readonly shardsPerGroup: number
  readonly runners: ReadonlyArray<RunnerStatus>
  /** shards held by some runner (of shardsPerGroup per group) */
  readonly shardsHeld: number
  /** shard locks held by connections that are not a registered runner's (a runner mid-start or mid-exit) */
  readonly shardsElsewhere: number
  /** sessions recorded on a runner that is no longer registered */
  readonly staleSessions: number
  /** sessions recorded on runners that are not alive, registered or not: moving to another runner */
  readonly movingSessions: number
}

export interface StatusOptions {
  readonly shardsPerGroup?: number | undefined
  readonly heartbeatExpiry?: Duration.DurationInput | undefined
}

/** PostgreSQL's "relation does not exist": no runner ever started on this database */
const missingTable = <A>(effect: Effect.Effect<ReadonlyArray<A>, SqlError>): Effect.Effect<ReadonlyArray<A>, SqlError> =>
  Effect.catchIf(
    effect,
    (e) => /does not exist|42P01/.test(`${e.message} ${String((e.cause as { code?: unknown } | undefined)?.code ?? "")} ${String(e.cause)}`),
    () => Effect.succeed([])
  )

export const status = (options: StatusOptions = {}): Effect.Effect<ClusterStatusReport, ClusterDatabaseError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const shardsPerGroup = options.shardsPerGroup ?? defaultShardsPerGroup
    const expiry = Math.max(1, Math.ceil(Duration.toSeconds(options.heartbeatExpiry ?? fastTimings.shardLockExpiration)))
    const runners = yield* sql<{ machine_id: number; address: string; healthy: boolean; fresh: boolean; ago_ms: number; connected: boolean }>`
      SELECT machine_id, address, healthy, last_heartbeat > now() - make_interval(secs => ${expiry}) AS fresh,
        (extract(epoch FROM (now() - last_heartbeat)) * 1000)::float8 AS ago_ms,
        EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = left(${applicationNamePrefix} || address, 63)) AS connected
      FROM cluster_runners ORDER BY address`.pipe(missingTable)
    const locks = yield* sql<{ application_name: string | null; shards: number }>`
      SELECT a.application_name, count(*)::int AS shards
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objsubid = 1
        AND l.objid::text::bigint >= 1000001 AND (l.objid::text::bigint % 1000000) BETWEEN 1 AND ${shardsPerGroup}
      GROUP BY a.application_name`
    const owners = yield* sql<{ runner: string; sessions: number }>`
      SELECT runner, count(*)::int AS sessions FROM harness_session_owners GROUP BY runner`.pipe(missingTable)

    const shardsOf = new Map<string, number>()
    let shardsElsewhere = 0
    for (const row of locks) {
      const name = row.application_name ?? ""
      if (name.startsWith(applicationNamePrefix)) {
        const address = name.slice(applicationNamePrefix.length)
        shardsOf.set(address, (shardsOf.get(address) ?? 0) + Number(row.shards))
      } else shardsElsewhere += Number(row.shards)
    }
    const sessionsOf = new Map(owners.map((o) => [o.runner, Number(o.sessions)]))
    const registered = new Set(runners.map((r) => r.address))
    for (const [address, shards] of shardsOf) if (!registered.has(address)) shardsElsewhere += shards
    const alive = (r: { readonly healthy: boolean; readonly fresh: boolean; readonly connected: boolean }) =>
      Boolean(r.healthy) && Boolean(r.fresh) && Boolean(r.connected)
    const staleSessions = owners.filter((o) => !registered.has(o.runner)).reduce((a, o) => a + Number(o.sessions), 0)
    const statuses = runners.map((r) => ({
      address: r.address,
      machineId: Number(r.machine_id),
      healthy: Boolean(r.healthy),
      fresh: Boolean(r.fresh),
      lastHeartbeatAgoMs: Math.max(0, Math.round(Number(r.ago_ms))),
      connected: Boolean(r.connected),
      shards: shardsOf.get(r.address) ?? 0,
      sessions: alive(r) ? sessionsOf.get(r.address) ?? 0 : 0,
      moving: alive(r) ? 0 : sessionsOf.get(r.address) ?? 0
    }))
    return {
      shardsPerGroup,
      runners: statuses,
      shardsHeld: locks.reduce((a, l) => a + Number(l.shards), 0),
      shardsElsewhere,
      staleSessions,
      movingSessions: staleSessions + statuses.reduce((a, r) => a + r.moving, 0)
    } satisfies ClusterStatusReport
  }).pipe(Effect.mapError((e) => new ClusterDatabaseError({ message: `cluster status: ${e.message}` })))

/** the report as `cluster status` prints it */
export const format = (report: ClusterStatusReport): string => {
  const sessions = report.runners.reduce((a, r) => a + r.sessions, 0)
  const head = `cluster: ${report.runners.length} runner${report.runners.length === 1 ? "" : "s"}, ` +
    `${report.shardsHeld}/${report.shardsPerGroup} shards held, ${sessions} active session${sessions === 1 ? "" : "s"}` +
    (report.movingSessions > 0 ? `, ${report.movingSessions} moving (their runner is gone)` : "")
  if (report.runners.length === 0) return `${head}\nno runner is registered`
  const rows = [["RUNNER", "HEALTHY", "HEARTBEAT", "SHARDS", "SESSIONS"]].concat(report.runners.map((r) => [
    r.address,
    !r.fresh ? "expired" : !r.healthy ? "unhealthy" : r.connected ? "yes" : "gone",
    `${(r.lastHeartbeatAgoMs / 1000).toFixed(1)} s ago`,
    String(r.shards),
    r.moving > 0 ? `${r.moving} moving` : String(r.sessions)
  ]))
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  const lines = rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd())
  return [head, ...lines].join("\n")
}

/** `cluster status` against a database URL: its own short-lived connection, named as a client's */
export const run = (databaseUrl: string, options: StatusOptions = {}) =>
  status(options).pipe(
    Effect.provide(pgLayer(databaseUrl)),
    Effect.catchAll((e) => Effect.fail(e instanceof ClusterDatabaseError ? e : new ClusterDatabaseError({ message: `cluster status: ${e.message}` })))
  )
