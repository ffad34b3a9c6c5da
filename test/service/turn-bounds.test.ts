// Every wait of a turn is bounded, and what a turn completed is never lost (against the in-memory app-server, time on
// the TestClock): a turn past its deadline is interrupted and reported failed with its completed reply; an active
// thread whose provider sends nothing (while nothing else runs) is ended; a line over the size limit ends the turn at
// once keeping the streamed reply; an interrupted turn still delivers a reply that had completed; a first turn Codex
// refuses leaves no binding to a thread that never existed.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, type Duration, Effect, Fiber, Option, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import * as Connection from "../../src/appserver/AppServerConnection.js"
import { Transport } from "../../src/appserver/Transport.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { duringTurn, layer as mockLayer, MockAppServer } from "../../src/testing/MockAppServer.js"
import { RecordingDelivery } from "../../src/testing/RecordingDelivery.js"
import * as TurnRunner from "../../src/turn/TurnRunner.js"

const recordsOf = (sessionId: string) =>
  Effect.flatMap(SessionStore, (store) => store.read(sessionId)).pipe(Effect.map((c) => c.records))

const agentMessage = (id: string, text: string) => ({ type: "agentMessage", id, text, phase: "final_answer" })

/** a turn that completes one agent message and then never ends; `ready` once the message is out */
const completesThenHangs = (ready: Deferred.Deferred<void>, text = "half of it") =>
  duringTurn((turn, ctx) =>
    ctx.notify("item/completed", { threadId: turn.threadId, turnId: turn.turnId, item: agentMessage("m1", text) }).pipe(
      Effect.zipRight(Deferred.succeed(ready, undefined))
    ))

/** moves the TestClock in small steps until the fiber is done (bounded), so no timer registered late is skipped */
const advanceUntilDone = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, step: Duration.DurationInput = "5 seconds", steps = 200) =>
  Effect.gen(function* () {
    for (let i = 0; i < steps && Option.isNone(yield* Fiber.poll(fiber)); i++) {
      yield* TestClock.adjust(step)
      yield* Effect.yieldNow().pipe(Effect.repeatN(20))
    }
    return yield* Fiber.join(fiber)
  })

/** moves the TestClock `steps` times by 5 s, letting the fibers run in between */
const advance = (steps: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < steps; i++) {
      yield* TestClock.adjust("5 seconds")
      yield* Effect.yieldNow().pipe(Effect.repeatN(20))
    }
  })

/** the runner is past its first notifications (the test may move the clock) */
const whenFollowing = (started: Deferred.Deferred<void>) => (e: TurnRunner.TurnEvent) =>
  e._tag === "TurnStarted" ? Deferred.succeed(started, undefined) : Effect.void

describe("turn bounds", () => {
  it.scoped("a turn past its deadline is interrupted and reported failed, keeping the reply it completed", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const ready = yield* Deferred.make<void>()
      yield* mock.setHandler("turn/start", completesThenHangs(ready))
      const running = yield* harness.runTurn({ sessionId: "late", prompt: "go" }).pipe(Effect.fork)
      yield* Deferred.await(ready)
      const outcome = yield* advanceUntilDone(running)
      expect(outcome).toMatchObject({
        status: "failed",
        finalText: "half of it",
        error: "the turn did not finish within 60 s (turns.timeoutSeconds); it was interrupted"
      })
      expect(yield* mock.requests("turn/interrupt")).toHaveLength(1)
      expect((yield* recordsOf("late")).map((r) => r._tag)).toEqual(["user", "binding", "assistant", "turn"])
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" }, settings: { turnTimeout: "60 seconds" } }))))

  it.scoped("an active thread whose provider sends nothing while nothing else runs is ended after the silence limit", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const ready = yield* Deferred.make<void>()
      yield* mock.setHandler("thread/read", (params) =>
        Effect.succeed({ thread: { id: params.threadId, modelProvider: "mock", preview: "", ephemeral: false, cwd: "/w", status: { type: "active", activeFlags: [] } } }))
      yield* mock.setHandler("turn/start", completesThenHangs(ready, "partial"))
      const running = yield* harness.runTurn({ sessionId: "quiet", prompt: "go" }).pipe(Effect.fork)
      yield* Deferred.await(ready)
      // each silence check reads the thread (active, waiting on nothing) until the silence passes the 120 s limit
      const outcome = yield* advanceUntilDone(running)
      expect(outcome.status).toBe("failed")
      expect(outcome.finalText).toBe("partial")
      expect(outcome.error).toMatch(/^the model provider sent nothing for 1[23]\d s while the turn waited on it/)
      expect((yield* mock.requests("thread/read")).length).toBeGreaterThanOrEqual(4)
      expect(yield* mock.requests("turn/interrupt")).toHaveLength(1)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" }, settings: { providerSilence: "120 seconds" } }))))

  it.scoped("a command in progress, or a pending approval, is not provider silence: the turn waits on", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const ready = yield* Deferred.make<void>()
      let flags: ReadonlyArray<string> = []
      yield* mock.setHandler("thread/read", (params) =>
        Effect.succeed({ thread: { id: params.threadId, modelProvider: "mock", preview: "", ephemeral: false, cwd: "/w", status: { type: "active", activeFlags: flags } } }))
      yield* mock.setHandler("turn/start", duringTurn((turn, ctx) =>
        ctx.notify("item/started", { threadId: turn.threadId, turnId: turn.turnId, item: { type: "commandExecution", id: "cmd", command: "sleep 600", commandActions: [], cwd: "/w", status: "inProgress" } }).pipe(
          Effect.zipRight(Deferred.succeed(ready, undefined))
        )))
      const running = yield* harness.runTurn({ sessionId: "busy", prompt: "go" }).pipe(Effect.fork)
      yield* Deferred.await(ready)
      // three minutes of silence with the command running: checked several times, never ended
      yield* advance(36)
      expect((yield* mock.requests("thread/read")).length).toBeGreaterThanOrEqual(5)
      expect(yield* mock.requests("turn/interrupt")).toHaveLength(0)
      // the command ends; now the thread waits on an approval: still not the provider's silence
      const peer = yield* mock.latest
      const threadId = (yield* mock.requests("turn/start"))[0]!.params as { threadId: string }
      const turnId = yield* peer.awaitActiveTurn(threadId.threadId)
      yield* peer.notify("item/completed", { threadId: threadId.threadId, turnId, item: { type: "commandExecution", id: "cmd", command: "sleep 600", commandActions: [], cwd: "/w", status: "completed" } })
      flags = ["waitingOnApproval"]
      yield* advance(36)
      expect(yield* mock.requests("turn/interrupt")).toHaveLength(0)
      yield* peer.finishTurn(threadId.threadId, { text: "done at last" })
      expect((yield* Fiber.join(running)).finalText).toBe("done at last")
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" }, settings: { providerSilence: "120 seconds" } }))))

  it.scoped("an interrupted turn delivers and keeps the reply that had completed", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const delivery = yield* RecordingDelivery
      const ready = yield* Deferred.make<void>()
      yield* mock.setHandler("turn/start", completesThenHangs(ready, "what I had so far"))
      const running = yield* harness.runTurn({ sessionId: "cut", prompt: "go" }).pipe(Effect.fork)
      yield* Deferred.await(ready)
      yield* (yield* mock.latest).awaitMessage((m) => m._tag === "Request" && m.method === "turn/start")
      // the notification is out; the runner reads it before the interrupt lands
      yield* Effect.yieldNow().pipe(Effect.repeatN(50))
      yield* Fiber.interrupt(running)
      expect(yield* delivery.replies).toEqual([{ sessionId: "cut", text: "what I had so far", media: [], source: "final" }])
      const records = yield* recordsOf("cut")
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "assistant", "turn"])
      expect(records.at(-1)).toMatchObject({ status: "interrupted" })
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("a first turn Codex refuses leaves no binding: the next message starts afresh without a 'no longer exists' notice", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const delivery = yield* RecordingDelivery
      yield* mock.setHandler("turn/start", () => Effect.fail({ code: -32600, message: "input exceeds the maximum length of 1048576 characters" }))
      const refused = yield* harness.runTurn({ sessionId: "big", prompt: "x".repeat(100) }).pipe(Effect.flip)
      expect(refused).toMatchObject({ _tag: "RpcError", rpcMessage: expect.stringContaining("maximum length") })
      const records = yield* recordsOf("big")
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "detached", "settled"])
      yield* mock.setHandler("turn/start", undefined)
      yield* mock.setTurnMode("complete")
      const next = yield* harness.runTurn({ sessionId: "big", prompt: "short" })
      expect(next.status).toBe("completed")
      expect(yield* mock.requests("thread/resume")).toHaveLength(0)
      expect((yield* delivery.replies).filter((r) => r.source === "notice")).toEqual([])
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("a line over the size limit ends the followed turn at once, keeping the reply streamed so far, and interrupts it", () =>
    Effect.gen(function* () {
      const transport = yield* Transport
      const connection = yield* Connection.make(yield* transport.spawn({ maxLineBytes: 4096 }))
      const mock = yield* MockAppServer
      const peer = yield* mock.latest
      const started = yield* Deferred.make<void>()
      const thread = yield* connection.request("thread/start", { cwd: "/w" })
      const running = yield* TurnRunner.runTurn(
        connection,
        thread.thread.id,
        [{ type: "text", text: "go" }],
        { cwd: "/w", approvalPolicy: "never", sandbox: "read-only" },
        whenFollowing(started)
      ).pipe(Effect.fork)
      yield* Deferred.await(started)
      const turnId = yield* peer.awaitActiveTurn(thread.thread.id)
      const ids = { threadId: thread.thread.id, turnId, itemId: "m1" }
      yield* peer.notify("item/agentMessage/delta", { ...ids, delta: "the first part, " })
      yield* peer.notify("item/agentMessage/delta", { ...ids, delta: "and the second" })
      yield* peer.notify("item/completed", { threadId: ids.threadId, turnId, item: agentMessage("m1", "y".repeat(10_000)) })
      const outcome = yield* Fiber.join(running)
      expect(outcome.status).toBe("failed")
      expect(outcome.finalText).toBe("the first part, and the second")
      expect(outcome.error).toMatch(/over the harness's line limit/)
      expect(yield* peer.requests("turn/interrupt")).toHaveLength(1)
    }).pipe(Effect.provide(mockLayer({ turns: "hang" }))))
})

