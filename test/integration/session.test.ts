// Sessions on the real app-server: a restart between turns resumes the same thread, a model switch reaches the model,
// a deleted thread recovers, message_tool mode and heartbeats work end to end.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Scope } from "effect"
import * as Live from "../../layers/internal/Live.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../../src/config/Settings.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leaseSessionClient } from "../support/harness.js"

/** One "harness process": the live layer in its own scope, closed (app-server and all) by `stop`. */
const start = (settings: HarnessSettings) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer)), scope)
    return {
      harness: Context.get(context, CodexHarness),
      pool: Context.get(context, ClientPool),
      store: Context.get(context, SessionStore),
      delivered: Context.get(context, RecordingDelivery.RecordingDelivery).replies,
      stop: Scope.close(scope, Exit.void)
    }
  })

describe("sessions on the real app-server", () => {
  it.scopedLive("[S12] a restart between two turns resumes the same thread, and the model switch reaches the model server", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("noted: tangerine"), reply.text("it was tangerine")] })
      const first = yield* start(f.settings)
      const one = yield* first.harness.runTurn({ sessionId: "restart", prompt: "remember tangerine" })
      yield* first.stop

      const second = yield* start(f.settings)
      yield* Effect.addFinalizer(() => second.stop)
      const two = yield* second.harness.runTurn({ sessionId: "restart", prompt: "what was it?", model: "mock-model-2" })
      expect(two.threadId).toBe(one.threadId)
      expect(two.finalText).toBe("it was tangerine")
      const [before, after] = yield* f.model.requests
      expect((before!.json as { model: string }).model).toBe("mock-model")
      expect((after!.json as { model: string }).model).toBe("mock-model-2")
      // the resumed thread carries the first exchange
      expect(after!.body).toContain("remember tangerine")
      expect(after!.body).toContain("noted: tangerine")
      const state = sessionState((yield* second.store.read("restart")).records)
      expect(state.binding?.threadId).toBe(one.threadId)
      expect(state.modelChoice).toBe("mock-model-2")
    })
  )

  it.scopedLive("[S12] a harness stopped mid-turn and started again resumes the bound thread", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.steps({ type: "hang" }), reply.text("back again")] })
      const first = yield* start(f.settings)
      const turn = yield* first.harness.runTurn({ sessionId: "crash", prompt: "start something long" }).pipe(Effect.fork)
      yield* f.model.waitForRequests(1)
      const bound = sessionState((yield* first.store.read("crash")).records).binding?.threadId
      expect(bound).toBeDefined()
      // the harness goes away mid-turn: the turn fiber and then its app-server
      yield* Fiber.interrupt(turn)
      yield* first.stop
      const second = yield* start(f.settings)
      yield* Effect.addFinalizer(() => second.stop)
      const next = yield* second.harness.runTurn({ sessionId: "crash", prompt: "are you there?" })
      expect(next.threadId).toBe(bound)
      expect(next.finalText).toBe("back again")
      expect((yield* f.model.requests)[1]!.body).toContain("start something long")
    })
  )

  it.scopedLive("[S12] a session whose thread was deleted gets a clear notice and a fresh thread on the next message", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("first"), reply.text("second")] })
      const h = yield* start(f.settings)
      yield* Effect.addFinalizer(() => h.stop)
      const one = yield* h.harness.runTurn({ sessionId: "gone", prompt: "hello" })
      yield* Effect.scoped(
        Effect.flatMap(leaseSessionClient(h.pool, f.settings), (c) => c.requestRaw("thread/delete", { threadId: one.threadId }))
      )
      const two = yield* h.harness.runTurn({ sessionId: "gone", prompt: "still there?" })
      expect(two.threadId).not.toBe(one.threadId)
      expect(two.finalText).toBe("second")
      const delivered = yield* h.delivered
      expect(delivered.map((r) => r.source)).toEqual(["final", "notice", "final"])
      expect(delivered[1]!.text).toContain(one.threadId)
      expect(sessionState((yield* h.store.read("gone")).records).binding?.threadId).toBe(two.threadId)
    })
  )

  it.scopedLive("[S18][S11] message_tool mode: the final text stays private until the agent calls message(action=send)", () =>
    Effect.gen(function* () {
      const f = yield* fixture(
        {
          replies: [
            reply.text("private thoughts only"),
            reply.steps({
              type: "function_call",
              name: "message",
              namespace: "openclaw_direct",
              arguments: { action: "send", text: "hello from the message tool" }
            }),
            reply.text("done, sent it")
          ]
        },
        { visibleReplies: "message_tool" }
      )
      const h = yield* start(f.settings)
      yield* Effect.addFinalizer(() => h.stop)
      const quiet = yield* h.harness.runTurn({ sessionId: "mt", prompt: "think quietly" })
      expect(quiet).toMatchObject({ finalText: "private thoughts only", delivered: false })
      expect(yield* h.delivered).toEqual([])
      const loud = yield* h.harness.runTurn({ sessionId: "mt", prompt: "now tell them" })
      expect(loud.delivered).toBe(false)
      expect(yield* h.delivered).toEqual([{ sessionId: "mt", text: "hello from the message tool", media: [], source: "message_tool" }])
      const requests = yield* f.model.requests
      // the tool was advertised in openclaw_direct and its result went back to the model
      expect(requests[0]!.body).toContain("openclaw_direct")
      expect(requests[2]!.body).toContain('"output":"sent"')
    })
  )

  it.scopedLive("[S19] on the real app-server a heartbeat turn gets the heartbeat-scoped collaboration instruction and notifies through heartbeat_respond; an ordinary turn stays in default mode", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        replies: [
          reply.text("an ordinary answer"),
          reply.steps({
            type: "function_call",
            name: "heartbeat_respond",
            namespace: "openclaw",
            arguments: { outcome: "notify", message: "two PRs wait for review" }
          }),
          reply.text("notified")
        ]
      })
      const h = yield* start(f.settings)
      yield* Effect.addFinalizer(() => h.stop)
      yield* h.harness.runTurn({ sessionId: "hb", prompt: "an ordinary question" })
      const result = yield* h.harness.runTurn({ sessionId: "hb", prompt: "heartbeat: check in", kind: "heartbeat" })
      expect(result.status).toBe("completed")
      // the heartbeat's own final text ("notified") is not posted; its notify is
      expect(yield* h.delivered).toEqual([
        { sessionId: "hb", text: "an ordinary answer", media: [], source: "final" },
        { sessionId: "hb", text: "two PRs wait for review", media: [], source: "heartbeat" }
      ])
      const requests = yield* f.model.requests
      // what the app-server sent the model: the collaboration-mode part only on the heartbeat turn's request
      expect(requests[0]!.body).not.toContain("<collaboration_mode>")
      expect(requests[1]!.body).toMatch(/<collaboration_mode>## Heartbeat\\nThis turn is a scheduled heartbeat/)
      expect(requests[2]!.body).toContain("recorded: notify")
    })
  )
})
