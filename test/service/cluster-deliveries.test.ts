// Deliveries (src/cluster/Deliveries.ts): the Turn streams a runner is sending. The consumer here plays the entity's
// RPC server as @effect/cluster 0.60 runs it: it takes a chunk, sends it, and waits for the client's acknowledgement
// before it takes the next; a client that is gone never acknowledges, so its consumer waits forever. On TestClock:
// - such a stream is cut `grace` after its turn ended (not before), and the runner's count of open streams drops;
// - a stream whose client acknowledges runs to its end untouched, however long its turn takes;
// - a drain's `settled` returns once the streams are done, and after its bound cuts the ones still open;
// - once a drain has begun, a stuck stream whose turn has ended is cut after the shorter draining grace;
// - a stream whose first chunk is never acknowledged (its turn never starts) is cut after the acknowledgement bound,
//   while a stream whose client acknowledges is not, however long its turn takes between two events.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Option, Stream, TestClock, TestServices } from "effect"
import * as Deliveries from "../../src/cluster/Deliveries.js"

const grace = Duration.seconds(30)

/** how the fiber ended, waited for on the real clock (bounded: a fiber left running fails the check, not the run) */
const exitOf = <A, E>(fiber: Fiber.Fiber<A, E>) =>
  TestServices.provideLive(Fiber.await(fiber).pipe(Effect.timeoutOption("10 seconds"))).pipe(
    Effect.map(Option.getOrElse((): Exit.Exit<A, E> | "still running" => "still running"))
  )
const interrupted = (exit: Exit.Exit<unknown, unknown> | "still running") => exit !== "still running" && Exit.isInterrupted(exit)
const succeeded = (exit: Exit.Exit<unknown, unknown> | "still running") => exit !== "still running" && Exit.isSuccess(exit)

/** runs `stream` as the entity's RPC server does: after each element, an acknowledgement (`acked`) before the next */
const consume = <A>(stream: Stream.Stream<A>, acked: (element: A) => Effect.Effect<void>) =>
  Stream.runForEach(stream, acked).pipe(Effect.fork)

/** a Turn's stream: its first event at once, the rest when `turnEnds` is done */
const turn = (turnEnds: Deferred.Deferred<void>) =>
  Stream.concat(Stream.make("session.selected"), Stream.fromEffect(Effect.as(Deferred.await(turnEnds), "turn.completed")))

/** a runner's Deliveries and one Turn's two signals: `turnEnds` (its last event) and `ended` (its outcome recorded) */
const oneTurn = Effect.all({ deliveries: Deliveries.make(grace), ended: Deferred.make<void>(), turnEnds: Deferred.make<void>() })

/** what a drain makes of a runner with no stream left: it is done at once */
const settlesAtOnce = (deliveries: Deliveries.Deliveries["Type"]) =>
  Effect.flatMap(Effect.fork(deliveries.settled("1 second")), exitOf).pipe(Effect.map(succeeded))

/** a client gone once the first chunk reached it: it never acknowledges; returned once that chunk went out */
const goneAfterFirstChunk = <A>(stream: Stream.Stream<A>) =>
  Effect.gen(function* () {
    const sent = yield* Deferred.make<void>()
    const sender = yield* consume(stream, () => Effect.zipRight(Deferred.succeed(sent, undefined), Effect.never))
    yield* Deferred.await(sent)
    return sender
  })

describe("cluster deliveries", () => {
  it.scoped("a stream whose client never acknowledges is cut once its turn has ended and the grace has passed", () =>
    Effect.gen(function* () {
      const { deliveries, ended, turnEnds } = yield* oneTurn
      // the first chunk goes out; its acknowledgement never comes
      const sender = yield* goneAfterFirstChunk(deliveries.track(turn(turnEnds), ended))
      // a turn that runs longer than the grace is not cut while it runs
      yield* TestClock.adjust(Duration.times(grace, 3))
      expect(Option.isNone(yield* Fiber.poll(sender))).toBe(true)
      yield* Deferred.succeed(turnEnds, undefined)
      yield* Deferred.succeed(ended, undefined)
      yield* TestClock.adjust(Duration.subtract(grace, Duration.seconds(1)))
      expect(Option.isNone(yield* Fiber.poll(sender))).toBe(true)
      yield* TestClock.adjust(Duration.seconds(1))
      expect(interrupted(yield* exitOf(sender))).toBe(true)
      // nothing is counted as being sent any more: a drain does not wait for it
      expect(yield* settlesAtOnce(deliveries)).toBe(true)
    }))

  it.scoped("a stream whose client acknowledges runs to its end and is never cut", () =>
    Effect.gen(function* () {
      const { deliveries, ended, turnEnds } = yield* oneTurn
      const received: Array<string> = []
      const sender = yield* consume(deliveries.track(turn(turnEnds), ended), (e) => Effect.sync(() => void received.push(e)))
      yield* TestClock.adjust(Duration.times(grace, 2))
      yield* Deferred.succeed(turnEnds, undefined)
      yield* Deferred.succeed(ended, undefined)
      expect(succeeded(yield* exitOf(sender))).toBe(true)
      expect(received).toEqual(["session.selected", "turn.completed"])
      // its watchdog went with it: nothing is cut later
      yield* TestClock.adjust(Duration.times(grace, 2))
      expect(yield* settlesAtOnce(deliveries)).toBe(true)
    }))

  it.scoped("a drain waits for the open streams within its bound, then cuts the ones left", () =>
    Effect.gen(function* () {
      const deliveries = yield* Deliveries.make(grace)
      const finishing = yield* Deferred.make<void>()
      const finishingEnds = yield* Deferred.make<void>()
      // one stream finishes during the drain; the other's client is gone and its turn has not told it ended
      const finisher = yield* consume(deliveries.track(turn(finishingEnds), finishing), () => Effect.void)
      const stuck = yield* goneAfterFirstChunk(deliveries.track(turn(yield* Deferred.make<void>()), yield* Deferred.make<void>()))
      const settled = yield* deliveries.settled("10 seconds").pipe(Effect.fork)
      yield* Deferred.succeed(finishingEnds, undefined)
      expect(succeeded(yield* exitOf(finisher))).toBe(true)
      yield* TestClock.adjust("9 seconds")
      expect(Option.isNone(yield* Fiber.poll(settled))).toBe(true)
      expect(Option.isNone(yield* Fiber.poll(stuck))).toBe(true)
      yield* TestClock.adjust("1 second")
      expect(succeeded(yield* exitOf(settled))).toBe(true)
      expect(interrupted(yield* exitOf(stuck))).toBe(true)
    }))

  it.scoped("once a drain begins, a stream whose turn has ended is cut after the draining grace, not the whole grace", () =>
    Effect.gen(function* () {
      const { deliveries, ended, turnEnds } = yield* oneTurn
      const stuck = yield* goneAfterFirstChunk(deliveries.track(turn(turnEnds), ended))
      yield* Deferred.succeed(ended, undefined)
      const settled = yield* deliveries.settled("10 seconds").pipe(Effect.fork)
      yield* TestClock.adjust(Duration.subtract(Deliveries.drainingGrace, Duration.millis(1)))
      expect(Option.isNone(yield* Fiber.poll(stuck))).toBe(true)
      yield* TestClock.adjust(Duration.millis(1))
      expect(interrupted(yield* exitOf(stuck))).toBe(true)
      // the drain is done with it before its own bound
      expect(succeeded(yield* exitOf(settled))).toBe(true)
    }))

  it.scoped("a chunk left unacknowledged is cut after the acknowledgement bound; a turn slow between events is not", () =>
    Effect.gen(function* () {
      const deliveries = yield* Deliveries.make(grace, "5 minutes")
      const slowTurnEnds = yield* Deferred.make<void>()
      const received: Array<string> = []
      // gone before it acknowledged `session.selected`: the turn never started, nothing says it ended
      const stuck = yield* goneAfterFirstChunk(deliveries.track(turn(yield* Deferred.make<void>()), yield* Deferred.make<void>()))
      // a client that acknowledges, on a turn that takes 20 minutes to its next event
      const slow = yield* consume(deliveries.track(turn(slowTurnEnds), yield* Deferred.make<void>()), (e) => Effect.sync(() => void received.push(e)))
      yield* TestClock.adjust("4 minutes")
      expect(Option.isNone(yield* Fiber.poll(stuck))).toBe(true)
      yield* TestClock.adjust("2 minutes")
      expect(interrupted(yield* exitOf(stuck))).toBe(true)
      yield* TestClock.adjust("14 minutes")
      expect(Option.isNone(yield* Fiber.poll(slow))).toBe(true)
      yield* Deferred.succeed(slowTurnEnds, undefined)
      expect(succeeded(yield* exitOf(slow))).toBe(true)
      expect(received).toEqual(["session.selected", "turn.completed"])
    }))
})
