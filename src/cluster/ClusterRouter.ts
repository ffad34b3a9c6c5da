// The control API's SessionRouter in a cluster: a session's turn, steer, interrupt, answer, compaction and live events
// go to the Session entity on whichever runner owns it (ClusterClient: bounded, retried while a runner is replaced);
// what waits for an answer is read from the runners' mirror of it (ClusterViews), so Pending and Answer by id work from
// any serve.
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { ControlFailure } from "../../schemas/control.js"
import { SessionRouter } from "../control/SessionRouter.js"
import { ClusterClient } from "./ClusterClient.js"
import * as ClusterViews from "./ClusterViews.js"

export const layer = Layer.effect(
  SessionRouter,
  Effect.gen(function* () {
    const cluster = yield* ClusterClient
    const sql = yield* SqlClient.SqlClient
    const withSql = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.provideService(effect, SqlClient.SqlClient, sql)
    /** the session of an approval or question: one this process streamed, else the cluster's mirror */
    const sessionOf = (id: string) =>
      Effect.suspend(() => {
        const known = cluster.sessionOfInteraction(id)
        return known !== undefined ? Effect.succeed(known) : withSql(ClusterViews.sessionOf(id))
      })
    return {
      startTurn: (turn) => cluster.startTurn(turn),
      steer: (sessionId, texts) => cluster.steer(sessionId, texts),
      interrupt: (sessionId) => cluster.interrupt(sessionId),
      answer: (id, input, by) =>
        Effect.flatMap(sessionOf(id), (sessionId) =>
          sessionId === undefined
            ? Effect.fail(new ControlFailure({ code: "not_found", message: `nothing waits for an answer with id ${id} in the cluster` }))
            : cluster.answer(sessionId, id, { ...input, by })),
      compact: (sessionId) => cluster.compact(sessionId),
      pending: withSql(ClusterViews.pending()),
      watch: (sessionId) => cluster.watch(sessionId)
    }
  })
)
