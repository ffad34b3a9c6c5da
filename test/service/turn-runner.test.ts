// Turns through CodexHarness and TurnRunner against the in-memory app-server (layers/Test): the final text, the session
// records, thread resume and replacement, interruption, failure, and the peer dying mid-turn.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Option, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { leaseSessionClient, ordinaryRuntime } from "../support/harness.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { AppServerExited } from "../../src/appserver/errors.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { type ClientRequest, type Handler, MockAppServer } from "../../src/testing/MockAppServer.js"
import * as TurnRunner from "../../src/turn/TurnRunner.js"

const recordsOf = (sessionId: string) =>
  Effect.flatMap(SessionStore, (store) => store.read(sessionId)).pipe(Effect.map((s) => s.records))

const paramsOf = (request: ClientRequest) => request.params as Record<string, unknown>

describe("TurnRunner and CodexHarness on the mock app-server", () => {
  it.scoped("[S7][S39] a full turn yields the final text and records user, binding, assistant and turn", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const events: Array<TurnRunner.TurnEvent> = []
      const outcome = yield* harness.runTurn({
        sessionId: "s1",
        prompt: "say hello",
        onEvent: (event) => Effect.sync(() => void events.push(event))
      })
      expect(outcome).toMatchObject({ status: "completed", finalText: "hello from the mock", error: undefined })
      expect(outcome.items.map((i) => i.type)).toEqual(["userMessage", "agentMessage"])

      const start = yield* mock.awaitRequest("thread/start")
      expect(paramsOf(start)).toMatchObject({
        personality: "none",
        cwd: Test.settings.cwd,
        approvalPolicy: "never",
        sandbox: "read-only"
      })
      const turnStart = yield* mock.awaitRequest("turn/start")
      expect(paramsOf(turnStart)).toMatchObject({
        threadId: outcome.threadId,
        input: [{ type: "text", text: "say hello" }]
      })

      const records = yield* recordsOf("s1")
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "assistant", "turn"])
      expect(records[0]).toMatchObject({ text: "say hello" })
      expect(records[1]).toMatchObject({ threadId: outcome.threadId, model: "mock-model", modelProvider: "mock" })
      expect(records[2]).toMatchObject({ text: "hello from the mock", threadId: outcome.threadId, turnId: outcome.turnId })
      expect(records[3]).toMatchObject({ threadId: outcome.threadId, turnId: outcome.turnId, status: "completed" })

      expect(events[0]).toMatchObject({ _tag: "ThreadOpened", thread: { threadId: outcome.threadId, resumed: false } })
      expect(events[1]).toMatchObject({ _tag: "TurnStarted", threadId: outcome.threadId, turnId: outcome.turnId })
      expect(events.at(-1)).toMatchObject({ _tag: "TurnCompleted", outcome: { finalText: "hello from the mock" } })
      const methods = events.flatMap((e) => (e._tag === "Notification" ? [e.notification.method] : []))
      expect(methods).toContain("item/agentMessage/delta")
      expect(methods.at(-1)).toBe("turn/completed")
    }).pipe(Effect.provide(Test.layer({ script: { replyText: "hello from the mock" } }))))

  it.scoped("[S7] a second turn on the same connection goes straight to turn/start: the thread, started with personality none, is still loaded", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const first = yield* harness.runTurn({ sessionId: "s2", prompt: "first" })
      const second = yield* harness.runTurn({ sessionId: "s2", prompt: "second" })
      expect(second.threadId).toBe(first.threadId)
      expect(second.turnId).not.toBe(first.turnId)
      expect(second.finalText).toBe("re: second")

      const starts = yield* mock.requests("thread/start")
      expect(starts).toHaveLength(1)
      expect(paramsOf(starts[0]!)).toMatchObject({ personality: "none", cwd: Test.settings.cwd, approvalPolicy: "never", sandbox: "read-only" })
      expect(yield* mock.requests("thread/resume")).toHaveLength(0)
      expect((yield* mock.requests("turn/start")).map((r) => paramsOf(r).threadId)).toEqual([first.threadId, first.threadId])
      // one shared client for both turns, and no new binding
      expect(yield* mock.spawnCount).toBe(1)
      const records = yield* recordsOf("s2")
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "assistant", "turn", "user", "assistant", "turn"])
    }).pipe(Effect.provide(Test.layer({ script: { replyText: (p) => `re: ${(p.input?.[0] as { text: string }).text}` } }))))

  it.scoped("[S37][S12] after the client is retired, the next turn resumes the bound thread on a fresh app-server", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const pool = yield* ClientPool
      const mock = yield* MockAppServer
      const first = yield* harness.runTurn({ sessionId: "s3", prompt: "first" })
      yield* pool.retire(ordinaryRuntime(Test.settings).poolKey, "test")
      const second = yield* harness.runTurn({ sessionId: "s3", prompt: "second" })
      expect(yield* mock.spawnCount).toBe(2)
      const resume = yield* mock.awaitRequest("thread/resume")
      expect(resume.peer).toBe(2)
      expect(paramsOf(resume)).toMatchObject({ threadId: first.threadId, personality: "none" })
      expect(second).toMatchObject({ threadId: first.threadId, status: "completed", finalText: "mock reply" })
      expect((yield* recordsOf("s3")).filter((r) => r._tag === "binding")).toHaveLength(1)
    }).pipe(Effect.provide(Test.layer())))

  it.scoped("[S12] a bound thread the server reports as not found is replaced by a fresh thread and a new binding", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const pool = yield* ClientPool
      const first = yield* harness.runTurn({ sessionId: "s4", prompt: "first" })
      // a fresh app-server: the bound thread must be resumed there
      yield* pool.retire(ordinaryRuntime(Test.settings).poolKey, "test")
      const gone: Handler = (params: { threadId: string }) =>
        Effect.fail({ code: -32600, message: `thread not found: ${params.threadId}` })
      yield* mock.setHandler("thread/resume", gone)

      const events: Array<TurnRunner.TurnEvent> = []
      const second = yield* harness.runTurn({
        sessionId: "s4",
        prompt: "second",
        onEvent: (event) => Effect.sync(() => void events.push(event))
      })
      expect(second.threadId).not.toBe(first.threadId)
      expect(second).toMatchObject({ status: "completed", finalText: "mock reply" })
      expect(yield* mock.requests("thread/start")).toHaveLength(2)
      expect(paramsOf((yield* mock.requests("thread/resume"))[0]!)).toMatchObject({ threadId: first.threadId })
      expect(events[0]).toMatchObject({
        _tag: "ThreadOpened",
        thread: { threadId: second.threadId, resumed: false, replacedThreadId: first.threadId }
      })

      const bindings = (yield* recordsOf("s4")).filter((r) => r._tag === "binding")
      expect(bindings.map((b) => b.threadId)).toEqual([first.threadId, second.threadId])
      // the turn ran on the new thread
      expect(paramsOf(yield* mock.awaitRequest("turn/start", 2))).toMatchObject({ threadId: second.threadId })
    }).pipe(Effect.provide(Test.layer())))

  it.scoped("[appserver] a resume failing for another reason fails the turn and keeps the binding", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const pool = yield* ClientPool
      const first = yield* harness.runTurn({ sessionId: "s5", prompt: "first" })
      yield* pool.retire(ordinaryRuntime(Test.settings).poolKey, "test")
      yield* mock.setHandler("thread/resume", () => Effect.fail({ code: -32603, message: "database is locked" }))
      const error = yield* harness.runTurn({ sessionId: "s5", prompt: "second" }).pipe(Effect.flip)
      expect(error).toMatchObject({ _tag: "RpcError", method: "thread/resume", rpcMessage: "database is locked" })
      expect(yield* mock.requests("thread/start")).toHaveLength(1)
      const records = yield* recordsOf("s5")
      // the second prompt is kept, with its outcome: no turn started
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "assistant", "turn", "user", "settled"])
      expect(records.at(-1)).toMatchObject({ status: "failed", reason: expect.stringContaining("database is locked") })
      expect(records.filter((r) => r._tag === "binding").map((b) => b.threadId)).toEqual([first.threadId])
    }).pipe(Effect.provide(Test.layer())))

  it.scoped("a thread Codex unloaded meanwhile (turn/start: not found) is resumed once and the turn runs on it", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const first = yield* harness.runTurn({ sessionId: "s5b", prompt: "first" })
      let refused = 0
      const unloadedOnce: Handler = (params: { threadId: string }, ctx) =>
        refused++ === 0 ? Effect.fail({ code: -32600, message: `thread not found: ${params.threadId}` }) : ctx.fallback
      yield* mock.setHandler("turn/start", unloadedOnce)
      const second = yield* harness.runTurn({ sessionId: "s5b", prompt: "second" })
      expect(second).toMatchObject({ threadId: first.threadId, status: "completed" })
      expect((yield* mock.requests("thread/resume")).map((r) => paramsOf(r).threadId)).toEqual([first.threadId])
      expect(yield* mock.requests("turn/start")).toHaveLength(3)
      const records = yield* recordsOf("s5b")
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "assistant", "turn", "user", "assistant", "turn"])
    }).pipe(Effect.provide(Test.layer())))

  it.scoped("[appserver] the peer dying mid-turn fails runTurn with AppServerExited; the next turn gets a fresh peer", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const dieAfterStart: Handler = (_params, ctx) =>
        Effect.tap(ctx.fallback, () =>
          ctx.afterReply(ctx.appendStderr("ERROR codex_core: out of memory\n").pipe(Effect.zipRight(ctx.crash("SIGKILL"))))
        )
      yield* mock.setHandler("turn/start", dieAfterStart)

      const error = yield* harness.runTurn({ sessionId: "s6", prompt: "doomed" }).pipe(Effect.flip)
      expect(error).toBeInstanceOf(AppServerExited)
      expect(error).toMatchObject({ exitCode: null, signal: "SIGKILL", stderrTail: "ERROR codex_core: out of memory\n" })
      const s6 = yield* recordsOf("s6")
      expect(s6.map((r) => r._tag)).toEqual(["user", "binding", "turn"])
      expect(s6[2]).toMatchObject({ status: "failed", error: expect.stringContaining("app-server") })

      yield* mock.setHandler("turn/start", undefined)
      yield* mock.setTurnMode("complete")
      const next = yield* harness.runTurn({ sessionId: "s6", prompt: "again" })
      expect(next.status).toBe("completed")
      expect(yield* mock.spawnCount).toBe(2)
      expect((yield* mock.awaitRequest("thread/resume")).peer).toBe(2)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[appserver] interrupting a running turn sends turn/interrupt for that turn", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const following = yield* Deferred.make<void>()
      const running = yield* Effect.fork(
        harness.runTurn({
          sessionId: "s7",
          prompt: "long job",
          // the runner is following the turn's notifications once turn/started reaches it
          onEvent: (e) =>
            e._tag === "Notification" && e.notification._tag === "TurnStarted"
              ? Deferred.succeed(following, undefined)
              : Effect.void
        })
      )
      yield* Deferred.await(following)
      const threadId = paramsOf(yield* mock.awaitRequest("turn/start")).threadId as string
      const turnId = yield* (yield* mock.latest).awaitActiveTurn(threadId)
      yield* Fiber.interrupt(running)
      const interrupt = yield* mock.awaitRequest("turn/interrupt")
      expect(paramsOf(interrupt)).toEqual({ threadId, turnId })
      // the peer answered and ended the turn
      expect(Option.isNone(yield* (yield* mock.latest).activeTurn(threadId))).toBe(true)
      const records = yield* recordsOf("s7")
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "turn"])
      expect(records[2]).toMatchObject({ status: "interrupted" })
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[appserver] a caller interrupted while turn/start is unanswered interrupts that turn once its id is known", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const asked = yield* Deferred.make<void>()
      const answer = yield* Deferred.make<void>()
      // turn/start is held until the test lets it answer; then the turn starts on the peer as usual
      yield* mock.setHandler("turn/start", (_params, ctx) =>
        Deferred.succeed(asked, undefined).pipe(Effect.zipRight(Deferred.await(answer)), Effect.zipRight(ctx.fallback)))
      const running = yield* Effect.fork(harness.runTurn({ sessionId: "s7a", prompt: "long job" }))
      yield* Deferred.await(asked)
      const interrupting = yield* Effect.fork(Fiber.interrupt(running))
      expect(yield* mock.requests("turn/interrupt")).toHaveLength(0)
      yield* Deferred.succeed(answer, undefined)
      const interrupt = yield* mock.awaitRequest("turn/interrupt")
      const threadId = paramsOf(yield* mock.awaitRequest("turn/start")).threadId as string
      expect(paramsOf(interrupt)).toMatchObject({ threadId })
      yield* Fiber.join(interrupting)
      // the turn the server started is not left running to swallow the next one
      expect(Option.isNone(yield* (yield* mock.latest).activeTurn(threadId))).toBe(true)
      const records = yield* recordsOf("s7a")
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "turn"])
      expect(records[2]).toMatchObject({ status: "interrupted" })
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[appserver] interrupting a turn whose turn/interrupt is never answered still ends after the 2 s interrupt timeout", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* mock.setHandler("turn/interrupt", () => Effect.never)
      const following = yield* Deferred.make<void>()
      const running = yield* Effect.fork(
        harness.runTurn({
          sessionId: "s7b",
          prompt: "long job",
          onEvent: (e) =>
            e._tag === "Notification" && e.notification._tag === "TurnStarted"
              ? Deferred.succeed(following, undefined)
              : Effect.void
        })
      )
      yield* Deferred.await(following)
      const interrupting = yield* Effect.fork(Fiber.interrupt(running))
      yield* mock.awaitRequest("turn/interrupt")
      yield* TestClock.adjust("1900 millis")
      expect(Option.isNone(yield* Fiber.poll(interrupting))).toBe(true)
      yield* TestClock.adjust("100 millis")
      yield* Fiber.join(interrupting)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[appserver] a failed turn carries its error into the outcome and the turn record", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const failTurn: Handler = (params: { threadId: string }, ctx) =>
        Effect.tap(ctx.fallback, () =>
          ctx.afterReply(ctx.finishTurn(params.threadId, { status: "failed", error: "stream disconnected before completion" }))
        )
      yield* mock.setHandler("turn/start", failTurn)
      const outcome = yield* harness.runTurn({ sessionId: "s8", prompt: "hi" })
      expect(outcome).toMatchObject({
        status: "failed",
        finalText: undefined,
        error: "stream disconnected before completion"
      })
      const records = yield* recordsOf("s8")
      expect(records.map((r) => r._tag)).toEqual(["user", "binding", "turn"])
      expect(records[2]).toMatchObject({ status: "failed", error: "stream disconnected before completion" })
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[appserver] runTurn only counts its own thread's and turn's notifications", () =>
    Effect.gen(function* () {
      const pool = yield* ClientPool
      const mock = yield* MockAppServer
      const connection = yield* leaseSessionClient(pool, Test.settings)
      const threadSettings = { cwd: "/w", approvalPolicy: "never", sandbox: "read-only" } as const
      const a = yield* TurnRunner.openThread(connection, threadSettings, undefined)
      const b = yield* TurnRunner.openThread(connection, threadSettings, undefined)
      const peer = yield* mock.latest

      const running = yield* Effect.fork(
        TurnRunner.runTurn(connection, a.threadId, [{ type: "text", text: "go" }], threadSettings)
      )
      yield* mock.awaitRequest("turn/start")
      const turnId = yield* peer.awaitActiveTurn(a.threadId)
      const agent = (text: string) => ({ type: "agentMessage", id: `m-${text}`, text, phase: null })
      // another thread's message, and a message of another turn on the same thread, must not count
      yield* peer.notify("item/completed", { threadId: b.threadId, turnId, item: agent("wrong thread") })
      yield* peer.notify("item/completed", { threadId: a.threadId, turnId: "other-turn", item: agent("wrong turn") })
      yield* peer.notify("turn/completed", {
        threadId: a.threadId,
        turn: { id: "other-turn", status: "completed", items: [] }
      })
      yield* peer.finishTurn(a.threadId, { text: "the real answer" })
      const outcome = yield* Fiber.join(running)
      expect(outcome).toMatchObject({ threadId: a.threadId, turnId, status: "completed", finalText: "the real answer" })
      expect(outcome.items.filter((i) => i.type === "agentMessage")).toHaveLength(1)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.effect("[appserver] closing the harness layer releases every app-server it spawned", () =>
    Effect.gen(function* () {
      const peers = yield* Effect.gen(function* () {
        const harness = yield* CodexHarness
        const pool = yield* ClientPool
        yield* harness.runTurn({ sessionId: "s9", prompt: "one" })
        yield* pool.retire(ordinaryRuntime(Test.settings).poolKey, "test")
        yield* harness.runTurn({ sessionId: "s9", prompt: "two" })
        const peers = yield* (yield* MockAppServer).peers
        expect(peers).toHaveLength(2)
        expect(yield* peers[0]!.released).toBe(true)
        expect(yield* peers[1]!.released).toBe(false)
        return peers
      }).pipe(Effect.provide(Test.layer()))
      for (const peer of peers) {
        expect(yield* peer.released).toBe(true)
        expect(Option.isSome(yield* peer.exitInfo)).toBe(true)
      }
    }))
})
