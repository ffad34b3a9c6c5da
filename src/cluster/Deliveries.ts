// The Turn streams a runner is sending to their clients, for two reasons.
//
// A drain lets them reach their clients before the cluster shuts down (ClusterRunner's drain waits for `settled`).
//
// And a stream whose client is gone is cut. A Turn reply is streamed chunk by chunk, and the entity's RPC server waits
// for the client's acknowledgement of each chunk before it takes the next. When the client's process dies (a serve
// killed mid-turn), @effect/cluster 0.60 does not tell the entity (the leak Effect-TS/effect#8214 describes, fixed only
// in the Effect 4 line): the handler waits for an acknowledgement that never comes, for the life of the runner. Its
// session's entity then never goes idle, and a SIGTERM waited for it twice: the drain's bound (10 s) and the cluster's
// entity termination timeout (15 s). A living client acknowledges within milliseconds, so a stream still open well
// after its turn ended is cut here: the request's fiber is interrupted, which ends the request on the entity. A client
// that is in fact alive (only very slow) sees its stream end interrupted and retries the message, which replays the
// turn's recorded outcome from the ledger. A client gone before it acknowledged the first chunk (`session.selected`)
// leaves a stream that never reaches its claim, so no turn runs and nothing says it ended: that one is cut when a chunk
// has waited `acknowledgementBound` for its acknowledgement (a living client that reads nothing for that long is let go
// too, as serve lets go of a client that stops reading).
import { Clock, Context, Deferred, Duration, Effect, Fiber, Layer, Stream, SubscriptionRef } from "effect"

/** how long after its turn ended a Turn stream may stay open before it is taken for one whose client is gone */
export const deliveryGrace = Duration.seconds(30)
/** the same once the runner is draining: it waits for its open streams, and a stuck one would hold its exit */
export const drainingGrace = Duration.seconds(5)
/** how long a chunk may wait for its client's acknowledgement (the time from sending it to taking the next) */
export const acknowledgementBound = Duration.minutes(5)

export class Deliveries extends Context.Tag("codex-harness/cluster/Deliveries")<Deliveries, {
  /** `stream` as it is sent, counted; `ended` is done when its turn has ended (or at once for a reply without one) */
  readonly track: <A, E, R>(stream: Stream.Stream<A, E, R>, ended: Deferred.Deferred<void>) => Stream.Stream<A, E, R>
  /**
   * until no Turn stream is being sent, or `bound` passed; then the ones still open are cut (a drain has already let
   * every turn end, so what is left after the bound waits for a client that is gone). From its call a stream whose
   * turn has ended gets `drainingGrace` instead of the whole grace. Interruptible where it runs.
   */
  readonly settled: (bound: Duration.DurationInput) => Effect.Effect<void>
}>() {}

/** Deliveries with their watchdogs: a stream still open `grace` after its turn ended, or whose chunk waited
 * `unacknowledged` for its acknowledgement, is cut */
export const make = (grace: Duration.DurationInput = deliveryGrace, unacknowledged: Duration.DurationInput = acknowledgementBound) =>
  Effect.gen(function* () {
    const ackBound = Duration.toMillis(unacknowledged)
    // looked at this often: a stream stuck on an acknowledgement is cut between the bound and a fifth more
    const ackCheck = Duration.millis(ackBound / 5)
    const draining = yield* Deferred.make<void>()
    // the open streams, each as the way to cut it (a drain waits for none to be left, and cuts what is left after its
    // bound); not a registry of turns: a stream here is one delivery of a message's events, whatever its session's
    // work is doing
    const open = yield* SubscriptionRef.make<ReadonlySet<(why: string) => Effect.Effect<void>>>(new Set())
    const cut = (sender: Fiber.RuntimeFiber<unknown, unknown>, why: string) =>
      Effect.logWarning(`cluster runner: a Turn stream ${why}; it is cut (its client is taken for gone)`).pipe(
        Effect.zipRight(Fiber.interruptFork(sender))
      )
    return Deliveries.of({
      track: <A, E, R>(stream: Stream.Stream<A, E, R>, ended: Deferred.Deferred<void>) =>
        Stream.unwrapScoped(Effect.gen(function* () {
          // this runs in the fiber that pulls the stream, the request's own
          const sender = yield* Effect.withFiberRuntime<Fiber.RuntimeFiber<unknown, unknown>>((fiber) => Effect.succeed(fiber))
          const cutThis = (why: string) => cut(sender, why)
          yield* Effect.acquireRelease(
            SubscriptionRef.update(open, (streams) => new Set(streams).add(cutThis)),
            () => SubscriptionRef.update(open, (streams) => new Set([...streams].filter((s) => s !== cutThis)))
          )
          // ended with the stream's scope when the stream completes first
          yield* Deferred.await(ended).pipe(
            Effect.zipRight(Effect.race(
              Effect.as(Effect.sleep(grace), grace),
              Effect.as(Effect.zipRight(Deferred.await(draining), Effect.sleep(drainingGrace)), drainingGrace)
            )),
            Effect.flatMap((waited) => cutThis(`was still open ${Duration.format(Duration.decode(waited))} after its turn ended`)),
            Effect.forkScoped
          )
          // When the chunk out now went out, while the sender waits for its acknowledgement; undefined while the
          // stream itself is producing (a turn may rightly take long between two events). Per stream, a plain
          // variable read by a check every fifth of the bound: no work per chunk but two assignments.
          let sentAt: number | undefined
          yield* Effect.gen(function* () {
            while (true) {
              yield* Effect.sleep(ackCheck)
              const now = yield* Clock.currentTimeMillis
              if (sentAt !== undefined && now - sentAt >= ackBound) return
            }
          }).pipe(
            Effect.zipRight(Effect.suspend(() => cutThis(`sent a chunk ${Duration.format(Duration.decode(unacknowledged))} ago that its client has not acknowledged`))),
            Effect.forkScoped
          )
          const pull = yield* Stream.toPull(stream)
          return Stream.repeatEffectChunkOption(
            Effect.suspend(() => {
              sentAt = undefined
              return pull
            }).pipe(Effect.tap(() => Clock.currentTimeMillis.pipe(Effect.map((now) => void (sentAt = now)))))
          )
        })),
      settled: (bound: Duration.DurationInput) =>
        Deferred.succeed(draining, undefined).pipe(Effect.zipRight(open.changes.pipe(
          Stream.takeUntil((streams) => streams.size === 0),
          Stream.runDrain,
          Effect.interruptible,
          Effect.timeoutOption(bound),
          Effect.zipRight(SubscriptionRef.get(open)),
          Effect.flatMap((left) =>
            Effect.forEach(left, (cutIt) => cutIt(`was still open when the drain's ${Duration.format(Duration.decode(bound))} passed`), { discard: true })
          )
        )))
    })
  })

export const layer = (grace?: Duration.DurationInput): Layer.Layer<Deliveries> => Layer.effect(Deliveries, make(grace))
