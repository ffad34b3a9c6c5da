// Every event `serve` has to tell its clients, in one place: turn events, replies, approvals and questions, tagged with
// their session, and a turn's own events with the run of the session work registry that produced them, between that
// run's start and end marks. A `Watch` subscribes to all of them; a message's stream takes the ones of the run that
// carries it. The hub slides:
// a subscriber that falls more than `capacity` events behind loses the oldest ones instead of holding up every turn (a
// turn's own stream too, in the extreme: it then still ends within a bound, see TurnStream.ts).
import { Context, Effect, Layer, Mailbox, PubSub, type Queue, type Scope, Stream, SubscriptionRef } from "effect"
import type { ControlEvent } from "../../schemas/control.js"
import { Delivery } from "../ports/Delivery.js"
import { replyEvent } from "./jsonEvents.js"

export type Published =
  /** `runId`: a run's own event; without one, an event of the session (a reply, an approval) or of none */
  | { readonly _tag: "Event"; readonly sessionId: string | undefined; readonly event: ControlEvent; readonly runId?: number | undefined }
  /** a run of the session starts: the session's events without a run id from here to its end are that run's */
  | { readonly _tag: "Start"; readonly sessionId: string; readonly runId: number }
  /** the run's turn has delivered its reply and recorded its end: its outcome (replies and terminal event) is before
   * it, while the turn's scope still closes and its End mark follows (a cluster runner records the outcome here) */
  | { readonly _tag: "Recorded"; readonly sessionId: string; readonly runId: number }
  /** a run ends here: everything it published (its replies included) is before it */
  | { readonly _tag: "End"; readonly sessionId: string; readonly runId: number }

export interface EventHubService {
  readonly publish: (sessionId: string | undefined, event: ControlEvent, runId?: number) => Effect.Effect<void>
  readonly start: (sessionId: string, runId: number) => Effect.Effect<void>
  readonly recorded: (sessionId: string, runId: number) => Effect.Effect<void>
  readonly end: (sessionId: string, runId: number) => Effect.Effect<void>
  readonly subscribe: Effect.Effect<Queue.Dequeue<Published>, never, Scope.Scope>
  /**
   * The same subscription as a mailbox that slides as the hub does, ended when the hub closes: a message's stream
   * (TurnStream) reads its run's events this way, a burst in one `takeAll` and one wake per tick (125 run-loop steps
   * fewer a warm turn through serve than taking each from a PubSub subscription, bench/turn-ops.ts --serve)
   */
  readonly subscribeMailbox: Effect.Effect<Mailbox.ReadonlyMailbox<Published>, never, Scope.Scope>
  /** a message's stream to a client, counted while it is read (see `delivered`) */
  readonly track: <A, E, R>(stream: Stream.Stream<A, E, R>) => Stream.Stream<A, E, R>
  /** `track` for what is read within a scope (a mailbox the RPC server reads): counted until the scope closes */
  readonly reading: Effect.Effect<void, never, Scope.Scope>
  /** done once no tracked stream is being read: serve waits for it (bounded) after draining its turns, so the
   * interrupted turns' last events reach their clients before the listener closes their connections */
  readonly delivered: Effect.Effect<void>
}

export class EventHub extends Context.Tag("codex-harness/control/EventHub")<EventHub, EventHubService>() {}

export const capacity = 4096

export const layer = Layer.scoped(
  EventHub,
  Effect.gen(function* () {
    const hub = yield* Effect.acquireRelease(PubSub.sliding<Published>(capacity), PubSub.shutdown)
    // the PubSub's subscribers (Watch streams, the cluster's views), counted so that a publish with none skips it, and
    // the mailbox subscribers (messages' streams), each offered every event; both slide at `capacity`
    let queueSubscribers = 0
    const mailboxes = new Set<Mailbox.Mailbox<Published>>()
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const ending = [...mailboxes]
        mailboxes.clear()
        return Effect.forEach(ending, (mailbox) => mailbox.end, { discard: true })
      }))
    const publish = (published: Published): Effect.Effect<void> => {
      const toQueues = queueSubscribers === 0 ? Effect.void : Effect.asVoid(PubSub.publish(hub, published))
      if (mailboxes.size === 0) return toQueues
      return Effect.zipRight(toQueues, Effect.forEach(mailboxes, (mailbox) => mailbox.offer(published), { discard: true }))
    }
    const readers = yield* SubscriptionRef.make(0)
    const reading = Effect.acquireRelease(SubscriptionRef.update(readers, (n) => n + 1), () => SubscriptionRef.update(readers, (n) => n - 1))
    return {
      publish: (sessionId, event, runId) => publish({ _tag: "Event", sessionId, event, runId }),
      start: (sessionId, runId) => publish({ _tag: "Start", sessionId, runId }),
      recorded: (sessionId, runId) => publish({ _tag: "Recorded", sessionId, runId }),
      end: (sessionId, runId) => publish({ _tag: "End", sessionId, runId }),
      subscribe: Effect.acquireRelease(
        Effect.sync(() => void queueSubscribers++),
        () => Effect.sync(() => void queueSubscribers--)
      ).pipe(Effect.zipRight(PubSub.subscribe(hub))),
      subscribeMailbox: Effect.acquireRelease(
        Effect.tap(Mailbox.make<Published>({ capacity, strategy: "sliding" }), (mailbox) =>
          closed ? mailbox.end : Effect.sync(() => void mailboxes.add(mailbox))),
        (mailbox) => Effect.zipRight(Effect.sync(() => void mailboxes.delete(mailbox)), mailbox.shutdown)
      ),
      track: (stream) => Stream.unwrapScoped(Effect.as(reading, stream)),
      reading,
      delivered: readers.changes.pipe(Stream.takeUntil((n) => n === 0), Stream.runDrain)
    }
  })
)

/** The Delivery port of `serve`: a reply is an event of its session, for whoever streams that session. */
export const deliveryLayer = Layer.effect(
  Delivery,
  Effect.map(EventHub, (hub) => ({ deliver: (reply) => hub.publish(reply.sessionId, replyEvent(reply)) }))
)
