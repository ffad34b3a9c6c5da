// TurnStream (one message of a session as a stream of control events) over a real EventHub and a session work
// registry that only hands out the run that carries the message, so the test publishes that run's events itself:
// - the stream carries the run's events between its start and end marks, and its outcome (replies, terminal event) is
//   what `onFinished` gets;
// - a caller whose stream is cut mid-run (the cluster stops a Turn's stream under a moving shard) still gets the whole
//   outcome recorded when the following lives in a scope of its own (`followIn`, the runner's), and without it loses
//   what the run published after the cut (the positive control: this is what the cluster's ledger replayed before);
// - a caller interrupted while the registry takes the message is told it was taken (onSubmitted) before it stops;
// - the run's Recorded mark has the outcome told from the run's own fiber (once), and without it the run's wait is bounded.
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Scope, Stream, TestClock } from "effect"
import type { ControlEvent } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import * as EventHub from "../../src/control/EventHub.js"
import * as TurnStream from "../../src/control/TurnStream.js"
import type { HarnessError, TurnResult } from "../../src/harness/CodexHarness.js"
import { SessionWork, type SessionWorkService, type SubmitOptions } from "../../src/harness/SessionWork.js"

const runId = 7
const reply = (text: string): ControlEvent => ({ type: "reply", version: eventsVersion, session_id: "s1", source: "final", text, media: [] })
const completed: ControlEvent = { type: "turn.completed", version: eventsVersion, session_id: "s1", thread_id: "t1", turn_id: "u1", final_text: "done", usage: null }
const result: TurnResult = {
  threadId: "t1", turnId: "u1", status: "completed", finalText: "done", items: [], error: undefined, delivered: true, media: [], model: undefined
}

/** the registry's part: one message, carried by run 7 at once; what the sender asked to be told when it ends is kept */
const fakeWork = (told: Deferred.Deferred<SubmitOptions>) => {
  const submit: SessionWorkService["submit"] = (_sessionId, _text, options) =>
    Deferred.succeed(told, options ?? {}).pipe(Effect.as({
      seq: 1,
      disposition: "start" as const,
      mode: "steer" as const,
      carried: Effect.succeed({ _tag: "Turn" as const, prompt: "hi", runId }),
      reply: Effect.succeed(result)
    }))
  // the stream asks the registry for nothing else
  return Layer.succeed(SessionWork, { submit } as unknown as SessionWorkService)
}

/** starts a message's stream in a scope of its own, takes events up to the run's first one, then cuts the stream */
const cutMidRun = (followIn: "runner" | "caller") =>
  Effect.gen(function* () {
    const told = yield* Deferred.make<SubmitOptions>()
    const finished = yield* Deferred.make<ReadonlyArray<ControlEvent>>()
    const context = yield* Layer.build(Layer.merge(EventHub.layer, fakeWork(told)))
    const hub = Context.get(context, EventHub.EventHub)
    const runnerScope = yield* Effect.scope
    const caller = yield* Scope.make()
    const stream = yield* TurnStream.start({
      sessionId: "s1",
      prompt: "hi",
      onFinished: (outcome) => Deferred.succeed(finished, outcome).pipe(Effect.asVoid),
      ...(followIn === "runner" ? { followIn: runnerScope } : {})
    }).pipe(Effect.provide(context), Scope.extend(caller))
    yield* hub.start("s1", runId)
    yield* hub.publish("s1", reply("before the cut"))
    const seen = yield* Stream.runCollect(Stream.take(stream, 2)).pipe(Scope.extend(caller))
    expect([...seen].map((e) => e.type)).toEqual(["message.accepted", "reply"])
    // the caller goes away with the run under way; the run goes on and ends
    yield* Scope.close(caller, Exit.void)
    yield* hub.publish("s1", reply("after the cut"))
    yield* hub.publish("s1", completed, runId)
    yield* hub.end("s1", runId)
    const options = yield* Deferred.await(told)
    yield* options.onEnded!(Exit.succeed(result) as Exit.Exit<TurnResult, HarnessError>)
    return yield* Deferred.await(finished)
  }).pipe(Effect.timeout("10 seconds"))

/** a message's stream whose run has started and published its turn.completed; every outcome told is kept */
const completedRun = Effect.gen(function* () {
  const told = yield* Deferred.make<SubmitOptions>()
  const outcomes: Array<ReadonlyArray<ControlEvent>> = []
  const context = yield* Layer.build(Layer.merge(EventHub.layer, fakeWork(told)))
  const hub = Context.get(context, EventHub.EventHub)
  const stream = yield* TurnStream.start({ sessionId: "s1", prompt: "hi", onFinished: (o) => Effect.sync(() => void outcomes.push(o)) })
    .pipe(Effect.provide(context))
  const options = yield* Deferred.await(told)
  yield* hub.start("s1", runId)
  yield* hub.publish("s1", completed, runId)
  return { hub, options, outcomes, stream }
})

describe("TurnStream", () => {
  it.scoped("a stream read to its end carries the run's events, and onFinished gets its replies and terminal event", () =>
    Effect.gen(function* () {
      const told = yield* Deferred.make<SubmitOptions>()
      const finished = yield* Deferred.make<ReadonlyArray<ControlEvent>>()
      const context = yield* Layer.build(Layer.merge(EventHub.layer, fakeWork(told)))
      const hub = Context.get(context, EventHub.EventHub)
      const stream = yield* TurnStream.start({ sessionId: "s1", prompt: "hi", onFinished: (o) => Deferred.succeed(finished, o).pipe(Effect.asVoid) })
        .pipe(Effect.provide(context))
      // another session's run and events are not this message's
      yield* hub.start("s2", 3)
      yield* hub.publish("s2", { type: "reply", version: eventsVersion, session_id: "s2", source: "final", text: "elsewhere", media: [] })
      yield* hub.start("s1", runId)
      yield* hub.publish("s1", reply("one"))
      yield* hub.publish("s1", completed, runId)
      yield* hub.end("s1", runId)
      const events = [...yield* Stream.runCollect(stream).pipe(Effect.timeout("10 seconds"))]
      expect(events.map((e) => e.type)).toEqual(["message.accepted", "reply", "turn.completed"])
      yield* (yield* Deferred.await(told)).onEnded!(Exit.succeed(result) as Exit.Exit<TurnResult, HarnessError>)
      expect(yield* Deferred.await(finished)).toEqual([reply("one"), completed])
    }))

  it.scoped("the run's Recorded mark has onFinished told on the run's fiber, before its End mark; onEnded after it does not tell it again", () =>
    Effect.gen(function* () {
      const { hub, options, outcomes, stream } = yield* completedRun
      yield* hub.publish("s1", reply("one"))
      yield* hub.recorded("s1", runId)
      // what the run does once its end is recorded, before its scope closes: the outcome is told by the time it returns
      yield* options.onRecorded!(result)
      expect(outcomes).toEqual([[completed, reply("one")]])
      yield* hub.end("s1", runId)
      expect([...yield* Stream.runCollect(stream)].map((e) => e.type)).toEqual(["message.accepted", "turn.completed", "reply"])
      yield* options.onEnded!(Exit.succeed(result) as Exit.Exit<TurnResult, HarnessError>)
      expect(outcomes).toHaveLength(1)
    }))

  it.scoped("without a Recorded mark the run waits for it only within its bound (TestClock), and onEnded tells the outcome (control)", () =>
    Effect.gen(function* () {
      const { hub, options, outcomes, stream } = yield* completedRun
      const waiting = yield* Effect.fork(options.onRecorded!(result))
      yield* TestClock.adjust("2 seconds")
      yield* Fiber.join(waiting)
      expect(outcomes).toEqual([])
      yield* hub.end("s1", runId)
      yield* Stream.runDrain(stream)
      yield* options.onEnded!(Exit.succeed(result) as Exit.Exit<TurnResult, HarnessError>)
      expect(outcomes).toEqual([[completed]])
    }))

  it.scoped("a stream cut mid-run still records every reply of the run when it is followed in the runner's scope", () =>
    Effect.gen(function* () {
      expect(yield* cutMidRun("runner")).toEqual([reply("before the cut"), reply("after the cut"), completed])
    }))

  it.scoped("a caller interrupted while the registry takes the message still hears onSubmitted: the message is never queued untold", () =>
    Effect.gen(function* () {
      const entered = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const told = yield* Deferred.make<SubmitOptions>()
      // a registry that takes its time over the message, and has it once it answers
      const submit: SessionWorkService["submit"] = (_sessionId, _text, options) =>
        Deferred.succeed(entered, undefined).pipe(
          Effect.zipRight(Deferred.await(gate)),
          Effect.zipRight(Deferred.succeed(told, options ?? {})),
          Effect.as({
            seq: 1,
            disposition: "start" as const,
            mode: "steer" as const,
            carried: Effect.never,
            reply: Effect.succeed(result)
          })
        )
      const context = yield* Layer.build(Layer.merge(EventHub.layer, Layer.succeed(SessionWork, { submit } as unknown as SessionWorkService)))
      let handedOver = false
      const starting = yield* TurnStream.start({
        sessionId: "s1",
        prompt: "hi",
        onSubmitted: Effect.sync(() => void (handedOver = true)),
        onFinished: () => Effect.void
      }).pipe(Effect.provide(context), Effect.scoped, Effect.fork)
      yield* Deferred.await(entered)
      // the caller goes away (its serve died) while the registry takes the message
      const interrupting = yield* Effect.fork(Fiber.interrupt(starting))
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(interrupting)
      // the registry has the message, and the caller was told so before it stopped: the cluster keeps the claim
      expect(Option.isSome(yield* Deferred.poll(told))).toBe(true)
      expect(handedOver).toBe(true)
    }).pipe(Effect.timeout("10 seconds")))

  it.scoped("followed in the caller's scope, a cut loses what the run said after it (control): only a terminal made from the result is left", () =>
    Effect.gen(function* () {
      const outcome = yield* cutMidRun("caller")
      expect(outcome).toEqual([reply("before the cut"), expect.objectContaining({ type: "turn.completed", final_text: "done" })])
      expect(outcome).not.toContainEqual(reply("after the cut"))
    }))

  it.scoped("EventHub.delivered waits while a tracked stream is being read, and is done once it ends (serve's shutdown waits on it)", () =>
    Effect.gen(function* () {
      const hub = Context.get(yield* Layer.build(EventHub.layer), EventHub.EventHub)
      // nothing tracked: done at once
      yield* hub.delivered.pipe(Effect.timeout("60 seconds"))
      const opened = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const reading = yield* Stream.runDrain(hub.track(Stream.fromEffect(Deferred.succeed(opened, undefined).pipe(Effect.zipRight(Deferred.await(gate)))))).pipe(Effect.fork)
      yield* Deferred.await(opened)
      const delivered = yield* Effect.fork(hub.delivered)
      yield* Effect.yieldNow()
      expect(Option.isNone(yield* Fiber.poll(delivered))).toBe(true)
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(reading)
      yield* Fiber.join(delivered).pipe(Effect.timeout("60 seconds"))
    }))
})
