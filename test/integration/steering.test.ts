// The steering queue on the real app-server (S35): a message that arrives while the model streams slowly is steered into
// the same turn (Codex abandons the stream and asks the model again with it); in followup mode it becomes a second turn.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SessionStore } from "../../src/session/SessionStore.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { SessionWork, type SessionWorkOptions, layer as steeringLayer } from "../../src/harness/SessionWork.js"
import { fixture, liveContext } from "../support/harness.js"

const slowFirstReply = reply.steps({ type: "pause", ms: 2000 }, { type: "message", text: "the slow first answer" })

/** the live harness with the queue in front of it, both in the test's scope */
const queueOn = (options: SessionWorkOptions, replies: Parameters<typeof fixture>[0]) =>
  Effect.gen(function* () {
    const f = yield* fixture(replies)
    const context = yield* liveContext(f.settings)
    const queueContext = yield* Layer.build(steeringLayer(options)).pipe(Effect.provide(context))
    return { f, queue: Context.get(queueContext, SessionWork), store: Context.get(context, SessionStore) }
  })

const recordsOf = (store: Context.Tag.Service<SessionStore>, sessionId: string) =>
  Effect.map(store.read(sessionId), (c) => c.records)

describe("the steering queue on the real app-server", () => {
  it.scopedLive("[S35] a message sent while the model streams slowly is steered into the same turn: the next model request carries it, one turn record", () =>
    Effect.gen(function* () {
      const { f, queue, store } = yield* queueOn({}, { replies: [slowFirstReply, reply.text("answer with the steer")] })
      const first = yield* queue.submit("st1", "write a long essay")
      expect(first.disposition).toBe("start")
      yield* f.model.waitForRequests(1)
      const steer = yield* queue.submit("st1", "actually, keep it short")
      expect(steer.disposition).toBe("steer")
      const carried = yield* steer.carried
      expect(carried._tag).toBe("Steered")

      const result = yield* first.reply
      expect(result.status).toBe("completed")
      expect(result.finalText).toBe("answer with the steer")
      expect((yield* steer.reply).turnId).toBe(result.turnId)
      if (carried._tag === "Steered") expect(carried.turnId).toBe(result.turnId)

      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests[0]!.body).not.toContain("actually, keep it short")
      expect(requests[1]!.body).toContain("write a long essay")
      expect(requests[1]!.body).toContain("actually, keep it short")
      // the abandoned stream's text never arrived
      expect(requests[1]!.body).not.toContain("the slow first answer")

      yield* queue.idle("st1")
      expect(yield* queue.sessions).toEqual([])
      const records = yield* recordsOf(store, "st1")
      expect(records.filter((r) => r._tag === "turn")).toHaveLength(1)
      expect(records.filter((r) => r._tag === "user").map((r) => (r as { text: string }).text)).toEqual([
        "write a long essay",
        "actually, keep it short"
      ])
    }))

  it.scopedLive("[S35] in followup mode the same message becomes a second turn after the first", () =>
    Effect.gen(function* () {
      const { f, queue, store } = yield* queueOn(
        { mode: "followup" },
        { replies: [slowFirstReply, reply.text("answer to the follow-up")] }
      )
      const first = yield* queue.submit("fu1", "write a long essay")
      yield* f.model.waitForRequests(1)
      const next = yield* queue.submit("fu1", "actually, keep it short")
      expect(next.disposition).toBe("queue")

      const one = yield* first.reply
      expect(one).toMatchObject({ status: "completed", finalText: "the slow first answer" })
      const two = yield* next.reply
      expect(two).toMatchObject({ status: "completed", finalText: "answer to the follow-up" })
      expect(two.turnId).not.toBe(one.turnId)
      expect(two.threadId).toBe(one.threadId)
      expect(yield* next.carried).toMatchObject({ _tag: "Turn", prompt: "actually, keep it short" })

      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests[0]!.body).not.toContain("actually, keep it short")
      // the second turn sees the whole first exchange
      expect(requests[1]!.body).toContain("the slow first answer")
      expect(requests[1]!.body).toContain("actually, keep it short")

      yield* queue.idle("fu1")
      const records = yield* recordsOf(store, "fu1")
      expect(records.filter((r) => r._tag === "turn")).toHaveLength(2)
    }))
})
