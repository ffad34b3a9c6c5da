// The Harness service an app embeds: `interrupt` stops a session's running turn (Codex is told, the waiting runTurn
// is interrupted, the session stays usable), a second turn of the same session waits for the first, and a message
// submitted meanwhile is steered into the running turn.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { Harness } from "../../src/harness/Harness.js"
import { MockAppServer } from "../../src/testing/MockAppServer.js"

describe("Harness (the embedder's service)", () => {
  it.scoped("interrupt stops the session's running turn: Codex gets turn/interrupt, runTurn is interrupted, the next turn runs", () =>
    Effect.gen(function* () {
      const harness = yield* Harness
      const mock = yield* MockAppServer
      expect(yield* harness.interrupt("s1")).toBe(false)
      const running = yield* Effect.fork(harness.runTurn({ sessionId: "s1", prompt: "count to a million" }))
      const start = yield* mock.awaitRequest("turn/start")
      const peer = yield* mock.latest
      yield* peer.awaitActiveTurn((start.params as { threadId: string }).threadId)
      expect(yield* harness.interrupt("s1")).toBe(true)
      const exit = yield* Fiber.await(running)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect((yield* mock.requests("turn/interrupt")).length).toBe(1)
      // the session stays usable
      yield* mock.setTurnMode("complete")
      const next = yield* harness.runTurn({ sessionId: "s1", prompt: "just say hi" })
      expect(next.status).toBe("completed")
      expect(yield* harness.interrupt("s1")).toBe(false)
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("a second turn of the same session waits for the first; another session's runs alongside", () =>
    Effect.gen(function* () {
      const harness = yield* Harness
      const mock = yield* MockAppServer
      const first = yield* Effect.fork(harness.runTurn({ sessionId: "a", prompt: "one" }))
      const started = yield* mock.awaitRequest("turn/start")
      const threadId = (started.params as { threadId: string }).threadId
      const peer = yield* mock.latest
      yield* peer.awaitActiveTurn(threadId)
      const second = yield* Effect.fork(harness.runTurn({ sessionId: "a", prompt: "two" }))
      const other = yield* Effect.fork(harness.runTurn({ sessionId: "b", prompt: "three" }))
      // b's turn starts while a's first still runs; a's second has not been sent
      yield* mock.awaitRequest("turn/start", 2)
      const prompts = (yield* mock.requests("turn/start")).map((r) => JSON.stringify(r.params))
      expect(prompts.some((p) => p.includes("two"))).toBe(false)
      yield* peer.finishTurn(threadId, { status: "completed", text: "done one" })
      expect((yield* Fiber.join(first)).finalText).toBe("done one")
      const secondStart = yield* mock.awaitRequest("turn/start", 3)
      expect(JSON.stringify(secondStart.params)).toContain("two")
      yield* mock.setTurnMode("complete")
      const bThread = (yield* mock.requests("turn/start")).map((r) => (r.params as { threadId: string }).threadId)
      for (const id of new Set(bThread)) yield* Effect.forEach(yield* mock.peers, (p) => p.finishTurn(id, { status: "completed", text: "ok" }))
      expect((yield* Fiber.join(second)).status).toBe("completed")
      expect((yield* Fiber.join(other)).status).toBe("completed")
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))
})
