// The embedder's dynamic tools and native tool observations against the in-memory app-server: catalog placement (S11),
// execution inside the harness with text results and serialized nested calls (S21), and asynchronous after_tool_call
// observations of native tool completions (S23).
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, Layer, Ref, Schema } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import * as EmbedderTools from "../../src/tools/EmbedderTools.js"
import { DuplicateToolName, DynamicTools, InvalidToolName, tool } from "../../src/ports/DynamicTools.js"
import { type LifecycleEvent, PluginHooks } from "../../src/ports/PluginHooks.js"
import * as Connection from "../../src/appserver/AppServerConnection.js"
import { Transport } from "../../src/appserver/Transport.js"
import { type ClientReply, type Handler, layer as mockLayer, MockAppServer } from "../../src/testing/MockAppServer.js"
import type { HarnessTool } from "../../src/tools/ToolCatalog.js"
import * as ToolObservations from "../../src/tools/ToolObservations.js"
import * as ToolUseLedger from "../../src/turn/ToolUseLedger.js"

const weather = tool({
  name: "lookup_weather",
  description: "the weather in a city",
  input: Schema.Struct({ city: Schema.String, days: Schema.optional(Schema.Number) }),
  // args are inferred from the Schema: city is a string, days a number | undefined
  handler: (args) => Effect.succeed(`${args.city.toUpperCase()}: sunny for ${args.days ?? 1} day(s)`)
})
const ticket = tool({
  name: "get-ticket",
  description: "a ticket as JSON",
  catalogMode: "direct-only",
  input: Schema.Struct({ id: Schema.Number }),
  handler: (args) => Effect.succeed({ id: args.id, title: "broken build", open: true })
})
const failing = tool({
  name: "always_fails",
  description: "fails",
  input: Schema.Struct({}),
  handler: () => Effect.fail(new Error("the backend is down"))
})
const dying = tool({
  name: "always_dies",
  description: "dies",
  input: Schema.Struct({}),
  handler: () => Effect.die("kaboom")
})

/** the production composition with the embedder's tools and lifecycle observer */
const harnessWith = (tools: ReadonlyArray<HarnessTool>, observer: Layer.Layer<PluginHooks>) =>
  Test.layer({ script: { turns: "hang" } }).pipe(Layer.provide(DynamicTools.layer(tools)), Layer.provide(observer))

const noObserver = Layer.succeed(PluginHooks, { observe: () => Effect.void })

/** a turn/start that runs `script` against the active turn, then completes the turn */
const turnRunning = (
  script: (call: (request: Record<string, unknown>) => Effect.Effect<ClientReply, unknown>, threadId: string, turnId: string) => Effect.Effect<void, unknown>
): Handler => (params, ctx) =>
  Effect.tap(ctx.fallback, () =>
    ctx.afterReply(
      Effect.gen(function* () {
        const turnId = yield* ctx.awaitActiveTurn(params.threadId)
        const call = (request: Record<string, unknown>) =>
          ctx.request("item/tool/call", { threadId: params.threadId, turnId, ...request })
        yield* script(call, params.threadId, turnId)
        yield* ctx.finishTurn(params.threadId, { status: "completed", text: "done" })
      })
    )
  )

const resultOf = (reply: ClientReply) => {
  expect(reply._tag).toBe("Result")
  return (reply as { result: { success: boolean; contentItems: ReadonlyArray<{ type: string; text: string }> } }).result
}

describe("embedder dynamic tools", () => {
  it.scoped("[S11] searchable tools go to openclaw with deferLoading, direct-only tools to openclaw_direct", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* mock.setHandler("turn/start", turnRunning(() => Effect.void))
      yield* harness.runTurn({ sessionId: "catalog", prompt: "hi" })
      const start = (yield* mock.requests("thread/start"))[0]!.params as { dynamicTools: ReadonlyArray<any> }
      const searchable = start.dynamicTools.find((s) => s.name === "openclaw")
      const direct = start.dynamicTools.find((s) => s.name === "openclaw_direct")
      expect(searchable.tools.find((t: any) => t.name === "lookup_weather")).toMatchObject({
        type: "function",
        deferLoading: true,
        inputSchema: { type: "object", required: ["city"] }
      })
      expect(direct?.tools.map((t: any) => t.name)).toEqual(["get-ticket"])
      expect(direct.tools[0].deferLoading).toBeUndefined()
      expect(searchable.tools.map((t: any) => t.name)).not.toContain("get-ticket")
    }).pipe(Effect.provide(harnessWith([weather, ticket], noObserver))))

  it.scoped("[S21] a call round-trips with decoded arguments and a text result; structured results come back as JSON text", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const replies: Array<ClientReply> = []
      yield* mock.setHandler(
        "turn/start",
        turnRunning((call) =>
          Effect.gen(function* () {
            replies.push(yield* call({ callId: "c1", namespace: "openclaw", tool: "lookup_weather", arguments: { city: "Paris", days: 2 } }))
            replies.push(yield* call({ callId: "c2", namespace: "openclaw_direct", tool: "get-ticket", arguments: { id: 7 } }))
          })
        )
      )
      const result = yield* harness.runTurn({ sessionId: "round", prompt: "go" })
      expect(result.status).toBe("completed")
      expect(resultOf(replies[0]!)).toEqual({ success: true, contentItems: [{ type: "inputText", text: "PARIS: sunny for 2 day(s)" }] })
      const json = resultOf(replies[1]!)
      expect(json.success).toBe(true)
      expect(JSON.parse(json.contentItems[0]!.text)).toEqual({ id: 7, title: "broken build", open: true })
    }).pipe(Effect.provide(harnessWith([weather, ticket], noObserver))))

  it.scoped("[S21] bad arguments, a failing handler and a dying handler each give a failed result that says why", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const replies: Array<ClientReply> = []
      yield* mock.setHandler(
        "turn/start",
        turnRunning((call) =>
          Effect.gen(function* () {
            replies.push(yield* call({ callId: "b1", namespace: "openclaw", tool: "lookup_weather", arguments: { city: 42 } }))
            replies.push(yield* call({ callId: "b2", namespace: "openclaw", tool: "always_fails", arguments: {} }))
            replies.push(yield* call({ callId: "b3", namespace: "openclaw", tool: "always_dies", arguments: {} }))
          })
        )
      )
      yield* harness.runTurn({ sessionId: "bad", prompt: "go" })
      const [badArgs, failed, died] = replies.map(resultOf)
      expect(badArgs!.success).toBe(false)
      expect(badArgs!.contentItems[0]!.text).toMatch(/invalid arguments for lookup_weather[\s\S]*city/)
      expect(failed).toEqual({ success: false, contentItems: [{ type: "inputText", text: "always_fails failed: the backend is down" }] })
      expect(died!.success).toBe(false)
      expect(died!.contentItems[0]!.text).toContain("kaboom")
    }).pipe(Effect.provide(harnessWith([weather, failing, dying], noObserver))))

  // live clock: the second call is given real time to (wrongly) start
  it.scopedLive("[S21] nested calls in one session are serialized: the second starts only after the first finishes", () => {
    const firstStarted = Deferred.unsafeMake<void>(FiberId.none)
    const releaseFirst = Deferred.unsafeMake<void>(FiberId.none)
    const log: Array<string> = []
    let whileFirstRan: ReadonlyArray<string> = []
    const slow = tool({
      name: "slow_step",
      description: "a step that takes a while",
      input: Schema.Struct({ n: Schema.Number }),
      handler: (args) =>
        Effect.gen(function* () {
          log.push(`start ${args.n}`)
          if (args.n === 1) {
            yield* Deferred.succeed(firstStarted, undefined)
            yield* Deferred.await(releaseFirst)
          }
          log.push(`end ${args.n}`)
          return `step ${args.n}`
        })
    })
    return Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const replies: Array<ClientReply> = []
      yield* mock.setHandler(
        "turn/start",
        turnRunning((call) =>
          Effect.gen(function* () {
            const one = yield* Effect.fork(call({ callId: "n1", namespace: "openclaw", tool: "slow_step", arguments: { n: 1 } }))
            yield* Deferred.await(firstStarted)
            const two = yield* Effect.fork(call({ callId: "n2", namespace: "openclaw", tool: "slow_step", arguments: { n: 2 } }))
            // the second call is in the harness now, but waits for the first
            yield* Effect.sleep("50 millis")
            whileFirstRan = [...log]
            yield* Deferred.succeed(releaseFirst, undefined)
            replies.push(yield* Fiber.join(one), yield* Fiber.join(two))
          })
        )
      )
      yield* harness.runTurn({ sessionId: "nested", prompt: "go" })
      expect(whileFirstRan).toEqual(["start 1"])
      expect(log).toEqual(["start 1", "end 1", "start 2", "end 2"])
      expect(replies.map((r) => resultOf(r).contentItems[0]!.text)).toEqual(["step 1", "step 2"])
    }).pipe(Effect.provide(harnessWith([slow], noObserver)), Effect.timeout("10 seconds"))
  })

  it.effect("[S11] a bad or duplicate tool name is a typed error when the port is built", () =>
    Effect.gen(function* () {
      const bad = tool({ ...weather, name: "look up weather", handler: () => Effect.succeed("x") })
      const long = tool({ ...weather, name: "x".repeat(65), handler: () => Effect.succeed("x") })
      const badExit = yield* Effect.exit(Layer.build(DynamicTools.layer([weather, bad])).pipe(Effect.scoped))
      expect(badExit).toStrictEqual(Exit.fail(new InvalidToolName({ toolName: "look up weather", reason: "use 1 to 64 letters, digits, '_' or '-'" })))
      const longError = yield* Effect.flip(DynamicTools.make([long]))
      expect(longError._tag).toBe("InvalidToolName")
      const duplicate = yield* Effect.flip(DynamicTools.make([weather, ticket, weather]))
      expect(duplicate).toBeInstanceOf(DuplicateToolName)
      expect(duplicate.message).toContain("lookup_weather")
      const reserved = yield* Effect.flip(DynamicTools.make([tool({ ...weather, name: "message", handler: () => Effect.succeed("") })]))
      expect(reserved).toMatchObject({ _tag: "InvalidToolName", reason: "reserved by the harness" })
      const fine = yield* DynamicTools.make([weather, ticket])
      expect((yield* fine.tools).map((t) => t.name)).toEqual(["lookup_weather", "get-ticket"])
      // a composition without the port serves no embedder tools
      expect((yield* EmbedderTools.fromOptionalPort()).tools?.("s")).toEqual([])
      const provided = yield* EmbedderTools.fromOptionalPort().pipe(Effect.provide(DynamicTools.layer([weather])))
      expect(provided.tools?.("s").map((t) => t.name)).toEqual(["lookup_weather"])
    }))
})

describe("after_tool_call observations", () => {
  const command = (id: string) => ({
    type: "commandExecution",
    id,
    command: "echo hi",
    commandActions: [],
    cwd: "/w",
    status: "completed",
    exitCode: 0
  })

  it.scoped("[S23] one observation per native tool use even when item/completed repeats; none for dynamicToolCall items", () => {
    const seen = Ref.unsafeMake<ReadonlyArray<LifecycleEvent>>([])
    const last = Deferred.unsafeMake<void>(FiberId.none)
    const observer = Layer.succeed(PluginHooks, {
      observe: (event) =>
        Ref.update(seen, (all) => [...all, event]).pipe(
          Effect.zipRight(event.type === "after_tool_call" && event.toolUseId === "sentinel" ? Deferred.succeed(last, undefined) : Effect.void)
        )
    })
    return Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const dynamic = { type: "dynamicToolCall", id: "dyn1", tool: "lookup_weather", namespace: "openclaw", arguments: {}, status: "completed" }
      const mcp = { type: "mcpToolCall", id: "m1", server: "docs", tool: "search", arguments: {}, status: "completed" }
      yield* mock.setHandler(
        "turn/start",
        (params, ctx) =>
          Effect.tap(ctx.fallback, () =>
            ctx.afterReply(
              Effect.gen(function* () {
                const turnId = yield* ctx.awaitActiveTurn(params.threadId)
                for (const item of [command("call_1"), command("call_1"), dynamic, mcp, command("sentinel")]) {
                  yield* ctx.notify("item/completed", { threadId: params.threadId, turnId, completedAtMs: 0, item })
                }
                yield* ctx.finishTurn(params.threadId, { status: "completed", text: "done" })
              })
            )
          )
      )
      const result = yield* harness.runTurn({ sessionId: "obs", prompt: "run echo" })
      yield* Deferred.await(last)
      const observed = (yield* Ref.get(seen)).filter((e) => e.type === "after_tool_call")
      expect(observed.map((e) => [e.toolUseId, e.tool, e.status])).toEqual([
        ["call_1", "commandExecution", "completed"],
        ["m1", "mcp:docs/search", "completed"],
        ["sentinel", "commandExecution", "completed"]
      ])
      expect(observed[0]).toMatchObject({ sessionId: "obs", threadId: result.threadId, turnId: result.turnId })
    }).pipe(Effect.provide(harnessWith([weather], observer)))
  })

  it.scoped("[S23] tool uses the PostToolUse relay already handled are not observed again", () =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      const done = yield* Deferred.make<void>()
      const observer = Layer.succeed(PluginHooks, { observe: () => Effect.void })
      const extension = yield* ToolObservations.make({ handledByPostToolUse: (id) => id === "relayed" }).pipe(
        Effect.provide(observer)
      )
      // the extension on its own, over a connection to the in-memory app-server
      const peerAndConnection = Effect.gen(function* () {
        const transport = yield* Transport
        const connection = yield* Connection.make(yield* transport.spawn({}))
        return { connection, peer: yield* (yield* MockAppServer).latest }
      })
      yield* Effect.gen(function* () {
        const { connection, peer } = yield* peerAndConnection
        yield* extension.install!({
          sessionId: "relay",
          threadId: "t1",
          kind: "user",
          connection,
          observe: (event) =>
            Effect.sync(() => event.type === "after_tool_call" && seen.push(event.toolUseId)).pipe(
              Effect.zipRight(event.type === "after_tool_call" && event.toolUseId === "last" ? Deferred.succeed(done, undefined) : Effect.void)
            )
        })
        for (const item of [command("relayed"), command("last")]) {
          yield* peer.notify("item/completed", { threadId: "t1", turnId: "u1", completedAtMs: 0, item })
        }
        yield* Deferred.await(done)
      }).pipe(Effect.provide(mockLayer()))
      expect(seen).toEqual(["last"])
    }))

  it.scoped("[S23] while the relay reports PostToolUse, a completion waits for its PostToolUse hook run: skipped when the relay reported it, observed when not, and at the turn's end when no hook ran", () =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      const done = yield* Deferred.make<void>()
      const ledger = ToolUseLedger.make()
      ledger.setRelayReports()
      const extension = yield* ToolObservations.make({ ledger }).pipe(
        Effect.provide(Layer.succeed(PluginHooks, { observe: () => Effect.void }))
      )
      yield* Effect.gen(function* () {
        const transport = yield* Transport
        const connection = yield* Connection.make(yield* transport.spawn({}))
        const peer = yield* (yield* MockAppServer).latest
        yield* extension.install!({
          sessionId: "relay",
          threadId: "t1",
          kind: "user",
          connection,
          observe: (event) =>
            Effect.sync(() => event.type === "after_tool_call" && seen.push(event.toolUseId)).pipe(
              Effect.zipRight(event.type === "after_tool_call" && event.toolUseId === "no-hook" ? Deferred.succeed(done, undefined) : Effect.void)
            )
        })
        const completed = (id: string) => peer.notify("item/completed", { threadId: "t1", turnId: "u1", completedAtMs: 0, item: command(id) })
        // Codex's order: item/completed, then the PostToolUse hook run (the relay records the tool use while it runs)
        const postToolUse = (id: string) =>
          peer.notify("hook/completed", {
            threadId: "t1",
            turnId: "u1",
            run: { id: `post-tool-use:2:/<session-flags>/config.toml:${id}`, eventName: "postToolUse", status: "completed" }
          })
        yield* completed("relayed")
        ledger.record("t1", "relayed")
        yield* postToolUse("relayed")
        yield* completed("unrelayed")
        yield* postToolUse("unrelayed")
        yield* completed("no-hook")
        yield* peer.notify("turn/completed", { threadId: "t1", turn: { id: "u1", status: "completed", items: [], error: null } })
        yield* Deferred.await(done)
      }).pipe(Effect.provide(mockLayer()))
      expect(seen).toEqual(["unrelayed", "no-hook"])
      // the relay's record was used up
      expect(ledger.take("t1", "relayed")).toBe(false)
    }))

  it.scoped("[S23] an observer that never returns cannot hold up the turn or the connection", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      // more than the connection's notification buffer (4,096) and the observation backlog (1,024)
      const many = Array.from({ length: 5_000 }, (_, i) => command(`c${i}`))
      yield* mock.setHandler("turn/start", (params, ctx) =>
        Effect.tap(ctx.fallback, () =>
          ctx.afterReply(
            Effect.gen(function* () {
              const turnId = yield* ctx.awaitActiveTurn(params.threadId)
              for (const item of many) {
                yield* ctx.notify("item/completed", { threadId: params.threadId, turnId, completedAtMs: 0, item })
              }
              yield* ctx.finishTurn(params.threadId, { status: "completed", text: "done" })
            })
          )
        ))
      const first = yield* harness.runTurn({ sessionId: "stuck", prompt: "go" })
      expect(first.status).toBe("completed")
      yield* mock.setHandler("turn/start", turnRunning(() => Effect.void))
      const second = yield* harness.runTurn({ sessionId: "stuck", prompt: "again" })
      expect(second).toMatchObject({ status: "completed", finalText: "done" })
    }).pipe(
      Effect.provide(harnessWith([weather], Layer.succeed(PluginHooks, { observe: () => Effect.never })))
    ))
})
