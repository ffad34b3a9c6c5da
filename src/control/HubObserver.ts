// serve's watcher of the session work registry: every run's events go to the EventHub as control events, tagged with
// the run, between its start and end marks, whoever submitted the message that started it. A client whose message was
// steered into a running turn or queued behind it follows the run that carries it from these marks (TurnStream.ts),
// and a Watch sees every run. The run's approval policy (its head message's) applies while it runs.
import { Cause, Effect, Exit, Layer } from "effect"
import type { ControlEvent } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import { type RunStart, WorkObserver, type WorkObserverService } from "../harness/WorkObserver.js"
import { EventHub } from "./EventHub.js"
import { failureOf } from "./failures.js"
import { Interactions } from "./Interactions.js"
import { type TurnEncoder, turnEncoder } from "./jsonEvents.js"

const isTerminal = (event: ControlEvent) => event.type === "turn.completed" || event.type === "turn.failed"

interface Watched {
  readonly encoder: TurnEncoder
  /** one terminal event per run: an interrupt landing after Codex's turn/completed (while the reply is delivered) must
   * not add a turn.failed after the turn.completed a client already took as the outcome */
  ended: boolean
}

export const make = Effect.gen(function* () {
  const hub = yield* EventHub
  const interactions = yield* Interactions
  // the runs under way (a handful: one per busy session), by run id
  const runs = new Map<number, Watched>()

  const publish = (run: RunStart, watched: Watched, event: ControlEvent) =>
    Effect.suspend(() => {
      if (isTerminal(event)) {
        if (watched.ended) return Effect.void
        watched.ended = true
      }
      return hub.publish(run.sessionId, event, run.runId)
    })

  const interruptedEvent = (encoder: TurnEncoder): ControlEvent => {
    const failed = encoder.failed("interrupted")
    return failed.type === "turn.failed" ? { ...failed, status: "interrupted" } : failed
  }

  const service: WorkObserverService = {
    runStarted: (run) =>
      Effect.gen(function* () {
        if (run.kind === "turn") {
          runs.set(run.runId, { encoder: turnEncoder(run.sessionId), ended: false })
          yield* interactions.setPolicy(run.sessionId, run.approvals ?? "ask")
        }
        yield* hub.start(run.sessionId, run.runId)
      }),
    event: (sessionId, runId, event) =>
      Effect.suspend(() => {
        const watched = runs.get(runId)
        if (watched === undefined) return Effect.void
        const run = { sessionId, runId, kind: "turn" } as const
        if (event._tag === "Notification" && event.notification._tag === "AgentMessageDelta") {
          const p = event.notification.params
          return hub.publish(sessionId, { type: "item.delta", version: eventsVersion, session_id: sessionId, item_id: p.itemId, delta: p.delta }, runId)
        }
        return Effect.forEach(watched.encoder.turnEvent(event), (e) => publish(run, watched, e), { discard: true })
      }),
    runRecorded: (run) => hub.recorded(run.sessionId, run.runId),
    runEnded: (run, exit) =>
      Effect.gen(function* () {
        const watched = runs.get(run.runId)
        runs.delete(run.runId)
        if (watched !== undefined) {
          // the stream must say how the turn ended, even when it never reached Codex's own end
          if (Exit.isFailure(exit)) {
            yield* publish(run, watched, Cause.isInterruptedOnly(exit.cause) ? interruptedEvent(watched.encoder) : watched.encoder.failed(failureOf(exit.cause).message))
          } else if (!watched.ended) {
            yield* publish(run, watched, watched.encoder.failed("the turn ended without a terminal event"))
          }
          yield* interactions.releasePolicy(run.sessionId)
        }
        yield* hub.end(run.sessionId, run.runId)
      })
  }
  return service
})

/** The WorkObserver of serve and of a cluster runner: needs their EventHub and Interactions. */
export const layer: Layer.Layer<WorkObserver, never, EventHub | Interactions> = Layer.effect(WorkObserver, make)
