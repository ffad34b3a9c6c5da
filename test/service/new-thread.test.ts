// A fresh thread in the same session on request (`/new --carry`, `/new --thread`), against the in-memory app-server:
// `newThread` detaches the binding (with its carry); the next turn starts a thread and, with carry, the ContextEngine is
// asked with reason "carry" and the projection goes in before turn/start. Refused in one line for a supervised session
// and while a turn runs; a carry whose fresh thread never got its first turn is still owed to the next one.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { SessionWork } from "../../src/harness/SessionWork.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type BootstrapRequest, ContextEngine } from "../../src/ports/ContextEngine.js"
import { NewThreadRefused } from "../../src/session/errors.js"
import * as Runtimes from "../../src/session/Runtimes.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"
import { type ClientRequest, MockAppServer } from "../../src/testing/MockAppServer.js"

const recordsOf = (sessionId: string) =>
  Effect.flatMap(SessionStore, (store) => store.read(sessionId)).pipe(Effect.map((c) => c.records))

const paramsOf = (request: ClientRequest) => request.params as Record<string, any>

const texts = (items: unknown) =>
  (items as ReadonlyArray<{ role?: string; content?: ReadonlyArray<{ text: string }> }>).map((i) => `${i.role}: ${i.content?.[0]?.text}`)

/** a context engine that projects everything and remembers what it was asked */
const asked: Array<BootstrapRequest> = []
const recordingEngine = Layer.succeed(ContextEngine, {
  bootstrap: (request) => Effect.sync(() => asked.push(request)).pipe(Effect.as({ _tag: "Project" as const }))
})

describe("a fresh thread in the same session", () => {
  it.scoped("[S38] newThread(carry): the next turn starts a thread; the engine is asked with reason carry and the projection goes in before turn/start", () =>
    Effect.gen(function* () {
      asked.length = 0
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const one = yield* harness.runTurn({ sessionId: "c", prompt: "first question" })
      expect(yield* harness.newThread("c", { carry: true })).toEqual({ previousThreadId: one.threadId, carry: true })
      expect(sessionState(yield* recordsOf("c")).binding).toBeUndefined()

      const two = yield* harness.runTurn({ sessionId: "c", prompt: "second question" })
      expect(two.threadId).not.toBe(one.threadId)
      expect(yield* mock.requests("thread/resume")).toHaveLength(0)
      expect(asked.map((r) => ({ reason: r.reason, threadId: r.threadId, previousThreadId: r.previousThreadId }))).toEqual([
        { reason: "carry", threadId: two.threadId, previousThreadId: one.threadId }
      ])
      const [injected] = yield* mock.requests("thread/inject_items")
      expect(paramsOf(injected!).threadId).toBe(two.threadId)
      expect(texts(paramsOf(injected!).items)).toEqual(["user: first question", `assistant: ${one.finalText}`])
      const order = (yield* mock.requests()).map((r) => r.method).filter((m) => m === "thread/inject_items" || m === "turn/start")
      expect(order).toEqual(["turn/start", "thread/inject_items", "turn/start"])
      expect(sessionState(yield* recordsOf("c")).binding?.threadId).toBe(two.threadId)

      // carried once: the turn after resumes the new thread, nothing injected again
      yield* harness.runTurn({ sessionId: "c", prompt: "third question" })
      expect(yield* mock.requests("thread/inject_items")).toHaveLength(1)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "complete" } }).pipe(Layer.provide(recordingEngine)))))

  it.scoped("[S38] newThread without carry: a fresh, empty thread; the engine is never asked", () =>
    Effect.gen(function* () {
      asked.length = 0
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const one = yield* harness.runTurn({ sessionId: "e", prompt: "first question" })
      yield* harness.newThread("e", { carry: false })
      const two = yield* harness.runTurn({ sessionId: "e", prompt: "second question" })
      expect(two.threadId).not.toBe(one.threadId)
      expect(asked).toEqual([])
      expect(yield* mock.requests("thread/inject_items")).toHaveLength(0)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "complete" } }).pipe(Layer.provide(recordingEngine)))))

  it.scoped("[S38] newThread(carry) on a session already detached carries; one whose fresh thread's first turn did not start still owes it", () =>
    Effect.gen(function* () {
      asked.length = 0
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const one = yield* harness.runTurn({ sessionId: "d", prompt: "first question" })
      yield* harness.newThread("d", { carry: false })
      // asked again, now with carry: the detached record is restated
      expect(yield* harness.newThread("d", { carry: true })).toEqual({ previousThreadId: one.threadId, carry: true })
      expect(sessionState(yield* recordsOf("d")).detached).toMatchObject({ threadId: one.threadId, carry: true })

      yield* mock.setHandler("turn/start", () => Effect.fail({ code: -32603, message: "turn refused" }))
      yield* harness.runTurn({ sessionId: "d", prompt: "second question" }).pipe(Effect.flip)
      const [provisional] = yield* mock.requests("thread/inject_items")
      expect(sessionState(yield* recordsOf("d")).detached).toMatchObject({ threadId: paramsOf(provisional!).threadId, carry: true })

      yield* mock.setHandler("turn/start", (_params, ctx) => ctx.fallback)
      const three = yield* harness.runTurn({ sessionId: "d", prompt: "third question" })
      const carried = (yield* mock.requests("thread/inject_items")).at(-1)!
      expect(paramsOf(carried).threadId).toBe(three.threadId)
      expect(texts(paramsOf(carried).items)).toEqual(["user: first question", `assistant: ${one.finalText}`, "user: second question"])
      expect(asked.map((r) => r.reason)).toEqual(["carry", "carry"])
    }).pipe(Effect.provide(Test.layer({ script: { turns: "complete" } }).pipe(Layer.provide(recordingEngine)))))

  it.scoped("[S38] refused in one line for a supervised session, and while a turn runs; nothing is recorded", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const store = yield* SessionStore
      const mock = yield* MockAppServer
      const runtime = Runtimes.supervisedRuntime("locked", "/mock/codex-home", undefined)
      yield* store.append("locked", { _tag: "binding", at: "t", threadId: "canon", model: "pinned", modelProvider: "p", locked: true, runtime })
      const refused = yield* harness.newThread("locked", { carry: true }).pipe(Effect.flip)
      expect(refused).toBeInstanceOf(NewThreadRefused)
      expect(refused.message.split("\n")).toHaveLength(1)
      expect(refused.message).toContain("session locked cannot continue on a fresh thread: it is a supervised chat")
      expect((yield* recordsOf("locked")).map((r) => r._tag)).toEqual(["binding"])

      const work = yield* SessionWork
      const running = yield* work.submit("r", "a long job").pipe(Effect.flatMap((s) => s.reply), Effect.fork)
      const request = yield* mock.awaitRequest("turn/start", 1)
      const peer = yield* mock.awaitPeer(request.peer)
      const threadId = paramsOf(request).threadId as string
      yield* peer.awaitActiveTurn(threadId)
      const busy = yield* work.newThread("r", { carry: true }).pipe(Effect.flip)
      expect(busy.message).toBe("session r cannot continue on a fresh thread: a turn is running; ask again once it has ended")
      yield* peer.finishTurn(threadId, { text: "done" })
      yield* Fiber.join(running)
      expect((yield* recordsOf("r")).some((r) => r._tag === "detached")).toBe(false)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))
})
