// A session continuing on a fresh Codex thread on request (`/new --carry`, `/new --thread`) on the real app-server (S38):
// `newThread(carry)` detaches the binding; the next turn opens a fresh thread and, with carry, the conversation is
// injected into it before its turn starts, exactly as for a gone thread: the model's request carries the user and
// assistant text and the tool call's name and id, never the call's raw argument value. Without carry it carries none.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import * as Live from "../../layers/internal/Live.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { DynamicTools, tool } from "../../src/ports/DynamicTools.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind } from "../support/harness.js"

const secretPlace = "Zanzibar-7731-raw"

const weather = tool({
  name: "lookup_weather",
  description: "The weather at a place.",
  input: Schema.Struct({ place: Schema.String, days: Schema.Number }),
  handler: () => Effect.succeed("sunny, 31 degrees")
})

const scenario = (carry: boolean) =>
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
      Live.layer(f.settings).pipe(Layer.provideMerge(RecordingDelivery.layer), Layer.provide(DynamicTools.layer([weather]))),
      scope
    )
    const harness = Context.get(context, CodexHarness)
    const one = yield* harness.runTurn({ sessionId: "fresh", prompt: "what is the weather at my secret place?" })
    expect(one).toMatchObject({ status: "completed", finalText: "It is sunny where you asked about." })
    expect((yield* f.model.requests)[1]!.body).toContain(secretPlace)
    const asked = yield* harness.newThread("fresh", { carry })
    const two = yield* harness.runTurn({ sessionId: "fresh", prompt: "and tomorrow?" })
    const records = (yield* Context.get(context, SessionStore).read("fresh")).records
    yield* Scope.close(scope, Exit.void)
    expect(yield* leftBehind(f.stateDir)).toEqual([])
    const requests = yield* f.model.requests
    return { asked, one, two, records, requests }
  })

describe("a fresh thread in the same session on the real app-server", () => {
  it.scopedLive("[S38] newThread(carry): the next turn runs on a new thread whose request carries the conversation: text, the call's name and id, never its raw argument value", () =>
    Effect.gen(function* () {
      const { asked, one, records, requests, two } = yield* scenario(true)
      expect(asked).toEqual({ previousThreadId: one.threadId, carry: true })
      expect(two.threadId).not.toBe(one.threadId)
      expect(two.finalText).toBe("still sunny")
      expect(requests).toHaveLength(3)
      const input = (requests[2]!.json as { input: ReadonlyArray<Record<string, unknown>> }).input
      const body = requests[2]!.body
      expect(body).toContain("what is the weather at my secret place?")
      expect(body).toContain("It is sunny where you asked about.")
      expect(input.find((i) => i.type === "function_call" && i.call_id === "call_weather_1")).toMatchObject({
        name: "lookup_weather",
        arguments: JSON.stringify({ place: "<string>", days: "<number>" })
      })
      expect(input.find((i) => i.type === "function_call_output" && i.call_id === "call_weather_1")).toMatchObject({
        output: "sunny, 31 degrees"
      })
      const texts = JSON.stringify(input)
      expect(texts.indexOf("It is sunny where you asked about.")).toBeLessThan(texts.indexOf("and tomorrow?"))
      expect(body).not.toContain(secretPlace)
      // the mirror: the detach with its carry, what was carried (no "gone" notice: nothing was lost), the new binding
      expect(JSON.stringify(records)).not.toContain(secretPlace)
      expect(records.find((r) => r._tag === "detached")).toMatchObject({ threadId: one.threadId, carry: true })
      expect(records.filter((r) => r._tag === "notice").map((r) => (r as { text: string }).text)).toEqual([
        `Carried 3 entries of this session's conversation into thread ${two.threadId}.`
      ])
      expect(sessionState(records).binding?.threadId).toBe(two.threadId)
    }))

  it.scopedLive("[S38] newThread without carry: the next turn runs on a new, empty thread whose request has none of the conversation", () =>
    Effect.gen(function* () {
      const { asked, one, records, requests, two } = yield* scenario(false)
      expect(asked).toEqual({ previousThreadId: one.threadId, carry: false })
      expect(two.threadId).not.toBe(one.threadId)
      expect(two.finalText).toBe("still sunny")
      const next = requests.at(-1)!
      expect(next.body).toContain("and tomorrow?")
      expect(next.body).not.toContain("what is the weather at my secret place?")
      expect(next.body).not.toContain("It is sunny where you asked about.")
      expect(next.body).not.toContain("call_weather_1")
      const input = (next.json as { input: ReadonlyArray<Record<string, unknown>> }).input
      expect(input.filter((i) => i.type === "function_call" || i.type === "function_call_output")).toEqual([])
      expect(records.filter((r) => r._tag === "notice")).toEqual([])
      expect(records.find((r) => r._tag === "detached")).not.toHaveProperty("carry")
      expect(sessionState(records).binding?.threadId).toBe(two.threadId)
    }))
})
