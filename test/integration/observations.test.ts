// Lifecycle observations on the real app-server, as PluginHooks observers see them. S23: a native tool use is reported
// once as after_tool_call: by the PostToolUse hook relay when it relays that event (a HookPolicy with `postToolUse`),
// else from `item/completed` (Codex sends item/completed before it runs the PostToolUse hook, so the projection
// waits for that hook run before deciding). S24: llm_input and llm_output come from the turn, before_compaction and
// after_compaction from a real `thread/compact/start`, and every native hook run (`hook/started`, `hook/completed`)
// arrives as a `codex_app_server.hook` agent event and as nothing else.
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer } from "effect"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import * as HookRelay from "../../src/approvals/HookRelay.js"
import * as Compaction from "../../src/compaction/Compaction.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type LifecycleEvent, PluginHooks } from "../../src/ports/PluginHooks.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import type { TurnEvent } from "../../src/turn/TurnEvent.js"
import { fixture, leftBehind } from "../support/harness.js"

const repo = path.resolve(import.meta.dirname, "../..")
/** the relay as Codex starts it: the compiled script (bin/codex-harness.js may run a stale bundle) */
const relayCommand = [process.execPath, path.join(repo, "dist/src/cli/hookRelay.js")]

/** A PluginHooks observer that keeps every event and lets a test wait for one (a receipt, never a sleep). */
const recorder = Effect.gen(function* () {
  const events: Array<LifecycleEvent> = []
  const waiters: Array<{ readonly check: (e: LifecycleEvent) => boolean; readonly done: Deferred.Deferred<void> }> = []
  const observe = (event: LifecycleEvent) =>
    Effect.suspend(() => {
      events.push(event)
      return Effect.forEach(waiters.filter((w) => w.check(event)), (w) => Deferred.succeed(w.done, undefined), { discard: true })
    })
  const waitFor = (check: (e: LifecycleEvent) => boolean) =>
    Effect.gen(function* () {
      if (events.some(check)) return
      const done = yield* Deferred.make<void>()
      waiters.push({ check, done })
      yield* Deferred.await(done).pipe(Effect.timeout("120 seconds"))
    })
  return { events, observe, waitFor }
})

/** the live harness with this observer and hook policy, built into the current scope */
const start = (settings: HarnessSettings, observe: (e: LifecycleEvent) => Effect.Effect<void>, policy: HookRelay.HookPolicyService = {}) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(
      Live.layer(settings).pipe(
        Layer.provideMerge(RecordingDelivery.layer),
        Layer.provide(Layer.succeed(PluginHooks, { observe })),
        Layer.provide(Layer.succeed(HookRelay.HookPolicy, policy)),
        Layer.provide(Layer.succeed(HookRelay.HookRelayConfig, { relayCommand }))
      )
    )
    return { harness: Context.get(context, CodexHarness), compaction: Context.get(context, Compaction.Compaction) }
  })

const exec = (cmd: string, callId: string) => reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd }, callId })
const afterToolCalls = (events: ReadonlyArray<LifecycleEvent>) =>
  events.flatMap((e) => (e.type === "after_tool_call" ? [e] : []))

/**
 * One command in a first turn, then a sentinel command in a second: the observer sees events in the order they were
 * handed over, and everything the first turn reports is handed over before it ends, so once the sentinel's
 * observation arrives a late duplicate of the first would have too.
 */
const oneCommand = (relayOn: boolean) =>
  Effect.gen(function* () {
    const f = yield* fixture(
      { replies: [exec("echo observed", "call_subject"), reply.text("ran it"), exec("echo sentinel", "call_sentinel"), reply.text("again")] },
      { sandbox: "danger-full-access", approvalPolicy: "never" }
    )
    const seen = yield* recorder
    const relayed: Array<string | undefined> = []
    const policy: HookRelay.HookPolicyService = relayOn
      ? { postToolUse: ({ payload }) => Effect.sync(() => relayed.push(payload.toolUseId)) }
      : {}
    const first = yield* Effect.scoped(
      Effect.gen(function* () {
        const { harness } = yield* start(f.settings, seen.observe, policy)
        const first = yield* harness.runTurn({ sessionId: "obs", prompt: "run a command" })
        yield* harness.runTurn({ sessionId: "obs", prompt: "run the sentinel" })
        yield* seen.waitFor((e) => e.type === "after_tool_call" && e.toolUseId === "call_sentinel")
        return first
      })
    )
    expect(yield* leftBehind(f.stateDir)).toEqual([])
    return { first, relayed, observed: afterToolCalls(seen.events).filter((e) => e.toolUseId === "call_subject") }
  })

describe("lifecycle observations on the real app-server", () => {
  it.scopedLive("[S23] with the PostToolUse relay on, one command gives exactly one after_tool_call: the relay's", () =>
    Effect.gen(function* () {
      const { first, observed, relayed } = yield* oneCommand(true)
      // the relay did run for it (Codex's hook tool_use_id is the item id)
      expect(relayed).toEqual(["call_subject", "call_sentinel"])
      expect(observed).toHaveLength(1)
      expect(observed[0]).toMatchObject({
        type: "after_tool_call",
        source: "post_tool_use",
        sessionId: "obs",
        threadId: first.threadId,
        turnId: first.turnId,
        toolUseId: "call_subject",
        tool: "commandExecution",
        item: { tool_name: "Bash", tool_input: { command: "echo observed" }, tool_response: "observed\n" }
      })
    })
  )

  it.scopedLive("[S23] with the PostToolUse relay off, one command still gives exactly one after_tool_call, from item/completed", () =>
    Effect.gen(function* () {
      const { first, observed, relayed } = yield* oneCommand(false)
      expect(relayed).toEqual([])
      expect(observed).toHaveLength(1)
      expect(observed[0]).toMatchObject({
        type: "after_tool_call",
        source: "item",
        threadId: first.threadId,
        turnId: first.turnId,
        toolUseId: "call_subject",
        tool: "commandExecution",
        status: "completed",
        item: { type: "commandExecution", id: "call_subject" }
      })
    })
  )

  it.scopedLive("[S24] llm_input/llm_output from turns, before/after_compaction from thread/compact/start, native hook runs only as codex_app_server.hook agent events", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        rules: [{ whenRequestIncludes: "CONTEXT CHECKPOINT COMPACTION", reply: reply.text("summary") }],
        replies: [reply.text("noted: tangerine"), reply.text("still here")]
      })
      const seen = yield* recorder
      const hookNotifications: Array<{ readonly method: string; readonly params: unknown }> = []
      const onEvent = (event: TurnEvent) =>
        Effect.sync(() => {
          if (event._tag === "Notification" && event.notification.method.startsWith("hook/")) hookNotifications.push(event.notification)
        })
      const { compacted, first, second } = yield* Effect.scoped(
        Effect.gen(function* () {
          const { compaction, harness } = yield* start(f.settings, seen.observe)
          const first = yield* harness.runTurn({ sessionId: "life", prompt: "remember tangerine", onEvent })
          const compacted = yield* compaction.compact("life")
          const second = yield* harness.runTurn({ sessionId: "life", prompt: "are you there?", onEvent })
          // the last things the second turn reports: its reply and its Stop hook's completion
          yield* seen.waitFor((e) => e.type === "llm_output" && e.turnId === second.turnId)
          const last = hookNotifications.at(-1)
          yield* seen.waitFor((e) => e.type === "agent_event" && e.payload === last?.params)
          return { compacted, first, second }
        })
      )
      expect(yield* leftBehind(f.stateDir)).toEqual([])

      const at = (turnId: string) => ({ sessionId: "life", threadId: first.threadId, turnId })
      const of = (type: LifecycleEvent["type"]) => seen.events.filter((e) => e.type === type)
      expect(of("llm_input")).toEqual([
        { type: "llm_input", ...at(first.turnId), input: ["remember tangerine"] },
        { type: "llm_input", ...at(second.turnId), input: ["are you there?"] }
      ])
      expect(of("llm_output")).toEqual([
        { type: "llm_output", ...at(first.turnId), text: "noted: tangerine" },
        { type: "llm_output", ...at(second.turnId), text: "still here" }
      ])
      expect(of("before_compaction")).toEqual([{ type: "before_compaction", ...at(compacted.turnId) }])
      expect(of("after_compaction")).toEqual([{ type: "after_compaction", ...at(compacted.turnId), status: "completed" }])
      expect((yield* f.model.requests)[1]!.body).toContain("CONTEXT CHECKPOINT COMPACTION")

      // every hook notification of the turns (the harness's own Stop hook runs on each) is one agent event, same payload
      expect(hookNotifications.length).toBeGreaterThanOrEqual(4)
      const agentEvents = of("agent_event")
      for (const n of hookNotifications) {
        const phase = n.method === "hook/started" ? "started" : "completed"
        expect(agentEvents).toContainEqual({ type: "agent_event", name: "codex_app_server.hook", sessionId: "life", phase, payload: n.params })
      }
      expect(agentEvents.every((e) => e.type === "agent_event" && e.name === "codex_app_server.hook")).toBe(true)
      // ... and nothing else: no tool was used, so no other kind of event exists, and none carries a hook run
      expect([...new Set(seen.events.map((e) => e.type))].sort()).toEqual(
        ["after_compaction", "agent_event", "before_compaction", "llm_input", "llm_output"]
      )
      expect(seen.events.filter((e) => e.type !== "agent_event" && JSON.stringify(e).includes('"eventName"'))).toEqual([])
    })
  )
})
