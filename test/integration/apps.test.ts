// Connected-apps admission on the real app-server (S2-S5), fully offline: a CODEX_HOME with the offline ChatGPT login of
// `imageGenerationHome`, a local marketplace whose plugin owns `connector_calendar` (.app.json), and a tiny ChatGPT
// backend on 127.0.0.1 whose apps MCP server (`/backend-api/ps/mcp`) offers one tool of that connector, so Codex's own
// `app/installed` reports the app. The harness admits it, starts the thread deny-by-default and checks it before the
// first turn; a config that admits an app Codex cannot call ends with the provisional thread deleted (gone from thread/list).
// A supervised branch in that home goes through the same admission for its canonical thread, and cleans up after it.
import { describe, expect, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { Context, Effect, Exit, Layer, type Scope } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import type { AppsSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { Branching } from "../../src/supervision/Branching.js"
import * as Supervision from "../../src/supervision/layer.js"
import * as TurnRunner from "../../src/turn/TurnRunner.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { eventually, fixture, imageGenerationHome, leaseSessionClient, leftBehind } from "../support/harness.js"

// Connected apps are Codex plugins: this file's app-servers run with them on, Codex's default (the rest of the suite
// turns them off, vitest.config.ts; with them off every test here fails), and the CLI it starts inherits this. The
// login-shell snapshot stays off.
const suiteOverrides = process.env["CODEX_HARNESS_APP_SERVER_CONFIG"]
beforeAll(() => {
  process.env["CODEX_HARNESS_APP_SERVER_CONFIG"] = "features.shell_snapshot=false"
})
afterAll(() => {
  if (suiteOverrides === undefined) delete process.env["CODEX_HARNESS_APP_SERVER_CONFIG"]
  else process.env["CODEX_HARNESS_APP_SERVER_CONFIG"] = suiteOverrides
})

const tool = {
  name: "calendar_list_events",
  description: "List events",
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  _meta: { connector_id: "connector_calendar", connector_name: "Calendar" }
}

/** the ChatGPT backend's apps MCP server (streamable HTTP, JSON answers); everything else 404 */
const appsBackend = Effect.acquireRelease(
  Effect.async<{ server: http.Server; url: string }>((resume) => {
    const server = http.createServer((req, res) => {
      let body = ""
      req.on("data", (d) => (body += d))
      req.on("end", () => {
        if (req.method === "POST" && req.url?.startsWith("/backend-api/ps/mcp")) {
          const m = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } }
          if (m.id === undefined) return void res.writeHead(202).end()
          const result = m.method === "initialize"
            ? { protocolVersion: m.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "apps", version: "1" } }
            : m.method === "tools/list"
            ? { tools: [tool] }
            : {}
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }))
          return
        }
        res.writeHead(404).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as { port: number }
      resume(Effect.succeed({ server, url: `http://127.0.0.1:${address.port}/backend-api/` }))
    })
  }),
  ({ server }) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
)

const marketplace = (root: string) => {
  const plugin = path.join(root, "plugins", "demo")
  fs.mkdirSync(path.join(root, ".agents", "plugins"), { recursive: true })
  fs.mkdirSync(path.join(plugin, ".codex-plugin"), { recursive: true })
  fs.writeFileSync(
    path.join(root, ".agents", "plugins", "marketplace.json"),
    JSON.stringify({ name: "local-test", plugins: [{ name: "demo", source: { source: "local", path: "./plugins/demo" } }] })
  )
  fs.writeFileSync(path.join(plugin, ".codex-plugin", "plugin.json"), JSON.stringify({ name: "demo", version: "1.0.0", apps: "./.app.json" }))
  fs.writeFileSync(path.join(plugin, ".app.json"), JSON.stringify({ apps: { calendar: { id: "connector_calendar" } } }))
  return path.join(root, ".agents", "plugins", "marketplace.json")
}

const run = (apps: AppsSettings, replies: Parameters<typeof fixture>[0]) =>
  Effect.gen(function* () {
    const f = yield* fixture(replies)
    const backend = yield* appsBackend
    const codexHome = imageGenerationHome(path.join(f.stateDir, "codex-home"), f.model.url)
    const config = fs.readFileSync(path.join(codexHome, "config.toml"), "utf8")
    fs.writeFileSync(path.join(codexHome, "config.toml"), config.replace(/chatgpt_base_url = .*/, `chatgpt_base_url = ${JSON.stringify(backend.url)}`))
    const mk = marketplace(path.join(f.stateDir, "mk"))
    const settings = { ...f.settings, providerUrl: undefined, codexHome, apps }
    return { f, settings, mk }
  })

describe("connected apps on the real app-server", () => {
  it.scopedLive("[S2][S3][S4] an allowed, plugin-owned app is admitted: deny-by-default thread, app/installed confirms it, then the turn", () =>
    Effect.gen(function* () {
      const { f, mk, settings } = yield* run({ plugins: { "demo@local-test": { allow: ["connector_calendar"] } }, disabledPlugins: [] }, {
        replies: [reply.text("done")]
      })
      const result = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer)))
          const connection = yield* leaseSessionClient(Context.get(context, ClientPool), settings)
          yield* connection.requestRaw("marketplace/add", { source: path.dirname(path.dirname(path.dirname(mk))) })
          yield* connection.requestRaw("plugin/install", { pluginName: "demo", marketplacePath: mk })
          const outcome = yield* Context.get(context, CodexHarness).runTurn({ sessionId: "apps", prompt: "hi" })
          const installed = yield* connection.request("app/installed", { threadId: outcome.threadId })
          return { outcome, installed }
        })
      )
      expect(result.outcome.status).toBe("completed")
      expect(result.installed.apps).toEqual([expect.objectContaining({ id: "connector_calendar", enabled: true, callable: true })])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S2][S5] a plugin disabled in config keeps its app off on the thread although config.toml grants it account-wide", () =>
    Effect.gen(function* () {
      // "demo" is allowed connector_calendar but also disabled: nothing is admitted and the app is explicitly off (S5).
      const { f, mk, settings } = yield* run({ plugins: {}, disabledPlugins: ["demo@local-test"] }, { replies: [reply.text("done")] })
      const result = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer)))
          const connection = yield* leaseSessionClient(Context.get(context, ClientPool), settings)
          yield* connection.requestRaw("marketplace/add", { source: path.dirname(path.dirname(path.dirname(mk))) })
          yield* connection.requestRaw("plugin/install", { pluginName: "demo", marketplacePath: mk })
          // account-wide access to the connector, as a user's config.toml may grant it
          fs.appendFileSync(path.join(settings.codexHome, "config.toml"), "\n[apps.connector_calendar]\nenabled = true\n")
          const harness = Context.get(context, CodexHarness)
          const ok = yield* harness.runTurn({ sessionId: "off", prompt: "hi" })
          const installed = yield* connection.request("app/installed", { threadId: ok.threadId })
          return { ok, installed }
        })
      )
      expect(result.ok.status).toBe("completed")
      expect(result.installed.apps).toEqual([expect.objectContaining({ id: "connector_calendar", enabled: false, callable: false })])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S4] a failed check deletes the provisional thread: it is gone from thread/list and no turn reached the model", () =>
    Effect.gen(function* () {
      const { f, mk, settings } = yield* run({ plugins: { "demo@local-test": { allow: ["connector_calendar"] } }, disabledPlugins: [] }, {
        replies: [reply.text("never")]
      })
      const result = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer)))
          const connection = yield* leaseSessionClient(Context.get(context, ClientPool), settings)
          yield* connection.requestRaw("marketplace/add", { source: path.dirname(path.dirname(path.dirname(mk))) })
          yield* connection.requestRaw("plugin/install", { pluginName: "demo", marketplacePath: mk })
          // the user's own config turns the admitted app's tools off: Codex reports it enabled but not callable
          fs.appendFileSync(path.join(settings.codexHome, "config.toml"), "\n[apps.connector_calendar]\ndefault_tools_enabled = false\n")
          const exit = yield* Effect.exit(Context.get(context, CodexHarness).runTurn({ sessionId: "fail", prompt: "hi" }))
          const listed = yield* connection.request("thread/list", { modelProviders: [] })
          return { exit, listed }
        })
      )
      expect(Exit.isFailure(result.exit)).toBe(true)
      const text = JSON.stringify(Exit.isFailure(result.exit) ? result.exit.cause.toJSON() : "")
      expect(text).toContain("AppsNotConfirmed")
      expect(text).toContain('"cleanup":"deleted"')
      expect(result.listed.data).toEqual([])
      expect(yield* f.model.requests).toEqual([])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S3] a resumed bound thread gets the same one check: passing, its turn runs; failing, no turn, and the thread is kept and unloaded", () =>
    Effect.gen(function* () {
      const { f, mk, settings } = yield* run({ plugins: { "demo@local-test": { allow: ["connector_calendar"] } }, disabledPlugins: [] }, {
        replies: [reply.text("first"), reply.text("resumed"), reply.text("never")]
      })
      // each harness is its own app-server process: the session's second and third turns resume its bound thread
      const harness = <A, E>(use: (context: Context.Context<CodexHarness | ClientPool | SessionStore>) => Effect.Effect<A, E, Scope.Scope>) =>
        Effect.scoped(Effect.flatMap(Layer.build(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer))), use))
      const first = yield* harness((context) =>
        Effect.gen(function* () {
          const connection = yield* leaseSessionClient(Context.get(context, ClientPool), settings)
          yield* connection.requestRaw("marketplace/add", { source: path.dirname(path.dirname(path.dirname(mk))) })
          yield* connection.requestRaw("plugin/install", { pluginName: "demo", marketplacePath: mk })
          return yield* Context.get(context, CodexHarness).runTurn({ sessionId: "resumed", prompt: "hi" })
        })
      )
      expect(first.status).toBe("completed")
      const resumed = yield* harness((context) => Context.get(context, CodexHarness).runTurn({ sessionId: "resumed", prompt: "again" }))
      expect(resumed).toMatchObject({ status: "completed", threadId: first.threadId })
      expect(yield* f.model.requests).toHaveLength(2)

      // the user's own config turns the admitted app's tools off: Codex reports it enabled but not callable
      fs.appendFileSync(path.join(settings.codexHome, "config.toml"), "\n[apps.connector_calendar]\ndefault_tools_enabled = false\n")
      const result = yield* harness((context) =>
        Effect.gen(function* () {
          const exit = yield* Effect.exit(Context.get(context, CodexHarness).runTurn({ sessionId: "resumed", prompt: "and now?" }))
          const connection = yield* leaseSessionClient(Context.get(context, ClientPool), settings)
          // kept: still read back (from its rollout), not loaded here any more
          const read = yield* connection.request("thread/read", { threadId: first.threadId })
          // Codex unloads an unsubscribed thread from a timer (thread_unload_delay_secs=0), a moment after it answers
          const unloaded = yield* eventually(Effect.map(
            connection.requestRaw("thread/loaded/list", {}),
            (loaded) => !JSON.stringify(loaded).includes(first.threadId)
          ))
          const records = (yield* Context.get(context, SessionStore).read("resumed")).records
          return { exit, read, unloaded, records }
        })
      )
      expect(Exit.isFailure(result.exit)).toBe(true)
      const text = JSON.stringify(Exit.isFailure(result.exit) ? result.exit.cause.toJSON() : "")
      expect(text).toContain("AppsNotConfirmed")
      expect(text).toContain('"cleanup":"unloaded"')
      expect(text).toContain("connector_calendar is not enabled and callable")
      expect(yield* f.model.requests).toHaveLength(2)
      expect(result.read.thread.id).toBe(first.threadId)
      expect(result.unloaded).toBe(true)
      const bindings = result.records.flatMap((r) => (r._tag === "binding" ? [r.threadId] : []))
      expect(new Set(bindings)).toEqual(new Set([first.threadId]))
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S2] `apps list` shows the installed-plugin snapshot and why each configured app is admitted or not", () =>
    Effect.gen(function* () {
      const { f, mk, settings } = yield* run({ plugins: {}, disabledPlugins: [] }, {})
      yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer)))
          const connection = yield* leaseSessionClient(Context.get(context, ClientPool), settings)
          yield* connection.requestRaw("marketplace/add", { source: path.dirname(path.dirname(path.dirname(mk))) })
          yield* connection.requestRaw("plugin/install", { pluginName: "demo", marketplacePath: mk })
        })
      )
      const config = path.join(f.stateDir, "config.json")
      fs.writeFileSync(config, JSON.stringify({ apps: { plugins: { "demo@local-test": { allow: ["connector_calendar", "connector_mail"] } } } }))
      const common = ["--state-dir", f.stateDir, "--codex-home", settings.codexHome!, "-C", f.workDir, "--config", config]
      const listed = yield* runBin(["apps", "list", ...common])
      expect(listed.code, listed.stderr).toBe(0)
      expect(listed.stdout).toContain("demo@local-test  installed, enabled")
      expect(listed.stdout).toContain("connector_calendar (demo@local-test): admitted")
      expect(listed.stdout).toMatch(/connector_mail \(demo@local-test\): not admitted: .+/)
      const json = yield* runBin(["apps", "list", ...common, "--json"])
      const decisions = (JSON.parse(json.stdout) as { decisions: ReadonlyArray<{ appId: string; admitted: boolean }> }).decisions
      expect(decisions.map((d) => [d.appId, d.admitted])).toEqual([["connector_calendar", true], ["connector_mail", false]])
      // a session that does not exist is an error, not the runtime a new session would get
      const unknown = yield* runBin(["apps", "list", ...common, "--session", "no-such-session"])
      expect(unknown.code).toBe(1)
      expect(unknown.stderr.trim().split("\n")).toHaveLength(1)
      expect(unknown.stderr).toContain("no-such-session")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S4][S15] a supervised branch's first turn admits its canonical thread first; a failed check deletes it (really gone) and archives the probe", () =>
    Effect.gen(function* () {
      const { f, mk, settings: base } = yield* run({ plugins: { "demo@local-test": { allow: ["connector_calendar"] } }, disabledPlugins: [] }, {
        replies: [reply.text("source answer"), reply.text("branched answer")]
      })
      // the supervision home is the apps home: its threads, its plugins, its (offline) ChatGPT login
      const settings = { ...base, supervision: { enabled: true, codexHome: base.codexHome } }
      const config = path.join(settings.codexHome, "config.toml")
      const result = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(
            Supervision.layer.pipe(Layer.provideMerge(Live.layer(settings)), Layer.provideMerge(RecordingDelivery.layer))
          )
          const connection = yield* leaseSessionClient(Context.get(context, ClientPool), settings)
          yield* connection.requestRaw("marketplace/add", { source: path.dirname(path.dirname(path.dirname(mk))) })
          yield* connection.requestRaw("plugin/install", { pluginName: "demo", marketplacePath: mk })
          // the native source thread, made by another client of the home (no apps config of the harness's)
          const threadSettings: TurnRunner.ThreadSettings = { cwd: f.workDir, approvalPolicy: "never", sandbox: "read-only" }
          const source = (yield* connection.request("thread/start", { ...TurnRunner.threadParams(threadSettings, {}, true) })).thread.id
          yield* TurnRunner.runTurn(connection, source, [{ type: "text", text: "source question" }], threadSettings)
          const modelRequests = (yield* f.model.requests).length
          const branching = Context.get(context, Branching)
          const harness = Context.get(context, CodexHarness)
          const store = Context.get(context, SessionStore)

          // the user's config turns the admitted app's tools off: the canonical thread's check fails
          const plain = fs.readFileSync(config, "utf8")
          fs.writeFileSync(config, `${plain}\n[apps.connector_calendar]\ndefault_tools_enabled = false\n`)
          yield* branching.branch(source, { sessionId: "b-fail" })
          const failed = yield* Effect.flip(harness.runTurn({ sessionId: "b-fail", prompt: "go on" }))
          const canonical = (failed as { threadId?: string }).threadId ?? ""
          const read = yield* Effect.either(connection.request("thread/read", { threadId: canonical }))
          const listed = yield* connection.request("thread/list", { includedThreadIds: [canonical], modelProviders: [] })
          const failedRecords = (yield* store.read("b-fail")).records

          // the same branch once the app is callable: admitted, then history, binding and the turn
          fs.writeFileSync(config, plain)
          const made = yield* branching.branch(source, { sessionId: "b-ok" })
          const first = yield* harness.runTurn({ sessionId: "b-ok", prompt: "go on" })
          const okRecords = (yield* store.read("b-ok")).records
          return { failed, canonical, read, listed, failedRecords, made, first, okRecords, modelRequests, after: (yield* f.model.requests).length }
        })
      )
      expect(result.failed._tag).toBe("AppsNotConfirmed")
      expect(result.failed.message).toContain("the provisional thread was deleted")
      expect(result.canonical).not.toBe("")
      // really gone: thread/read finds neither a loaded thread nor a rollout, thread/list does not list it
      expect(result.read._tag).toBe("Left")
      expect(JSON.stringify(result.read)).toMatch(/thread not loaded|no rollout/)
      expect(result.listed.data).toEqual([])
      expect(result.failedRecords.map((r) => r._tag)).not.toContain("binding")
      expect(result.failedRecords.flatMap((r) => (r._tag === "probe" ? [r.status] : []))).toEqual(["open", "closed"])

      expect(result.made).toMatchObject({ sessionId: "b-ok" })
      expect(result.made.history.messages.map((m) => m.text)).toEqual(["source question", "source answer"])
      expect(result.first).toMatchObject({ status: "completed", finalText: "branched answer" })
      expect(result.okRecords.find((r) => r._tag === "binding")).toMatchObject({ threadId: result.first.threadId, locked: true })
      expect(result.okRecords.flatMap((r) => (r._tag === "probe" ? [r.status] : []))).toEqual(["open", "closed"])
      // the failed first turn asked the model nothing; the admitted one asked once
      expect(result.after).toBe(result.modelRequests + 1)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)
})
