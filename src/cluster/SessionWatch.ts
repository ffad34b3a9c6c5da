// `Watch` of one session, from any serve of a cluster (issue 33, item 2): the session's live events are published on the
// EventHub of the runner that hosts the session, so a client on another runner's serve asks the session's entity for
// them. A stream that never ends would hold the entity up whenever it has to stop (a shard moving, a drain: the entity
// waits for its requests up to the termination timeout), so Watch is a long poll: each call returns the session's
// events after a cursor as soon as there are any, or none after `wait` (2 s), and the client asks again with the cursor
// it got. The entity keeps the session's events in a bounded buffer from its first Watch on (cursor = sequence number);
// a cursor of another entity instance (`epoch`: the session moved, or its entity was started again) starts over from
// what waits for an answer now, so an approval is never missed across a move (the events in between are).
import { Effect, Queue, Schema, Scope, Stream, SubscriptionRef } from "effect"
import * as crypto from "node:crypto"
import { ControlEvent, type Pending } from "../../schemas/control.js"
import type { EventHubService } from "../control/EventHub.js"

export const WatchPage = Schema.Struct({
  /** the entity instance the cursor belongs to */
  epoch: Schema.String,
  /** the cursor to ask with next */
  next: Schema.Number,
  events: Schema.Array(ControlEvent)
})
export type WatchPage = typeof WatchPage.Type

export interface WatchRequest {
  readonly epoch?: string | undefined
  readonly after?: number | undefined
}

export interface SessionWatchOptions {
  /** how long a call waits for an event, ms; default 2,000 */
  readonly wait?: number | undefined
  /** events kept for watchers that are behind; default 1,000 */
  readonly capacity?: number | undefined
}

/**
 * The Watch handler of one session's entity: `pending` is what waits for an answer on this runner (any session's); the
 * buffer fills from the runner's hub from the first call on, in the entity's scope (the scope this is built in).
 */
export const make = (
  sessionId: string,
  hub: EventHubService,
  pending: Effect.Effect<ReadonlyArray<Pending>>,
  options: SessionWatchOptions = {}
): Effect.Effect<(request: WatchRequest) => Effect.Effect<WatchPage>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const epoch = crypto.randomUUID()
    const wait = options.wait ?? 2_000
    const capacity = options.capacity ?? 1_000
    const buffer: Array<{ readonly seq: number; readonly event: ControlEvent }> = []
    const head = yield* SubscriptionRef.make(0)
    const starting = yield* Effect.makeSemaphore(1)
    let started = false

    const record = (event: ControlEvent) =>
      SubscriptionRef.update(head, (n) => {
        buffer.push({ seq: n + 1, event })
        if (buffer.length > capacity) buffer.shift()
        return n + 1
      })

    const start = starting.withPermits(1)(Effect.suspend(() => {
      if (started) return Effect.void
      started = true
      return Effect.gen(function* () {
        const subscription = yield* hub.subscribe
        yield* Queue.take(subscription).pipe(
          Effect.flatMap((p) => (p._tag === "Event" && p.sessionId === sessionId ? record(p.event) : Effect.void)),
          Effect.forever,
          Effect.forkScoped
        )
      }).pipe(Scope.extend(scope))
    }))

    return (request: WatchRequest) =>
      Effect.gen(function* () {
        yield* start
        if (request.epoch !== epoch || request.after === undefined) {
          const now = yield* SubscriptionRef.get(head)
          return { epoch, next: now, events: (yield* pending).filter((p) => p.session_id === sessionId) }
        }
        const after = request.after
        // the first change past the cursor, or nothing within `wait`
        yield* head.changes.pipe(Stream.filter((n) => n > after), Stream.take(1), Stream.runDrain, Effect.timeoutOption(wait))
        const now = yield* SubscriptionRef.get(head)
        return { epoch, next: now, events: buffer.filter((e) => e.seq > after).map((e) => e.event) }
      })
  })
