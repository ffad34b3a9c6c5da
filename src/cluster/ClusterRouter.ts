// The control API's SessionRouter in a cluster: a session's turn, steer, interrupt, answer and compaction go to the
// Session entity on whichever runner owns it (ClusterClient: bounded, retried while a runner is replaced).
import { Effect, Layer } from "effect"
import { ControlFailure } from "../../schemas/control.js"
import { SessionRouter } from "../control/SessionRouter.js"
import { ClusterClient } from "./ClusterClient.js"

export const layer = Layer.effect(
  SessionRouter,
  Effect.map(ClusterClient, (cluster) => ({
    startTurn: (turn) => cluster.startTurn(turn),
    steer: (sessionId, texts) => cluster.steer(sessionId, texts),
    interrupt: (sessionId) => cluster.interrupt(sessionId),
    answer: (id, input, by) => {
      // the ids of approvals and questions this process has streamed, with their sessions
      const sessionId = cluster.sessionOfInteraction(id)
      return sessionId === undefined
        ? Effect.fail(new ControlFailure({ code: "not_found", message: `nothing waits for an answer with id ${id} on this runner (answer it through the serve its turn was started from)` }))
        : cluster.answer(sessionId, id, { ...input, by })
    },
    compact: (sessionId) => cluster.compact(sessionId)
  }))
)
