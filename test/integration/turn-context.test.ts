// What an embedder gives a turn reaches the model through the real app-server: the route (S6), personality "none" on
// start and resume (S7), the AGENTS.md snapshot and project-doc suppression (S8), skills, memory, adapter context and
// profile files (S9), the sessions_yield guidance (S10) and Code Mode's direct-only namespace (S11). Each assertion reads
// the request the real app-server sent to the scripted model, not what the harness meant to send.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { DynamicTools, tool } from "../../src/ports/DynamicTools.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import type { HarnessTool } from "../../src/tools/ToolCatalog.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { directOnlyCodeModeConfig } from "../../src/threads/ThreadSetup.js"
import { dynamicToolSpecs } from "../../src/tools/ToolCatalog.js"
import * as TurnRunner from "../../src/turn/TurnRunner.js"
import { runBin } from "../support/cli.js"
import { fixture, type Fixture, leaseSessionClient } from "../support/harness.js"

interface InputItem {
  readonly type?: string
  readonly role?: string
  readonly content?: ReadonlyArray<{ readonly text?: string }>
  readonly tools?: ReadonlyArray<unknown>
}

/** each text part of each message of a model request, with its role, in order (Codex puts several in one message) */
const messages = (body: string): ReadonlyArray<{ readonly role: string; readonly text: string }> =>
  (JSON.parse(body) as { input: ReadonlyArray<InputItem> }).input
    .filter((item) => item.type === "message")
    .flatMap((item) => (item.content ?? []).map((c) => ({ role: item.role ?? "", text: c.text ?? "" })))

const developer = (body: string) => messages(body).filter((m) => m.role === "developer").map((m) => m.text).join("\n\n")

/** the live harness (with the embedder's tools, if any), built into the current scope */
const start = (settings: HarnessSettings, tools: ReadonlyArray<HarnessTool> = []) =>
  Effect.map(
    Layer.build(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer), Layer.provide(DynamicTools.layer(tools)))),
    (context) => Context.get(context, CodexHarness)
  )

const lastRequest = (f: { readonly model: { readonly requests: Effect.Effect<ReadonlyArray<{ readonly body: string }>> } }) =>
  Effect.map(f.model.requests, (requests) => {
    const body = requests[requests.length - 1]!.body
    return body
  })

/**
 * The positive controls' turn: a thread opened by hand on the session's shared client, with thread params the harness
 * would never send (a personality, tools without their Code Mode config), so an assertion's opposite can be seen.
 */
const handOpenedTurn = (f: Fixture, params: { readonly personality?: "friendly"; readonly tools?: ReadonlyArray<HarnessTool>; readonly config?: Record<string, unknown> }) =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(Live.layer(f.settings).pipe(Layer.provideMerge(RecordingDelivery.layer)))
      const connection = yield* leaseSessionClient(Context.get(context, ClientPool), f.settings)
      const threadSettings = { cwd: f.workDir, approvalPolicy: "never", sandbox: "read-only", model: f.settings.model } as const
      const started = yield* connection.request("thread/start", {
        ...TurnRunner.threadParams(threadSettings, params.config !== undefined ? { config: params.config } : {}, false),
        ...(params.personality !== undefined ? { personality: params.personality } : {}),
        ...(params.tools !== undefined ? { dynamicTools: dynamicToolSpecs(params.tools) } : {})
      })
      return yield* TurnRunner.runTurn(connection, started.thread.id, [{ type: "text", text: "hi" }], threadSettings)
    })
  ).pipe(Effect.orDie)

const echoTool = (name: string, catalogMode?: "direct-only") =>
  tool({
    name,
    description: `The ${name} tool.`,
    ...(catalogMode !== undefined ? { catalogMode } : {}),
    input: Schema.Struct({}),
    handler: () => Effect.succeed("ok")
  })

/**
 * The pinned binary's default model. Its base instructions start "You are Codex" and, for any personality but "none",
 * carry a "# Personality" section (checked on 0.171.0); an unknown model name gets generic instructions without one.
 */
const codexModel = { model: "gpt-6.2-sol" }

describe("turn context on the real app-server", () => {
  it.scopedLive("[S7] threads are started and resumed with personality \"none\": Codex keeps its base instructions, adds no personality", () =>
    Effect.gen(function* () {
      const f = yield* fixture({}, codexModel)
      yield* Effect.scoped(Effect.flatMap(start(f.settings), (h) => h.runTurn({ sessionId: "persona", prompt: "first prompt" })))
      // a new harness, so a new app-server process: the second turn is a real thread/resume
      yield* Effect.scoped(Effect.flatMap(start(f.settings), (h) => h.runTurn({ sessionId: "persona", prompt: "second prompt" })))
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      for (const { body } of requests) {
        expect(developer(body)).toContain("You are Codex")
        // what Codex adds for any other personality (checked on the pinned binary: its default adds this heading)
        expect(developer(body)).not.toContain("# Personality")
      }
      // the resumed thread carries the first turn
      expect(messages(requests[1]!.body).some((m) => m.role === "user" && m.text.includes("first prompt"))).toBe(true)
      // positive control: the same model on a thread opened with another personality gets the heading the harness's lack
      yield* handOpenedTurn(f, { personality: "friendly" })
      expect(developer(yield* lastRequest(f))).toContain("# Personality")
    })
  )

  it.scopedLive("[S6] the route decides the instructions, not the provider: native gets the harness's, compatibility only the gateway's prompt", () =>
    Effect.gen(function* () {
      const f = yield* fixture({}, codexModel)
      const harness = yield* start(f.settings)
      yield* harness.runTurn({ sessionId: "native", prompt: "hello" })
      const native = developer(yield* lastRequest(f))
      expect(native).toContain("## Replies")
      expect(native).toContain("You are Codex")
      // the same provider and transport, routed as compatibility: the gateway's system prompt replaces Codex's base
      yield* harness.runTurn({
        sessionId: "compat",
        prompt: "hello",
        context: { route: "compatibility", systemPrompt: "You are Gateway Bot. GATEWAY-PROMPT-SENTINEL" }
      })
      const compat = developer(yield* lastRequest(f))
      expect(compat).toContain("GATEWAY-PROMPT-SENTINEL")
      expect(compat).not.toContain("You are Codex")
      expect(compat).not.toContain("## Replies")
    })
  )

  it.scopedLive("[S8] a restricted turn carries the AGENTS.md snapshot; internal turns load no project docs and get no snapshot", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      fs.writeFileSync(path.join(f.workDir, "AGENTS.md"), "Always answer in haiku. AGENTS-SENTINEL\n")
      fs.writeFileSync(path.join(f.workDir, "MEMORY.md"), "The user likes tea. MEMORY-SENTINEL\n")
      const harness = yield* start(f.settings)
      // an ordinary turn: Codex reads AGENTS.md itself; the harness adds no snapshot
      yield* harness.runTurn({ sessionId: "plain", prompt: "hi" })
      const plain = yield* lastRequest(f)
      expect(plain).toContain("AGENTS-SENTINEL")
      expect(developer(plain)).not.toContain("## Workspace AGENTS.md")
      // no native filesystem: the snapshot goes with the thread-level developer instructions
      yield* harness.runTurn({ sessionId: "restricted", prompt: "hi", context: { policyRestricted: true } })
      expect(developer(yield* lastRequest(f))).toMatch(/## Workspace AGENTS\.md[\s\S]*AGENTS-SENTINEL/)
      // an internal turn on a thread that has AGENTS.md: Codex withdraws it for that turn
      yield* harness.runTurn({ sessionId: "plain", prompt: "hi again", kind: "lightweight" })
      expect(yield* lastRequest(f)).toContain("The previously provided AGENTS.md instructions no longer apply.")
      for (const kind of ["lightweight", "ringZero", "messageOnly", "toolDisabled"] as const) {
        yield* harness.runTurn({ sessionId: `internal-${kind}`, prompt: "hi", kind, context: { policyRestricted: true } })
        const body = yield* lastRequest(f)
        expect(body, kind).not.toContain("AGENTS-SENTINEL")
        expect(body, kind).not.toContain("MEMORY-SENTINEL")
      }
    })
  )

  it.scopedLive("[S9] delivery, adapter context and profile files are thread instructions; skills and memory pointers are turn-scoped; without memory tools MEMORY.md and BOOTSTRAP.md are turn input", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      fs.writeFileSync(path.join(f.workDir, "MEMORY.md"), "The user likes tea. MEMORY-SENTINEL\n")
      fs.writeFileSync(path.join(f.workDir, "BOOTSTRAP.md"), "Introduce yourself. BOOTSTRAP-SENTINEL\n")
      const harness = yield* start(f.settings, [echoTool("memory_search")])
      const context = {
        adapterContext: "Telegram group ops. ADAPTER-SENTINEL",
        profileFiles: [{ name: "SOUL.md", content: "You are Molty. SOUL-SENTINEL" }],
        skills: [{ name: "release-notes", description: "Write release notes. SKILL-SENTINEL", path: "/skills/release-notes/SKILL.md" }]
      }
      // memory_search is served, so memory is reached through it
      yield* harness.runTurn({ sessionId: "tools", prompt: "PROMPT-WITH-TOOLS", context })
      const withTools = yield* lastRequest(f)
      const dev = messages(withTools).filter((m) => m.role === "developer")
      const thread = dev.find((m) => m.text.includes("## Replies"))?.text ?? ""
      expect(thread).toContain("ADAPTER-SENTINEL")
      expect(thread).toContain("SOUL-SENTINEL")
      // the collaboration-mode instructions are a part of their own, apart from the thread's
      const turnScoped = dev.find((m) => m.text.startsWith("<collaboration_mode>"))?.text ?? ""
      expect(turnScoped).toContain("SKILL-SENTINEL")
      expect(turnScoped).toContain("search it with memory_search")
      expect(turnScoped).toContain("BOOTSTRAP-SENTINEL")
      expect(turnScoped).not.toContain("ADAPTER-SENTINEL")
      expect(thread).not.toContain("SKILL-SENTINEL")
      expect(withTools).not.toContain("MEMORY-SENTINEL")

      // no memory tools: BOOTSTRAP.md, then MEMORY.md, as plain input before the prompt; no pointer
      const plain = yield* start(f.settings)
      yield* plain.runTurn({ sessionId: "inline", prompt: "PROMPT-INLINE" })
      const inline = messages(yield* lastRequest(f))
      const at = (needle: string) => inline.findIndex((m) => m.role === "user" && m.text.includes(needle))
      expect(at("BOOTSTRAP-SENTINEL")).toBeGreaterThanOrEqual(0)
      expect(at("BOOTSTRAP-SENTINEL")).toBeLessThan(at("MEMORY-SENTINEL"))
      expect(at("MEMORY-SENTINEL")).toBeLessThan(at("PROMPT-INLINE"))
      expect(inline.filter((m) => m.role === "developer").map((m) => m.text).join("\n")).not.toContain("## Memory")
    })
  )

  it.scopedLive("[S10] with sessions_yield served the parent is told to yield, wait only when blocked and never poll; without it, not", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const withYield = yield* start(f.settings, [echoTool("sessions_spawn"), echoTool("sessions_yield", "direct-only")])
      yield* withYield.runTurn({ sessionId: "yield", prompt: "hi" })
      const on = developer(yield* lastRequest(f))
      expect(on).toContain("## Delegation")
      expect(on).toContain("call sessions_yield to end this turn")
      expect(on).toContain("only when your very next step cannot proceed without the child's result")
      expect(on).toContain("Never poll for completion")
      const withoutYield = yield* start(f.settings, [echoTool("sessions_spawn")])
      yield* withoutYield.runTurn({ sessionId: "no-yield", prompt: "hi" })
      const off = developer(yield* lastRequest(f))
      expect(off).toContain("## Delegation")
      expect(off).not.toContain("sessions_yield")
    })
  )

  it.scopedLive("[S11] direct-only tools are their own namespace, visible to the model and absent from nested Code Mode; the instructions place each tool", () =>
    Effect.gen(function* () {
      // the binary's default model runs Code Mode (its `exec` tool declares the nested tools it can call)
      const f = yield* fixture({}, codexModel)
      const harness = yield* start(f.settings, [echoTool("lookup_weather"), echoTool("get_ticket", "direct-only")])
      yield* harness.runTurn({ sessionId: "code-mode", prompt: "hi" })
      const body = yield* lastRequest(f)
      expect(body).toContain('"name":"exec"')
      expect(body).toContain('{"type":"namespace","name":"openclaw_direct"')
      // nested Code Mode declares what it may call as `<namespace>__<tool>`
      expect(body).not.toContain("openclaw_direct__get_ticket")
      const dev = developer(body)
      expect(dev).toMatch(/In `openclaw`: [^\n]*lookup_weather/)
      expect(dev).not.toMatch(/In `openclaw`: [^\n]*get_ticket/)
      expect(dev).toContain("In `openclaw_direct`: get_ticket.")
      // positive control: the same tools on a thread opened without the harness's Code Mode config are declared to
      // nested Code Mode under their namespace, which is what the assertion above finds absent
      const tools = [echoTool("lookup_weather"), echoTool("get_ticket", "direct-only")]
      yield* handOpenedTurn(f, { tools })
      expect(yield* lastRequest(f)).toContain("openclaw_direct__get_ticket")
      yield* handOpenedTurn(f, { tools, config: { ...directOnlyCodeModeConfig } })
      expect(yield* lastRequest(f)).not.toContain("openclaw_direct__get_ticket")
    })
  )

  it.scopedLive("[S6][S8] the CLI: --turn-kind and the config's turnContext reach the model", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      fs.writeFileSync(path.join(f.workDir, "AGENTS.md"), "AGENTS-SENTINEL\n")
      fs.writeFileSync(path.join(f.stateDir, "prompt.txt"), "You are Gateway Bot. CLI-PROMPT-SENTINEL\n")
      const config = path.join(f.stateDir, "config.json")
      fs.writeFileSync(config, JSON.stringify({ turnContext: { route: "compatibility", systemPromptPath: "prompt.txt" } }))
      const common = ["--provider-url", f.model.url, "--state-dir", f.stateDir, "-C", f.workDir]
      const internal = yield* runBin(["run", ...common, "--turn-kind", "lightweight", "hi"])
      expect(internal.code, internal.stderr).toBe(0)
      expect(yield* lastRequest(f)).not.toContain("AGENTS-SENTINEL")
      const compat = yield* runBin(["run", ...common, "--config", config, "hi"])
      expect(compat.code, compat.stderr).toBe(0)
      const dev = developer(yield* lastRequest(f))
      expect(dev).toContain("CLI-PROMPT-SENTINEL")
      expect(dev).not.toContain("## Replies")
      const bad = yield* runBin(["run", ...common, "--turn-kind", "sideways", "hi"])
      expect(bad.code).toBe(2)
      expect(bad.stderr.trim().split("\n")).toHaveLength(1)
    })
  )
})
