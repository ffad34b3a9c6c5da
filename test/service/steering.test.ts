// The session work registry (SessionWork: the steering queue of S35 and the session's run) against the in-memory
// app-server, on the TestClock: steer batching over the quiet window, turns that refuse steering, a turn that just
// ended, followup and collect, the bound, /queue, the field failures "steering messages stuck in the queue after one
// follow-up" and "steering silently disabled for later messages", a manual compaction as the session's run, and the
// drain on shutdown (a grace, then withdrawal and interruption, then a bound).
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Option, Scope, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { type ClientRequest, type Handler, MockAppServer, type MockPeer, type MockScript } from "../../src/testing/MockAppServer.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { QueueFull, SessionWork, type SessionWorkOptions, layer as steeringLayer } from "../../src/harness/SessionWork.js"
import { untilHolds } from "../support/untilHolds.js"

const layer = (script: MockScript = {}, options: SessionWorkOptions = {}) =>
  steeringLayer(options).pipe(Layer.provideMerge(Test.layer({ script: { turns: "hang", ...script } })))

/** turn/steer as the real server answers it: the active turn's id, or the errors it gives without one */
const steerOk: Handler = (params: { threadId: string; expectedTurnId?: string }, ctx) =>
  Effect.gen(function* () {
    const active = yield* ctx.activeTurn(params.threadId)
    if (Option.isNone(active)) return yield* Effect.fail({ code: -32600, message: "no active turn to steer" })
    if (active.value !== params.expectedTurnId) {
      return yield* Effect.fail({
        code: -32600,
        message: `expected active turn id \`${params.expectedTurnId}\` but found \`${active.value}\``
      })
    }
    return { turnId: active.value }
  })

/** the real answer to turn/steer during a manual compaction */
const compactTurnRefuses: Handler = () =>
  Effect.fail({
    code: -32600,
    message: "cannot steer a compact turn",
    data: {
      message: "cannot steer a compact turn",
      codexErrorInfo: { activeTurnNotSteerable: { turnKind: "compact" } },
      additionalDetails: null,
      misalignment: null
    }
  })

const paramsOf = (request: ClientRequest) => request.params as Record<string, any>
const promptOf = (request: ClientRequest) => (paramsOf(request).input as Array<{ text: string }>).at(-1)!.text
const prompts = Effect.flatMap(MockAppServer, (mock) => mock.requests("turn/start")).pipe(Effect.map((rs) => rs.map(promptOf)))
const steers = Effect.flatMap(MockAppServer, (mock) => mock.requests("turn/steer")).pipe(Effect.map((rs) => rs.map(paramsOf)))

/** waits for the n-th turn/start to be answered and its turn to be running; yields where it runs */
const nthTurn = (n: number) =>
  Effect.gen(function* () {
    const mock = yield* MockAppServer
    const request = yield* mock.awaitRequest("turn/start", n)
    const peer = yield* mock.awaitPeer(request.peer)
    const threadId = paramsOf(request).threadId as string
    const turnId = yield* peer.awaitActiveTurn(threadId)
    return { threadId, turnId, finish: (text?: string) => peer.finishTurn(threadId, text === undefined ? {} : { text }) }
  })

/** lets forked fibers run while the TestClock stands still */
const settle = Effect.forEach(Array.from({ length: 50 }), () => Effect.yieldNow(), { discard: true })

const waitUntil = <R>(check: Effect.Effect<boolean, never, R>) => untilHolds(check)

const queuedTexts = (sessionId: string) =>
  Effect.flatMap(SessionWork, (q) => q.status(sessionId)).pipe(Effect.map((s) => s.queued.map((m) => m.text)))

/** everything settled: no run, no queue, no state kept for the session */
const expectSettled = (sessionId: string) =>
  Effect.gen(function* () {
    const q = yield* SessionWork
    yield* q.idle(sessionId)
    const status = yield* q.status(sessionId)
    expect(status.running).toBe(false)
    expect(status.queued).toEqual([])
    expect(yield* q.sessions).toEqual([])
  })

describe("steering queue", () => {
  it.scoped("[S35] steer mode batches three messages into one turn/steer with expectedTurnId, in arrival order, after a 500 ms quiet window that restarts on each message", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const first = yield* q.submit("s1", "start the job")
      expect(first.disposition).toBe("start")
      const turn = yield* nthTurn(1)

      const one = yield* q.submit("s1", "one")
      yield* TestClock.adjust("200 millis")
      const two = yield* q.submit("s1", "two")
      yield* TestClock.adjust("200 millis")
      const three = yield* q.submit("s1", "three")
      expect([one, two, three].map((s) => s.disposition)).toEqual(["steer", "steer", "steer"])

      // 500 ms after the first message: the window restarted with the second and the third
      yield* TestClock.adjust("100 millis")
      yield* settle
      expect(yield* steers).toEqual([])
      // 499 ms after the last
      yield* TestClock.adjust("399 millis")
      yield* settle
      expect(yield* steers).toEqual([])
      expect(yield* queuedTexts("s1")).toEqual(["one", "two", "three"])
      // 500 ms after the last
      yield* TestClock.adjust("1 millis")
      const mock = yield* MockAppServer
      yield* mock.awaitRequest("turn/steer")
      // carried by the run the first message started: the same run id its events carry
      const { runId } = yield* first.carried
      for (const s of [one, two, three]) expect(yield* s.carried).toEqual({ _tag: "Steered", turnId: turn.turnId, runId })
      expect(yield* steers).toEqual([
        {
          threadId: turn.threadId,
          expectedTurnId: turn.turnId,
          input: [{ type: "text", text: "one" }, { type: "text", text: "two" }, { type: "text", text: "three" }]
        }
      ])
      expect(yield* queuedTexts("s1")).toEqual([])

      yield* turn.finish("all four answered")
      for (const s of [first, one, two, three]) {
        expect(yield* s.reply).toMatchObject({ turnId: turn.turnId, finalText: "all four answered" })
      }
      expect(yield* prompts).toEqual(["start the job"])
      yield* expectSettled("s1")
    }).pipe(Effect.provide(layer({ handlers: { "turn/steer": steerOk } }))))

  it.scoped("[S35] a turn that refuses steering (-32600 activeTurnNotSteerable) keeps the messages, in order, for exactly one next turn; a later message in a later run is steered again", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const mock = yield* MockAppServer
      const first = yield* q.submit("n1", "compact and go on")
      const turn1 = yield* nthTurn(1)
      const x = yield* q.submit("n1", "x")
      const y = yield* q.submit("n1", "y")
      yield* TestClock.adjust("500 millis")
      yield* mock.awaitRequest("turn/steer")
      expect((yield* steers)[0]).toMatchObject({ expectedTurnId: turn1.turnId, input: [{ text: "x" }, { text: "y" }] })
      yield* waitUntil(Effect.map(queuedTexts("n1"), (texts) => texts.length === 2))
      // the refusal holds for this run: a message arriving later in it waits too, without another turn/steer
      const z = yield* q.submit("n1", "z")
      yield* TestClock.adjust("500 millis")
      yield* settle
      expect(yield* steers).toHaveLength(1)
      expect(yield* queuedTexts("n1")).toEqual(["x", "y", "z"])
      expect(Option.isNone(yield* Effect.fork(x.carried).pipe(Effect.flatMap(Fiber.poll)))).toBe(true)

      yield* turn1.finish()
      const turn2 = yield* nthTurn(2)
      expect(yield* prompts).toEqual(["compact and go on", "x\n\ny\n\nz"])
      for (const s of [x, y, z]) expect(yield* s.carried).toMatchObject({ _tag: "Turn", prompt: "x\n\ny\n\nz" })

      // the next run is steerable again
      yield* mock.setHandler("turn/steer", steerOk)
      const later = yield* q.submit("n1", "later")
      expect(later.disposition).toBe("steer")
      yield* TestClock.adjust("500 millis")
      yield* mock.awaitRequest("turn/steer", 2)
      expect((yield* steers)[1]).toEqual({ threadId: turn2.threadId, expectedTurnId: turn2.turnId, input: [{ type: "text", text: "later" }] })
      expect(yield* later.carried).toMatchObject({ _tag: "Steered", turnId: turn2.turnId })

      yield* turn2.finish()
      expect((yield* first.reply).turnId).toBe(turn1.turnId)
      for (const s of [x, y, z, later]) expect((yield* s.reply).turnId).toBe(turn2.turnId)
      expect(yield* prompts).toHaveLength(2)
      yield* expectSettled("n1")
    }).pipe(Effect.provide(layer({ handlers: { "turn/steer": compactTurnRefuses } }))))

  it.scoped("[S35] a steer that finds the turn just ended (NoActiveTurn) starts a new turn with the messages", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const mock = yield* MockAppServer
      // the turn ends on the server just before the steer reaches it
      yield* mock.setHandler("turn/steer", (params: { threadId: string }, ctx) =>
        ctx.finishTurn(params.threadId, { text: "finished first" }).pipe(
          Effect.zipRight(Effect.fail({ code: -32600, message: "no active turn to steer" }))
        ))
      const first = yield* q.submit("e1", "first")
      const turn1 = yield* nthTurn(1)
      const late = yield* q.submit("e1", "late")
      yield* TestClock.adjust("500 millis")
      const turn2 = yield* nthTurn(2)
      expect(yield* late.carried).toMatchObject({ _tag: "Turn", prompt: "late" })
      expect(yield* prompts).toEqual(["first", "late"])
      yield* turn2.finish("late answered")
      expect(yield* first.reply).toMatchObject({ turnId: turn1.turnId, finalText: "finished first" })
      expect(yield* late.reply).toMatchObject({ turnId: turn2.turnId, finalText: "late answered" })
      expect(yield* steers).toHaveLength(1)
      yield* expectSettled("e1")
    }).pipe(Effect.provide(layer())))

  it.scoped("[S35] followup mode: each queued message becomes its own turn after the running one, in order; nothing is steered", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const mock = yield* MockAppServer
      expect(yield* q.mode("f1")).toBe("followup")
      const first = yield* q.submit("f1", "first")
      const turn1 = yield* nthTurn(1)
      const queued = [yield* q.submit("f1", "a"), yield* q.submit("f1", "b"), yield* q.submit("f1", "c")]
      expect(queued.map((s) => s.disposition)).toEqual(["queue", "queue", "queue"])
      yield* TestClock.adjust("5 seconds")
      yield* settle
      expect(yield* steers).toEqual([])
      expect(yield* queuedTexts("f1")).toEqual(["a", "b", "c"])
      yield* mock.setTurnMode("complete")
      yield* turn1.finish()
      const results = [yield* first.reply, ...(yield* Effect.forEach(queued, (s) => s.reply))]
      expect(yield* prompts).toEqual(["first", "a", "b", "c"])
      expect(new Set(results.map((r) => r.turnId)).size).toBe(4)
      for (const [i, s] of queued.entries()) expect(yield* s.carried).toMatchObject({ _tag: "Turn", prompt: ["a", "b", "c"][i] })
      yield* expectSettled("f1")
    }).pipe(Effect.provide(layer({ handlers: { "turn/steer": steerOk } }, { mode: "followup" }))))

  it.scoped("[S35] collect mode: all queued messages become one turn after the running one, joined by blank lines", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const mock = yield* MockAppServer
      yield* q.setMode("c1", "collect")
      const first = yield* q.submit("c1", "first")
      const turn1 = yield* nthTurn(1)
      const queued = [yield* q.submit("c1", "a"), yield* q.submit("c1", "b"), yield* q.submit("c1", "c")]
      expect(queued.map((s) => s.disposition)).toEqual(["queue", "queue", "queue"])
      yield* TestClock.adjust("5 seconds")
      yield* mock.setTurnMode("complete")
      yield* turn1.finish()
      const results = yield* Effect.forEach(queued, (s) => s.reply)
      expect(yield* prompts).toEqual(["first", "a\n\nb\n\nc"])
      expect(new Set(results.map((r) => r.turnId)).size).toBe(1)
      expect(results[0]!.turnId).not.toBe((yield* first.reply).turnId)
      expect(yield* steers).toEqual([])
      yield* expectSettled("c1")
    }).pipe(Effect.provide(layer({ handlers: { "turn/steer": steerOk } }))))

  it.scoped("[S35] at most 64 messages wait per session: the 65th is refused with QueueFull and nothing is dropped", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const mock = yield* MockAppServer
      yield* q.submit("q1", "first")
      const turn1 = yield* nthTurn(1)
      const texts = Array.from({ length: 64 }, (_, i) => `m${i}`)
      const accepted = yield* Effect.forEach(texts, (text) => q.submit("q1", text))
      const refused = yield* q.submit("q1", "one too many").pipe(Effect.flip)
      expect(refused).toBeInstanceOf(QueueFull)
      expect(refused).toMatchObject({ _tag: "QueueFull", sessionId: "q1", limit: 64 })
      expect(refused.message).toContain("64 messages waiting")
      expect(yield* queuedTexts("q1")).toEqual(texts)
      // another session is not affected
      expect((yield* q.submit("q2", "elsewhere")).disposition).toBe("start")
      yield* mock.setTurnMode("complete")
      yield* turn1.finish()
      yield* Effect.forEach(accepted, (s) => s.reply, { discard: true })
      expect((yield* prompts).filter((p) => p.startsWith("m"))).toEqual(texts)
      yield* expectSettled("q1")
      yield* q.idle("q2")
      // the bound is per waiting message: once drained, the session takes messages again
      expect((yield* q.submit("q1", "again")).disposition).toBe("start")
      yield* expectSettled("q1")
    }).pipe(Effect.provide(layer({ handlers: { "turn/steer": steerOk } }, { mode: "followup" }))))

  it.scoped("[S35] setMode switches the behaviour of later messages only (/queue followup, then /queue steer)", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const mock = yield* MockAppServer
      expect(yield* q.mode("m1")).toBe("steer")
      yield* q.submit("m1", "first")
      const turn1 = yield* nthTurn(1)
      yield* q.setMode("m1", "followup")
      const queued = yield* q.submit("m1", "queued one")
      yield* q.setMode("m1", "steer")
      const steered = yield* q.submit("m1", "steered one")
      expect([queued.mode, steered.mode]).toEqual(["followup", "steer"])
      expect([queued.disposition, steered.disposition]).toEqual(["queue", "steer"])
      expect(yield* q.mode("m1")).toBe("steer")
      yield* TestClock.adjust("500 millis")
      yield* mock.awaitRequest("turn/steer")
      expect(yield* steered.carried).toMatchObject({ _tag: "Steered", turnId: turn1.turnId })
      expect((yield* steers)[0]!.input).toEqual([{ type: "text", text: "steered one" }])
      yield* turn1.finish()
      const turn2 = yield* nthTurn(2)
      expect(yield* prompts).toEqual(["first", "queued one"])
      yield* turn2.finish()
      expect((yield* queued.reply).turnId).toBe(turn2.turnId)
      expect((yield* steered.reply).turnId).toBe(turn1.turnId)
      // the mode outlives the session's idle state
      yield* q.setMode("m1", "collect")
      yield* expectSettled("m1")
      expect(yield* q.mode("m1")).toBe("collect")
      expect(yield* q.mode("other")).toBe("steer")
    }).pipe(Effect.provide(layer({ handlers: { "turn/steer": steerOk } }))))

  it.scoped("[S35] nothing stays in the queue once everything settles, across follow-ups, refusals and steers (field failure: stuck after one follow-up, steering disabled later)", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const mock = yield* MockAppServer
      let turns = 0
      const nextTurn = Effect.suspend(() => nthTurn(++turns))
      for (let round = 0; round < 3; round++) {
        // a follow-up after a run
        yield* q.setMode("z1", "followup")
        const opener = yield* q.submit("z1", `open ${round}`)
        const run = yield* nextTurn
        const follow = yield* q.submit("z1", `follow ${round}`)
        yield* run.finish()
        const followRun = yield* nextTurn
        expect(yield* follow.carried).toMatchObject({ _tag: "Turn", prompt: `follow ${round}` })
        // steering into the follow-up run, then a refused steer into it
        yield* q.setMode("z1", "steer")
        const steered = yield* q.submit("z1", `steer ${round}`)
        yield* TestClock.adjust("500 millis")
        expect(yield* steered.carried).toMatchObject({ _tag: "Steered", turnId: followRun.turnId })
        yield* mock.setHandler("turn/steer", compactTurnRefuses)
        const refused = yield* q.submit("z1", `refused ${round}`)
        yield* TestClock.adjust("500 millis")
        yield* mock.awaitRequest("turn/steer", 2 * round + 2)
        yield* mock.setHandler("turn/steer", steerOk)
        yield* followRun.finish()
        const heldRun = yield* nextTurn
        expect(yield* refused.carried).toMatchObject({ _tag: "Turn", prompt: `refused ${round}` })
        // steering is not disabled after the refusal
        const again = yield* q.submit("z1", `again ${round}`)
        yield* TestClock.adjust("500 millis")
        expect(yield* again.carried).toMatchObject({ _tag: "Steered", turnId: heldRun.turnId })
        yield* heldRun.finish()
        for (const s of [opener, follow, steered, refused, again]) expect(Exit.isSuccess(yield* Effect.exit(s.reply))).toBe(true)
        yield* expectSettled("z1")
      }
      expect(yield* steers).toHaveLength(9)
      expect(yield* prompts).toHaveLength(9)
    }).pipe(Effect.provide(layer({ handlers: { "turn/steer": steerOk } }))))

  it.scoped("[S35] interrupt stops the running turn only; cancelQueued withdraws waiting messages and interrupts their waiters", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      yield* q.setMode("i1", "followup")
      const first = yield* q.submit("i1", "long job")
      yield* nthTurn(1)
      // the harness has the turn's id (an interrupt before that cannot reach the app-server's turn)
      yield* waitUntil(Effect.map(q.status("i1"), (s) => s.turnId !== undefined))
      const next = yield* q.submit("i1", "after the interrupt")
      expect(yield* q.interrupt("i1")).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(first.reply))).toBe(true)
      const turn2 = yield* nthTurn(2)
      expect(yield* next.carried).toMatchObject({ _tag: "Turn", prompt: "after the interrupt" })
      const withdrawn = yield* q.submit("i1", "never mind")
      expect((yield* q.cancelQueued("i1")).map((m) => m.text)).toEqual(["never mind"])
      expect(Exit.isInterrupted(yield* Effect.exit(withdrawn.reply))).toBe(true)
      yield* turn2.finish()
      expect((yield* next.reply).turnId).toBe(turn2.turnId)
      expect(yield* prompts).toEqual(["long job", "after the interrupt"])
      yield* expectSettled("i1")
      expect(yield* q.interrupt("i1")).toBe(false)
    }).pipe(Effect.provide(layer())))

  it.scoped("[S35] closing the layer interrupts the running turn, the timers and every waiter", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(layer(), scope)
      const q = Context.get(context, SessionWork)
      const mock = Context.get(context, MockAppServer)
      const running = yield* q.submit("x1", "running")
      yield* mock.awaitRequest("turn/start")
      const steering = yield* q.submit("x1", "in the window")
      yield* Scope.close(scope, Exit.void)
      expect(Exit.isInterrupted(yield* Effect.exit(running.reply))).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(steering.reply))).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(steering.carried))).toBe(true)
      expect(yield* q.sessions).toEqual([])
      expect(Exit.isInterrupted(yield* Effect.exit(q.submit("x1", "too late")))).toBe(true)
    }))

  it.scoped("[S35] drain with nothing running returns at once and refuses new messages and compactions (ShuttingDown)", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      expect(yield* q.drain("30 seconds", "10 seconds")).toEqual({ interrupted: 0 })
      expect(yield* q.draining).toBe(true)
      expect((yield* q.submit("d0", "late").pipe(Effect.flip))._tag).toBe("ShuttingDown")
      expect((yield* q.compact("d0").pipe(Effect.flip))._tag).toBe("ShuttingDown")
      expect(yield* prompts).toEqual([])
    }).pipe(Effect.provide(layer())))

  it.scoped("[S35] drain waits within its grace for a turn that ends, and interrupts none", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const running = yield* q.submit("d1", "finishing")
      const turn = yield* nthTurn(1)
      const draining = yield* Effect.fork(q.drain("30 seconds", "10 seconds"))
      yield* waitUntil(q.draining)
      yield* TestClock.adjust("10 seconds")
      expect(yield* Fiber.poll(draining)).toEqual(Option.none())
      yield* turn.finish("done")
      expect(yield* Fiber.join(draining)).toEqual({ interrupted: 0 })
      expect(yield* running.reply).toMatchObject({ status: "completed", finalText: "done" })
    }).pipe(Effect.provide(layer())))

  it.scoped("[S35] drain past its grace withdraws what waits and interrupts what runs, Codex told (turn/interrupt)", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const mock = yield* MockAppServer
      const running = yield* q.submit("d2", "never ends")
      yield* nthTurn(1)
      yield* q.setMode("d2", "followup")
      const waiting = yield* q.submit("d2", "after it")
      expect(waiting.disposition).toBe("queue")
      const draining = yield* Effect.fork(q.drain("30 seconds", "10 seconds"))
      yield* waitUntil(q.draining)
      yield* TestClock.adjust("30 seconds")
      expect(yield* Fiber.join(draining)).toEqual({ interrupted: 1 })
      expect(Exit.isInterrupted(yield* Effect.exit(running.reply))).toBe(true)
      expect(Exit.isInterrupted(yield* Effect.exit(waiting.carried))).toBe(true)
      expect(yield* mock.requests("turn/interrupt")).toHaveLength(1)
      expect(yield* prompts).toEqual(["never ends"])
    }).pipe(Effect.provide(layer())))

  it.scoped("[S35][S37] a manual compaction is the session's run: refused while a turn runs, and a message sent during it waits for it", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const running = yield* q.submit("c1", "first")
      const turn = yield* nthTurn(1)
      const busy = yield* q.compact("c1").pipe(Effect.flip)
      expect(busy._tag).toBe("SessionBusy")
      expect(busy.message).toBe("a turn is running in session c1: compact it once the turn has ended")
      yield* turn.finish("first done")
      // at once after the reply (the registry may still be letting go of the run): a compaction is not refused
      yield* running.reply

      // the mock's compaction turn hangs until the test ends it: meanwhile a message waits, a steer is refused
      const mock = yield* MockAppServer
      const started = yield* Deferred.make<{ readonly threadId: string; readonly turnId: string; readonly peer: MockPeer }>()
      yield* mock.setHandler("thread/compact/start", (params, ctx) =>
        Effect.gen(function* () {
          const threadId = (params as { threadId: string }).threadId
          yield* ctx.afterReply(Effect.gen(function* () {
            yield* ctx.notify("turn/started", { threadId, turn: { id: "compact-1", status: "inProgress", items: [], error: null } })
            yield* ctx.notify("item/started", { threadId, turnId: "compact-1", startedAtMs: 0, item: { type: "contextCompaction", id: "cc-1" } })
            yield* Deferred.succeed(started, { threadId, turnId: "compact-1", peer: ctx })
          }))
          return {}
        }))
      const compacting = yield* Effect.fork(q.compact("c1"))
      const compaction = yield* Deferred.await(started)
      yield* waitUntil(Effect.map(q.status("c1"), (s) => s.compacting && s.turnId === "compact-1"))
      expect(yield* q.steer("c1", ["now"])).toMatchObject({ _tag: "NotSteerable" })
      const during = yield* q.submit("c1", "sent during the compaction")
      expect(during.disposition).toBe("queue")
      yield* TestClock.adjust("1 second")
      expect(yield* prompts).toEqual(["first"])

      yield* compaction.peer.notify("item/completed", { threadId: compaction.threadId, turnId: "compact-1", completedAtMs: 0, item: { type: "contextCompaction", id: "cc-1" } })
      yield* compaction.peer.notify("turn/completed", { threadId: compaction.threadId, turn: { id: "compact-1", status: "completed", items: [], error: null } })
      expect(yield* Fiber.join(compacting)).toMatchObject({ sessionId: "c1", turnId: "compact-1" })
      const next = yield* nthTurn(2)
      yield* next.finish("after")
      expect(yield* during.reply).toMatchObject({ status: "completed", finalText: "after" })
      expect(yield* prompts).toEqual(["first", "sent during the compaction"])
      yield* expectSettled("c1")
    }).pipe(Effect.provide(layer())))

  it.scoped("[S35] onEnded tells a message's sender how the run that carried it ended, and a withdrawn message that it was interrupted", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const endedWith = yield* Deferred.make<Exit.Exit<unknown, unknown>>()
      const withdrawnWith = yield* Deferred.make<Exit.Exit<unknown, unknown>>()
      yield* q.submit("e1", "runs", { onEnded: (exit) => Deferred.succeed(endedWith, exit) })
      const turn = yield* nthTurn(1)
      yield* q.setMode("e1", "followup")
      yield* q.submit("e1", "withdrawn", { onEnded: (exit) => Deferred.succeed(withdrawnWith, exit) })
      expect((yield* q.cancelQueued("e1")).map((m) => m.text)).toEqual(["withdrawn"])
      expect(Exit.isInterrupted(yield* Deferred.await(withdrawnWith))).toBe(true)
      yield* turn.finish("the end")
      const exit = yield* Deferred.await(endedWith)
      expect(Exit.isSuccess(exit) ? exit.value : undefined).toMatchObject({ status: "completed", finalText: "the end" })
    }).pipe(Effect.provide(layer())))

  it.scoped("onRecorded hears a completed turn's result on its run, its end in the transcript, before onEnded; an interrupted run tells only onEnded", () =>
    Effect.gen(function* () {
      const q = yield* SessionWork
      const store = yield* SessionStore
      const order: Array<string> = []
      const ended = yield* Deferred.make<Exit.Exit<unknown, unknown>>()
      let transcriptHadEnd = false
      yield* q.submit("o1", "runs", {
        onRecorded: (result) =>
          Effect.gen(function* () {
            order.push(`recorded ${result.status} ${result.finalText}`)
            const records = (yield* store.read("o1").pipe(Effect.orDie)).records
            transcriptHadEnd = records.some((r) => r._tag === "turn" && r.turnId === result.turnId)
          }),
        onEnded: (exit) => Effect.sync(() => order.push(`ended ${exit._tag}`)).pipe(Effect.zipRight(Deferred.succeed(ended, exit)))
      })
      yield* (yield* nthTurn(1)).finish("kept")
      yield* Deferred.await(ended)
      expect(order).toEqual(["recorded completed kept", "ended Success"])
      expect(transcriptHadEnd).toBe(true)

      // control: a run that does not complete has no recorded end to tell
      const stopped = yield* Deferred.make<Exit.Exit<unknown, unknown>>()
      yield* q.submit("o2", "stopped", {
        onRecorded: () => Effect.sync(() => order.push("recorded o2")),
        onEnded: (exit) => Deferred.succeed(stopped, exit)
      })
      yield* nthTurn(2)
      expect(yield* q.interrupt("o2")).toBe(true)
      expect(Exit.isInterrupted(yield* Deferred.await(stopped))).toBe(true)
      expect(order).not.toContain("recorded o2")
    }).pipe(Effect.provide(layer())))
})
