// Embedder dynamic tools on the real app-server: a scripted model calls a searchable tool
// (`openclaw`) and a direct-only one (`openclaw_direct`), the handlers run in the harness and their text goes back to the
// model (S11, S21); the ToolCallHooks port around those calls rewrites, refuses and observes them (S21);
// after_tool_call observations of native tools are in observations.test.ts.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import * as Live from "../../layers/internal/Live.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../../src/config/Settings.js"
import { DynamicTools, tool } from "../../src/ports/DynamicTools.js"
import { type LifecycleEvent, PluginHooks } from "../../src/ports/PluginHooks.js"
import { type DynamicToolCall, ToolCallHooks, type ToolCallHooksService } from "../../src/ports/ToolCallHooks.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import type { HarnessTool } from "../../src/tools/ToolCatalog.js"
import { fixture, functionCallOutput, leftBehind } from "../support/harness.js"

/** the live harness with the embedder's tools, tool observations and this observer, built into the current scope */
const start = (
  settings: HarnessSettings,
  tools: ReadonlyArray<HarnessTool>,
  observe: (event: LifecycleEvent) => Effect.Effect<void>,
  hooks?: ToolCallHooksService
) =>
  Effect.gen(function* () {
    const observer = Layer.succeed(PluginHooks, { observe })
    const toolHooks = hooks === undefined ? Layer.empty : Layer.succeed(ToolCallHooks, hooks)
    // the production path: the embedder provides DynamicTools and PluginHooks; the live layer installs the rooms
    const context = yield* Layer.build(
      Live.layer(settings).pipe(
        Layer.provideMerge(RecordingDelivery.layer),
        Layer.provide(DynamicTools.layer(tools)),
        Layer.provide(observer),
        Layer.provide(toolHooks)
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

describe("plugin/middleware hooks around dynamic tool calls on the real app-server", () => {
  const echo = (ran: Array<string>) =>
    tool({
      name: "echo_city",
      description: "Says the city back.",
      input: Schema.Struct({ city: Schema.String }),
      handler: (args) => Effect.sync(() => ran.push(args.city)).pipe(Effect.as(`city: ${args.city}`))
    })
  const callCity = (city: string, callId: string) =>
    reply.steps({ type: "function_call", name: "echo_city", namespace: "openclaw", arguments: { city }, callId })
  /** one turn of a harness with these hooks, in a scope of its own: its app-server is gone once it returns */
  const turnWith = (settings: HarnessSettings, ran: Array<string>, hooks: ToolCallHooksService, sessionId: string) =>
    Effect.scoped(Effect.flatMap(start(settings, [echo(ran)], () => Effect.void, hooks), (harness) =>
      harness.runTurn({ sessionId, prompt: "echo a city" })))

  it.scopedLive("[S21] a before-hook rewrites the arguments: the tool runs with the rewrite and the model gets its result", () =>
    Effect.gen(function* () {
      const ran: Array<string> = []
      const seen: Array<unknown> = []
      const f = yield* fixture({ replies: [callCity("Pariss", "call_rewrite"), reply.text("fixed")] })
      const result = yield* turnWith(f.settings, ran, {
        before: (call) =>
          Effect.sync(() => {
            seen.push(call.arguments)
            return { _tag: "Rewrite", arguments: { city: "Paris" } } as const
          })
      }, "hook-rewrite")
      expect(result).toMatchObject({ status: "completed", finalText: "fixed" })
      // the hook saw the model's arguments; the handler got only the rewrite
      expect(seen).toEqual([{ city: "Pariss" }])
      expect(ran).toEqual(["Paris"])
      const bodies = (yield* f.model.requests).map((r) => r.body)
      expect(functionCallOutput(bodies, "call_rewrite")).toBe("city: Paris")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("[S21] a before-hook refuses the call: the tool never runs and the model's next request carries the reason", () =>
    Effect.gen(function* () {
      const ran: Array<string> = []
      const f = yield* fixture({ replies: [callCity("Atlantis", "call_refused"), reply.text("understood")] })
      const result = yield* turnWith(f.settings, ran, {
        before: (call) =>
          Effect.succeed(
            (call.arguments as { city?: unknown }).city === "Atlantis"
              ? { _tag: "Refuse", reason: "Atlantis is not on the map" } as const
              : { _tag: "Proceed" } as const
          )
      }, "hook-refuse")
      expect(result).toMatchObject({ status: "completed", finalText: "understood" })
      expect(ran).toEqual([])
      const bodies = (yield* f.model.requests).map((r) => r.body)
      expect(bodies).toHaveLength(2)
      expect(functionCallOutput(bodies, "call_refused")).toBe("echo_city was refused: Atlantis is not on the map")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("[S21] an after-hook sees the call as it ran (after a rewrite) and its result; the model gets that result", () =>
    Effect.gen(function* () {
      const ran: Array<string> = []
      const observed: Array<DynamicToolCall & { readonly result: { readonly text: string; readonly success: boolean } }> = []
      const f = yield* fixture({ replies: [callCity("Oslo", "call_after"), reply.text("seen")] })
      const result = yield* turnWith(f.settings, ran, {
        before: () => Effect.succeed({ _tag: "Rewrite", arguments: { city: "Oslo, Norway" } } as const),
        after: (call) => Effect.sync(() => void observed.push(call))
      }, "hook-after")
      expect(result).toMatchObject({ status: "completed", finalText: "seen" })
      expect(observed).toEqual([
        expect.objectContaining({
          name: "echo_city",
          namespace: "openclaw",
          arguments: { city: "Oslo, Norway" },
          call: expect.objectContaining({ sessionId: "hook-after", callId: "call_after" }),
          result: { text: "city: Oslo, Norway", success: true }
        })
      ])
      const bodies = (yield* f.model.requests).map((r) => r.body)
      expect(ran).toEqual(["Oslo, Norway"])
      expect(functionCallOutput(bodies, "call_after")).toBe("city: Oslo, Norway")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )
})
