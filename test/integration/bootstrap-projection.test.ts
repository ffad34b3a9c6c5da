// Thread-bootstrap projection on the real app-server (S38): a session whose bound thread is gone continues on a fresh
// thread into which the prior conversation is injected (`thread/inject_items`) before its first turn: the model's next
// request carries the user and assistant text and the tool call's name and id, never the call's raw argument value.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import * as Live from "../../layers/internal/Live.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { ContextEngine, skipAll } from "../../src/ports/ContextEngine.js"
import { DynamicTools, tool } from "../../src/ports/DynamicTools.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leaseSessionClient, leftBehind } from "../support/harness.js"

const secretPlace = "Zanzibar-7731-raw"

const weather = tool({
  name: "lookup_weather",
  description: "The weather at a place.",
  input: Schema.Struct({ place: Schema.String, days: Schema.Number }),
  handler: () => Effect.succeed("sunny, 31 degrees")
})

const scenario = (engine: Layer.Layer<never> = Layer.empty) =>
  Effect.gen(function* () {
    const f = yield* fixture({
      replies: [
        reply.steps({
          type: "function_call",
          name: "lookup_weather",
          namespace: "openclaw",
          arguments: { place: secretPlace, days: 3 },
          callId: "call_weather_1"
        }),
        reply.text("It is sunny where you asked about."),
        reply.text("still sunny")
      ]
    })
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      Live.layer(f.settings).pipe(Layer.provideMerge(RecordingDelivery.layer), Layer.provide(DynamicTools.layer([weather])), Layer.provide(engine)),
      scope
    )
    const harness = Context.get(context, CodexHarness)
    const one = yield* harness.runTurn({ sessionId: "carry", prompt: "what is the weather at my secret place?" })
    expect(one).toMatchObject({ status: "completed", finalText: "It is sunny where you asked about." })
    // the model sent the raw value once, in the call it made: that is where it lives, not in any projection
    expect((yield* f.model.requests)[1]!.body).toContain(secretPlace)
    yield* Effect.scoped(
      Effect.flatMap(leaseSessionClient(Context.get(context, ClientPool), f.settings), (c) => c.requestRaw("thread/delete", { threadId: one.threadId }))
    )
    const two = yield* harness.runTurn({ sessionId: "carry", prompt: "and tomorrow?" })
    const records = (yield* Context.get(context, SessionStore).read("carry")).records
    yield* Scope.close(scope, Exit.void)
    expect(yield* leftBehind(f.stateDir)).toEqual([])
    const requests = yield* f.model.requests
    return { one, two, records, requests, next: requests.at(-1)! }
  })

describe("thread-bootstrap projection on the real app-server", () => {
  it.scopedLive("[S38] a session whose thread is gone continues on a fresh thread carrying the conversation: text, the call's name and id, its input shape, never its raw argument value", () =>
    Effect.gen(function* () {
      const { one, records, requests, two } = yield* scenario()
      expect(two.threadId).not.toBe(one.threadId)
      expect(two.finalText).toBe("still sunny")
      expect(requests).toHaveLength(3)
      const input = (requests[2]!.json as { input: ReadonlyArray<Record<string, unknown>> }).input
      const body = requests[2]!.body
      // the projected conversation reached the model, in order, before this turn's prompt
      expect(body).toContain("what is the weather at my secret place?")
      expect(body).toContain("It is sunny where you asked about.")
      const call = input.find((i) => i.type === "function_call" && i.call_id === "call_weather_1")
      expect(call).toMatchObject({ name: "lookup_weather", arguments: JSON.stringify({ place: "<string>", days: "<number>" }) })
      expect(input.find((i) => i.type === "function_call_output" && i.call_id === "call_weather_1")).toMatchObject({
        output: "sunny, 31 degrees"
      })
      const texts = JSON.stringify(input)
      expect(texts.indexOf("what is the weather at my secret place?")).toBeLessThan(texts.indexOf("call_weather_1"))
      expect(texts.indexOf("It is sunny where you asked about.")).toBeLessThan(texts.indexOf("and tomorrow?"))
      // never the raw argument value
      expect(body).not.toContain(secretPlace)
      // the mirror: the shape of the call, never its value; the gone thread's notice, then what was carried
      expect(JSON.stringify(records)).not.toContain(secretPlace)
      expect(records.find((r) => r._tag === "tool")).toMatchObject({ callId: "call_weather_1", inputShape: '{"place":"<string>","days":"<number>"}' })
      const notices = records.filter((r) => r._tag === "notice").map((r) => (r as { text: string }).text)
      expect(notices).toEqual([
        expect.stringContaining("no longer exists; continuing on a new thread"),
        `Carried 3 entries of this session's conversation into thread ${two.threadId}.`
      ])
      expect(sessionState(records).binding?.threadId).toBe(two.threadId)
    }))

  it.scopedLive("[S38] a context engine that declines leaves the fresh thread empty", () =>
    Effect.gen(function* () {
      const { next, records, two } = yield* scenario(Layer.succeed(ContextEngine, skipAll))
      expect(two.finalText).toBe("still sunny")
      expect(next.body).not.toContain("what is the weather at my secret place?")
      expect(next.body).not.toContain("call_weather_1")
      expect(records.filter((r) => r._tag === "notice")).toHaveLength(1)
    }))
})
