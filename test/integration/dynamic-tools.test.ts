// Embedder dynamic tools on the real app-server: a scripted model calls a searchable tool
// (`openclaw`) and a direct-only one (`openclaw_direct`), the handlers run in the harness and their text goes back to the
// model (S11, S21); after_tool_call observations are in observations.test.ts.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import * as Live from "../../layers/Live.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../../src/config/Settings.js"
import { DynamicTools, tool } from "../../src/ports/DynamicTools.js"
import { type LifecycleEvent, PluginHooks } from "../../src/ports/PluginHooks.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import type { HarnessTool } from "../../src/tools/ToolCatalog.js"
import { fixture } from "../support/harness.js"

/** the live harness with the embedder's tools, tool observations and this observer, built into the current scope */
const start = (settings: HarnessSettings, tools: ReadonlyArray<HarnessTool>, observe: (event: LifecycleEvent) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const observer = Layer.succeed(PluginHooks, { observe })
    // the production path: the embedder provides DynamicTools and PluginHooks; the live layer installs the rooms
    const context = yield* Layer.build(
      Live.layer(settings).pipe(
        Layer.provideMerge(RecordingDelivery.layer),
        Layer.provide(DynamicTools.layer(tools)),
        Layer.provide(observer)
      )
    )
    return Context.get(context, CodexHarness)
  })

describe("dynamic tools on the real app-server", () => {
  it.scopedLive("[S11][S21] the model calls a searchable and a direct-only embedder tool; each result reaches the next model request", () =>
    Effect.gen(function* () {
      const calls: Array<string> = []
      const weather = tool({
        name: "lookup_weather",
        description: "The weather in a city.",
        input: Schema.Struct({ city: Schema.String }),
        handler: (args, call) =>
          Effect.sync(() => {
            calls.push(`weather:${args.city}:${call.sessionId}`)
            return `${args.city}: sunny, 21C`
          })
      })
      const ticket = tool({
        name: "get_ticket",
        description: "A ticket by number.",
        catalogMode: "direct-only",
        input: Schema.Struct({ id: Schema.Number }),
        handler: (args) =>
          Effect.sync(() => {
            calls.push(`ticket:${args.id}`)
            return { id: args.id, title: "broken build" }
          })
      })
      const f = yield* fixture({
        replies: [
          reply.steps({ type: "function_call", name: "lookup_weather", namespace: "openclaw", arguments: { city: "Paris" } }),
          reply.steps({ type: "function_call", name: "get_ticket", namespace: "openclaw_direct", arguments: { id: 7 } }),
          reply.text("all done")
        ]
      })
      const harness = yield* start(f.settings, [weather, ticket], () => Effect.void)
      const result = yield* harness.runTurn({ sessionId: "dyn", prompt: "weather and ticket please" })
      expect(result).toMatchObject({ status: "completed", finalText: "all done" })
      expect(calls).toEqual(["weather:Paris:dyn", "ticket:7"])
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(3)
      // the direct-only tool is in the model's tool list from the start; the searchable one is deferred (not loaded
      // up front) and was still callable in its namespace
      expect(requests[0]!.body).toContain('{"type":"namespace","name":"openclaw_direct"')
      expect(requests[0]!.body).not.toContain('{"type":"namespace","name":"openclaw",')
      expect(requests[1]!.body).toContain("function_call_output")
      expect(requests[1]!.body).toContain("Paris: sunny, 21C")
      // the structured result went back as JSON text
      expect(requests[2]!.body).toContain('\\"title\\":\\"broken build\\"')
    })
  )
})
