// Every event `serve` has to tell its clients, in one place: turn events, replies, approvals and questions, tagged with
// their session. A `Watch` subscribes to all of them; a turn's own stream takes the ones of its session. The hub slides:
// a subscriber that falls more than `capacity` events behind loses the oldest ones instead of holding up every turn (a
// turn's own stream too, in the extreme: it then still ends within a bound, see TurnStream.ts).
import { Context, Effect, Layer, PubSub, type Queue, type Scope } from "effect"
import type { ControlEvent } from "../../schemas/control.js"
import { Delivery } from "../ports/Delivery.js"
import { replyEvent } from "./jsonEvents.js"

export type Published =
  | { readonly _tag: "Event"; readonly sessionId: string | undefined; readonly event: ControlEvent }
  /** a turn's stream ends here: everything its turn published (its replies included) is before it */
  | { readonly _tag: "End"; readonly sessionId: string; readonly streamId: string }

export interface EventHubService {
  readonly publish: (sessionId: string | undefined, event: ControlEvent) => Effect.Effect<void>
  readonly end: (sessionId: string, streamId: string) => Effect.Effect<void>
  readonly subscribe: Effect.Effect<Queue.Dequeue<Published>, never, Scope.Scope>
}

export class EventHub extends Context.Tag("codex-harness/control/EventHub")<EventHub, EventHubService>() {}

export const capacity = 4096

export const layer = Layer.scoped(
  EventHub,
  Effect.gen(function* () {
    const hub = yield* Effect.acquireRelease(PubSub.sliding<Published>(capacity), PubSub.shutdown)
    return {
      publish: (sessionId, event) => PubSub.publish(hub, { _tag: "Event", sessionId, event }).pipe(Effect.asVoid),
      end: (sessionId, streamId) => PubSub.publish(hub, { _tag: "End", sessionId, streamId }).pipe(Effect.asVoid),
      subscribe: PubSub.subscribe(hub)
    }
  })
)

/** The Delivery port of `serve`: a reply is an event of its session, for whoever streams that session. */
export const deliveryLayer = Layer.effect(
  Delivery,
  Effect.map(EventHub, (hub) => ({ deliver: (reply) => hub.publish(reply.sessionId, replyEvent(reply)) }))
)
