// Thread-bootstrap projection in the harness (S38), against the in-memory app-server: the projection goes into the
// fresh thread before its turn starts; an injection that fails fails the turn's attempt with a typed error, the mirror
// records a notice, the provisional thread is deleted and stays unbound, and nothing is lost: the next message carries
// the whole conversation, the prompt of the failed attempt included. The ContextEngine port chooses what is projected.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { ContextEngine } from "../../src/ports/ContextEngine.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"
import { MockAppServer } from "../../src/testing/MockAppServer.js"

const recordsOf = (sessionId: string) =>
  Effect.flatMap(SessionStore, (store) => store.read(sessionId)).pipe(Effect.map((c) => c.records))

const texts = (items: unknown) =>
  (items as ReadonlyArray<{ role?: string; content?: ReadonlyArray<{ text: string }> }>).map((i) => `${i.role}: ${i.content?.[0]?.text}`)

const gone = (threadId: string) => ({ code: -32600, message: `no rollout found for thread id ${threadId}` })

/** the thread's rollout is deleted: a turn on it (still loaded for the harness) and a resume both say it is gone */
const deleteThread = (threadId: string) =>
  Effect.gen(function* () {
    const mock = yield* MockAppServer
    yield* mock.forgetThread(threadId)
    yield* mock.setHandler("thread/resume", () => Effect.fail(gone(threadId)))
    yield* mock.setHandler("turn/start", (params, ctx) =>
      params.threadId === threadId ? Effect.fail({ code: -32600, message: `thread not found: ${threadId}` }) : ctx.fallback)
  })

describe("thread-bootstrap projection in the harness", () => {
  it.scoped("[S38] a failed injection fails the attempt with BootstrapFailed before any turn starts; the next message carries it all", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const one = yield* harness.runTurn({ sessionId: "s", prompt: "first question" })
      yield* deleteThread(one.threadId)
      yield* mock.setHandler("thread/inject_items", () => Effect.fail({ code: -32603, message: "inject refused" }))

      const failed = yield* harness.runTurn({ sessionId: "s", prompt: "second question" }).pipe(Effect.flip)
      expect(failed).toMatchObject({ _tag: "BootstrapFailed", sessionId: "s", reason: expect.stringContaining("inject refused") })
      // no turn started on a thread missing its history; the provisional thread was deleted and never bound
      const [injected] = yield* mock.requests("thread/inject_items")
      const provisional = (injected!.params as { threadId: string }).threadId
      expect((yield* mock.requests("turn/start")).map((r) => (r.params as { threadId: string }).threadId)).not.toContain(provisional)
      expect((yield* mock.requests("thread/delete")).map((r) => (r.params as { threadId: string }).threadId)).toEqual([provisional])
      const records = yield* recordsOf("s")
      expect(sessionState(records).binding?.threadId).toBe(one.threadId)
      expect(records.slice(-4)).toEqual([
        expect.objectContaining({ _tag: "user", text: "second question" }),
        expect.objectContaining({ _tag: "notice", text: expect.stringContaining("no longer exists") }),
        expect.objectContaining({ _tag: "notice", text: expect.stringContaining(`could not be carried into thread ${provisional}: `) }),
        expect.objectContaining({ _tag: "settled", status: "failed", reason: expect.stringContaining("inject refused") })
      ])

      yield* mock.setHandler("thread/inject_items", () => Effect.succeed({}))
      const two = yield* harness.runTurn({ sessionId: "s", prompt: "third question" })
      expect(two.status).toBe("completed")
      const [, carried] = yield* mock.requests("thread/inject_items")
      expect((carried!.params as { threadId: string }).threadId).toBe(two.threadId)
      expect(texts((carried!.params as { items: unknown }).items)).toEqual([
        "user: first question",
        `assistant: ${one.finalText}`,
        "user: second question"
      ])
      // the injection came before the turn
      const order = (yield* mock.requests()).map((r) => r.method).filter((m) => m === "thread/inject_items" || m === "turn/start")
      expect(order.slice(-2)).toEqual(["thread/inject_items", "turn/start"])
      expect(sessionState(yield* recordsOf("s")).binding?.threadId).toBe(two.threadId)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "complete" } }))))

  it.scoped("[S38] the context engine chooses which of the mirror's records are projected", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* harness.runTurn({ sessionId: "e", prompt: "keep me" })
      yield* harness.runTurn({ sessionId: "e", prompt: "drop me" })
      const [bound] = (yield* recordsOf("e")).filter((r) => r._tag === "binding") as Array<{ threadId: string }>
      yield* deleteThread(bound!.threadId)
      yield* mock.setHandler("thread/inject_items", () => Effect.succeed({}))
      yield* harness.runTurn({ sessionId: "e", prompt: "next" })
      const [injected] = yield* mock.requests("thread/inject_items")
      expect(texts((injected!.params as { items: unknown }).items)).toEqual(["user: keep me"])
    }).pipe(
      Effect.provide(
        Test.layer({ script: { turns: "complete" } }).pipe(
          Layer.provide(Layer.succeed(ContextEngine, {
            bootstrap: (request) =>
              Effect.succeed({
                _tag: "Project",
                records: request.records.filter((r) => r._tag === "user" && r.text !== "drop me"),
                bounds: { maxEntries: 5 }
              })
          }))
        )
      )
    ))
})
