// Which runners are gone, from PostgreSQL's own view of its connections: a runner process holds its shard locks on a
// connection named after it (ClusterDatabase.applicationNameOf), and when the process dies that connection goes at
// once (the kernel closes its socket; a machine that vanishes is noticed by TCP keepalive). Every runner watches for
// rows of `cluster_runners` still marked healthy whose process has no connection left and marks them unhealthy, so the
// survivors reassign its shards within about two polls.
//
// Why the harness does this and not @effect/cluster 0.60.2 alone: the cluster learns that a runner died from the
// health-check singleton's pings, and when the dead runner was the one hosting that singleton nobody pings it: its
// shards move only once its heartbeat is older than the lock expiry. With this watcher the expiry can be long enough to
// ride out a busy machine or a short database stall (ClusterDatabase.fastTimings) without slowing failover. A runner
// marked unhealthy by mistake is marked healthy again by the health check's next ping.
//
// Guards against a false alarm: a runner counts as gone only when absent in two polls in a row, and never in the first
// seconds after PostgreSQL itself started (after a restart every runner reconnects lazily, within its lock refresh).
//
// Every runner that sees a runner without a connection is told (`onAbsent`) at the first poll that finds it so, once per
// disappearance (whether its own update marks it or another runner's does): the runner then starts the app-servers the
// dead runner's sessions will need (Prewarm) while their shards move, so the first message of a moved session does not
// wait for one to start. Told one poll before the runner counts as gone: a false alarm costs an app-server that idles
// out, and a real death half a second of the failover.
import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, Schedule } from "effect"
import { applicationNamePrefix } from "./ClusterDatabase.js"

export interface RunnerLivenessOptions {
  /** this runner's address (HOST:PORT), never marked by itself */
  readonly self: string
  /** how often to look; default 500 ms */
  readonly every?: Duration.DurationInput | undefined
  /** how long PostgreSQL must have been up before absence means anything; default 15 s */
  readonly settle?: Duration.DurationInput | undefined
  /** a runner whose heartbeat is older than this is no longer counted anyway (the lock expiry); default 16 s */
  readonly heartbeatExpiry?: Duration.DurationInput | undefined
  /** told of each runner found without a connection, at the first poll that finds it so, once per disappearance */
  readonly onAbsent?: ((address: string) => Effect.Effect<void>) | undefined
}

/** Watches until its scope closes. Needs the runner's SqlClient; a failed poll is logged and the next one tried. */
export const watch = (options: RunnerLivenessOptions) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const settleSeconds = Math.ceil(Duration.toSeconds(options.settle ?? "15 seconds"))
    const expirySeconds = Math.ceil(Duration.toSeconds(options.heartbeatExpiry ?? "16 seconds"))
    // absent in the previous poll, and the ones already told about (until they come back)
    let suspects = new Set<string>()
    const told = new Set<string>()

    const poll = Effect.gen(function* () {
      const rows = yield* sql<{ address: string; healthy: boolean }>`SELECT r.address, r.healthy FROM cluster_runners r
        WHERE r.address <> ${options.self} AND r.last_heartbeat > now() - make_interval(secs => ${expirySeconds})
          AND pg_postmaster_start_time() < now() - make_interval(secs => ${settleSeconds})
          AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = left(${applicationNamePrefix} || r.address, 63))`
      const absent = new Set(rows.map((r) => r.address))
      const gone = rows.filter((r) => suspects.has(r.address))
      suspects = absent
      for (const address of told) if (!absent.has(address)) told.delete(address)
      for (const address of absent) {
        if (told.has(address)) continue
        told.add(address)
        if (options.onAbsent !== undefined) yield* options.onAbsent(address)
      }
      for (const { address, healthy } of gone) {
        if (!healthy) continue
        yield* sql`UPDATE cluster_runners SET healthy = false WHERE address = ${address} AND healthy`
        yield* Effect.logInfo(`cluster runner ${address} has no connection to PostgreSQL any more: marked unhealthy`)
      }
    }).pipe(Effect.catchAllCause((cause) => Effect.logDebug("runner liveness poll failed", cause)))

    return yield* Effect.repeat(poll, Schedule.spaced(options.every ?? "500 millis"))
  })
