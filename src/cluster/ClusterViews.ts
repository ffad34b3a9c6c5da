// What waits for an answer anywhere in a cluster (issue 33, item 2). An approval or question of a turn lives in the
// Interactions of the runner that runs the turn; `Pending` and an `Answer` by id may come through any runner's serve.
// So each runner mirrors its waiting interactions into `harness_interactions` (one row from `approval.requested` /
// `question.asked` to its `interaction.closed`, written in the order its hub published them), and `Pending` reads the
// rows of the runners that are alive: a runner that died leaves rows nobody waits on, which are not shown (and go with
// the next start at that address, or the retention job). Two statements per approval or question, none per plain turn.
import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, Queue, Schema } from "effect"
import { ControlFailure, Pending } from "../../schemas/control.js"
import { EventHub } from "../control/EventHub.js"
import { fastTimings } from "./ClusterDatabase.js"

const decodePending = Schema.decodeUnknownOption(Pending)

const failure = (what: string) => (e: { readonly message: string }) => new ControlFailure({ code: "failed", message: `cluster: ${what}: ${e.message}` })

/**
 * Mirrors this runner's waiting approvals and questions into the table until the scope closes (the runner's address
 * HOST:PORT). What an earlier process at this address left is cleared first. A failed write is logged and skipped.
 */
export const mirrorInteractions = (runner: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const hub = yield* EventHub
    const subscription = yield* hub.subscribe
    yield* sql`DELETE FROM harness_interactions WHERE runner = ${runner}`.pipe(Effect.ignore)
    return yield* Queue.take(subscription).pipe(
      Effect.flatMap((p) => {
        if (p._tag !== "Event") return Effect.void
        const event = p.event
        if (event.type === "approval.requested" || event.type === "question.asked") {
          return sql`INSERT INTO harness_interactions (id, session_id, runner, event) VALUES (${event.id}, ${event.session_id}, ${runner},
            ${JSON.stringify(event)}::jsonb) ON CONFLICT (id) DO NOTHING`
        }
        if (event.type === "interaction.closed") return sql`DELETE FROM harness_interactions WHERE id = ${event.id}`
        return Effect.void
      }),
      Effect.catchAll((e) => Effect.logWarning(`cluster: an approval or question could not be mirrored for other runners: ${e.message}`)),
      Effect.forever
    )
  })

/** Every approval and question waiting on a runner that is alive, oldest first. */
export const pending = (heartbeatExpiry: Duration.DurationInput = fastTimings.shardLockExpiration) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ event: unknown }>`SELECT i.event FROM harness_interactions i WHERE EXISTS (SELECT 1 FROM cluster_runners r
      WHERE r.address = i.runner AND r.healthy AND r.last_heartbeat > now() - make_interval(secs => ${Math.ceil(Duration.toSeconds(heartbeatExpiry))}))
      ORDER BY i.created_at, i.id`).pipe(
    Effect.map((rows) =>
      rows.flatMap((r) => {
        const decoded = decodePending(typeof r.event === "string" ? JSON.parse(r.event) : r.event)
        return decoded._tag === "Some" ? [decoded.value] : []
      })
    ),
    Effect.mapError(failure("pending approvals and questions"))
  )

/** The session an approval or question waiting somewhere in the cluster belongs to. */
export const sessionOf = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ session_id: string }>`SELECT session_id FROM harness_interactions WHERE id = ${id}`).pipe(
    Effect.map((rows) => rows[0]?.session_id),
    Effect.mapError(failure(`the session of ${id}`))
  )
