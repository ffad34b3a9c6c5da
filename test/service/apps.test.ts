// Connected-apps admission (S2-S5) against the in-memory app-server under TestClock: the plugin/installed snapshot cache,
// exact plugin/read, provisional admission, the deny-by-default thread, the one app/installed check before the first
// turn, and the cleanup of a provisional thread that fails it (deleted; retired when the delete is not confirmed).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { leaseSessionClient, ordinaryRuntime } from "../support/harness.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { AppAdmission } from "../../src/apps/AppAdmission.js"
import type { AppsSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { type Handler, MockAppServer } from "../../src/testing/MockAppServer.js"

const MK = "/mock/mk/.agents/plugins/marketplace.json"
const summary = (name: string, enabled = true) => ({ id: `${name}@local`, name, installed: true, enabled })
const inventory = {
  marketplaces: [
    { name: "local", path: MK, plugins: [summary("demo"), summary("other"), summary("off")] },
    { name: "unrelated", path: "/elsewhere/marketplace.json", plugins: [summary("stranger")] }
  ],
  marketplaceLoadErrors: []
}
const appsOf: Record<string, ReadonlyArray<string>> = { demo: ["connector_calendar"], other: ["connector_mail"], off: ["connector_drive"] }
const pluginRead: Handler = (params: { pluginName: string }) =>
  Effect.succeed({
    plugin: {
      marketplaceName: "local",
      marketplacePath: MK,
      summary: summary(params.pluginName),
      apps: (appsOf[params.pluginName] ?? []).map((id) => ({ id, name: id })),
      skills: [],
      hooks: [],
      mcpServers: [],
      appTemplates: []
    }
  })
type Installed = { id: string; enabled: boolean; callable: boolean }
const appInstalled = (apps: ReadonlyArray<Installed>): Handler => () => Effect.succeed({ apps })
// like the real server: codex_apps reports ready for the new thread after thread/start is answered
const startWithAppsReady: Handler = (_params, ctx) =>
  Effect.tap(ctx.fallback, (r) =>
    ctx.afterReply(
      ctx.notify("mcpServer/startupStatus/updated", { threadId: (r as { thread: { id: string } }).thread.id, name: "codex_apps", status: "ready" })
    ))

const apps: AppsSettings = {
  // "other" is allowed an app it does not own; "off" is disabled in config (S5)
  plugins: { "demo@local": { allow: ["connector_calendar"] }, "other@local": { allow: ["connector_calendar"] } },
  disabledPlugins: ["off@local"],
  snapshotTtl: "5 minutes"
}
const threadRow = (id: string) => ({ id, modelProvider: "mock", preview: "hi", ephemeral: false, cwd: "/mock/workspace" })
/**
 * thread/delete, thread/read and thread/list as 0.171 answers them: a deleted thread reads as "thread not loaded" and
 * is not listed; a thread not deleted reads back (from its rollout) and is listed.
 */
const deletions = (): Record<string, Handler> => {
  const deleted = new Set<string>()
  return {
    "thread/delete": (params: { threadId: string }) => Effect.sync(() => (deleted.add(params.threadId), {})),
    "thread/read": (params: { threadId: string }) =>
      deleted.has(params.threadId)
        ? Effect.fail({ code: -32600, message: `thread not loaded: ${params.threadId}` })
        : Effect.succeed({ thread: threadRow(params.threadId) }),
    "thread/list": (params: { includedThreadIds: ReadonlyArray<string> }) =>
      Effect.succeed({ data: params.includedThreadIds.filter((id) => !deleted.has(id)).map(threadRow), nextCursor: null })
  }
}
const handlers = (installed: ReadonlyArray<Installed>, extra: Record<string, Handler> = {}) => ({
  "plugin/installed": () => Effect.succeed(inventory),
  "plugin/read": pluginRead,
  "app/installed": appInstalled(installed),
  "thread/start": startWithAppsReady,
  ...deletions(),
  ...extra
})
const confirmed = [
  { id: "connector_calendar", enabled: true, callable: true },
  { id: "connector_drive", enabled: false, callable: false }
]
const layerWith = (installed: ReadonlyArray<Installed>, extra: Record<string, Handler> = {}, settings = { apps }) =>
  Test.layer({ settings, script: { handlers: handlers(installed, extra) } })

const methods = Effect.flatMap(MockAppServer, (mock) => mock.messages).pipe(
  Effect.map((ms) => ms.flatMap((m) => ("method" in m && "id" in m && typeof m.method === "string" ? [m.method] : [])))
)
const recordsOf = (sessionId: string) => Effect.flatMap(SessionStore, (store) => store.read(sessionId)).pipe(Effect.map((s) => s.records))

describe("AppAdmission on the mock app-server", () => {
  it.scoped("[S2] the plugin/installed snapshot is cached per (runtime, workspace) for its TTL and can be invalidated", () =>
    Effect.gen(function* () {
      const admission = yield* AppAdmission
      const mock = yield* MockAppServer
      const connection = yield* leaseSessionClient(yield* ClientPool, Test.settings)
      const key = { poolKey: "p1", cwd: "/w1" }
      yield* admission.prepare(connection, key)
      yield* admission.prepare(connection, key)
      expect(yield* mock.requests("plugin/installed")).toHaveLength(1)
      expect((yield* mock.requests("plugin/installed"))[0]!.params).toEqual({ cwds: ["/w1"] })
      // another workspace, another runtime: their own snapshots
      yield* admission.snapshot(connection, { poolKey: "p1", cwd: "/w2" })
      yield* admission.snapshot(connection, { poolKey: "p2", cwd: "/w1" })
      expect(yield* mock.requests("plugin/installed")).toHaveLength(3)
      yield* TestClock.adjust("4 minutes")
      yield* admission.snapshot(connection, key)
      expect(yield* mock.requests("plugin/installed")).toHaveLength(3)
      yield* TestClock.adjust("61 seconds")
      yield* admission.snapshot(connection, key)
      expect(yield* mock.requests("plugin/installed")).toHaveLength(4)
      yield* admission.invalidate(key)
      yield* admission.snapshot(connection, key)
      expect(yield* mock.requests("plugin/installed")).toHaveLength(5)
      yield* admission.snapshot(connection, key)
      expect(yield* mock.requests("plugin/installed")).toHaveLength(5)
      yield* admission.invalidate()
      yield* admission.snapshot(connection, key)
      expect(yield* mock.requests("plugin/installed")).toHaveLength(6)
    }).pipe(Effect.provide(layerWith(confirmed))))

  it.scoped("[S2][S5] reads exactly the configured plugins and admits only allowed, ownership-proven apps", () =>
    Effect.gen(function* () {
      const admission = yield* AppAdmission
      const mock = yield* MockAppServer
      const connection = yield* leaseSessionClient(yield* ClientPool, Test.settings)
      const gate = yield* admission.prepare(connection, { poolKey: "p", cwd: "/w" })
      const reads = (yield* mock.requests("plugin/read")).map((r) => r.params)
      expect(reads).toEqual([
        { pluginName: "demo", marketplacePath: MK },
        { pluginName: "other", marketplacePath: MK },
        { pluginName: "off", marketplacePath: MK }
      ])
      expect(gate.admitted).toEqual(["connector_calendar"])
      expect(gate.decisions).toEqual([
        { pluginId: "demo@local", appId: "connector_calendar", admitted: true, reason: "allowed in config and owned by the plugin" },
        { pluginId: "other@local", appId: "connector_calendar", admitted: false, reason: "the plugin's own details do not list this app" },
        { pluginId: "off@local", appId: "connector_drive", admitted: false, reason: "the plugin is disabled in config" }
      ])
      // deny-by-default, the admitted app on, the disabled plugin's app explicitly off (S5)
      expect(gate.threadConfig).toEqual({
        apps: { _default: { enabled: false }, connector_drive: { enabled: false }, connector_calendar: { enabled: true } }
      })
    }).pipe(Effect.provide(layerWith(confirmed))))

  it.scoped("[S2][S5] a plugin disabled in config admits nothing, even when it owns the app and is enabled in Codex", () =>
    Effect.gen(function* () {
      const admission = yield* AppAdmission
      const connection = yield* leaseSessionClient(yield* ClientPool, Test.settings)
      const gate = yield* admission.prepare(connection, { poolKey: "p", cwd: "/w" })
      expect(gate.admitted).toEqual([])
      expect(gate.decisions[0]).toMatchObject({ pluginId: "demo@local", admitted: false, reason: "the plugin is disabled in config" })
      expect(gate.threadConfig).toEqual({ apps: { _default: { enabled: false }, connector_calendar: { enabled: false } } })
    }).pipe(
      Effect.provide(
        layerWith(confirmed, {}, { apps: { plugins: { "demo@local": { allow: ["connector_calendar"] } }, disabledPlugins: ["demo@local"] } })
      )
    ))

  it.scoped("[S2][S3][S4] a new thread starts deny-by-default and one app/installed confirms it before turn/start and the binding", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const outcome = yield* harness.runTurn({ sessionId: "a1", prompt: "hi" })
      expect(outcome.status).toBe("completed")
      const start = yield* mock.awaitRequest("thread/start")
      expect((start.params as { config: unknown }).config).toMatchObject({
        apps: { _default: { enabled: false }, connector_calendar: { enabled: true }, connector_drive: { enabled: false } }
      })
      const checks = yield* mock.requests("app/installed")
      expect(checks.map((r) => r.params)).toEqual([{ threadId: outcome.threadId }])
      const order = yield* methods
      expect(order.indexOf("app/installed")).toBeGreaterThan(order.indexOf("thread/start"))
      expect(order.indexOf("app/installed")).toBeLessThan(order.indexOf("turn/start"))
      expect((yield* recordsOf("a1")).map((r) => r._tag)).toEqual(["user", "binding", "assistant", "turn"])
      // a second turn reuses the loaded thread: no second check
      yield* harness.runTurn({ sessionId: "a1", prompt: "again" })
      expect(yield* mock.requests("app/installed")).toHaveLength(1)
      expect(yield* mock.requests("plugin/installed")).toHaveLength(1)
    }).pipe(Effect.provide(layerWith(confirmed))))

  it.scoped("[S3] without codex_apps reporting ready, the check waits its ready timeout, then asks once", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const fiber = yield* Effect.fork(harness.runTurn({ sessionId: "a2", prompt: "hi" }))
      yield* mock.awaitRequest("thread/start")
      yield* TestClock.adjust("9 seconds")
      expect(yield* mock.requests("app/installed")).toHaveLength(0)
      yield* TestClock.adjust("1 second")
      const outcome = yield* Fiber.join(fiber)
      expect(outcome.status).toBe("completed")
      expect(yield* mock.requests("app/installed")).toHaveLength(1)
    }).pipe(Effect.provide(layerWith(confirmed, { "thread/start": (_p, ctx) => ctx.fallback }))))

  for (
    const [name, installed] of [
      ["not callable", [{ id: "connector_calendar", enabled: true, callable: false }]],
      ["not reported", []],
      ["[S5] an app of a disabled plugin enabled by account-wide access", [
        { id: "connector_calendar", enabled: true, callable: true },
        { id: "connector_drive", enabled: true, callable: true }
      ]]
    ] as const
  ) {
    it.scoped(`[S3][S4] an admitted app ${name}: the provisional thread is deleted, no turn starts, no binding is committed`, () =>
      Effect.gen(function* () {
        const harness = yield* CodexHarness
        const mock = yield* MockAppServer
        const exit = yield* Effect.exit(harness.runTurn({ sessionId: "f1", prompt: "hi" }))
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Exit.isFailure(exit) ? exit.cause.toJSON() : undefined
        expect(JSON.stringify(error)).toContain("AppsNotConfirmed")
        const start = yield* mock.awaitRequest("thread/start")
        const deleted = yield* mock.awaitRequest("thread/delete")
        const threadId = (deleted.params as { threadId: string }).threadId
        expect(threadId).toBeDefined()
        expect(yield* mock.requests("turn/start")).toHaveLength(0)
        expect(yield* mock.requests("thread/inject_items")).toHaveLength(0)
        expect(start).toBeDefined()
        const records = yield* recordsOf("f1")
        expect(records.map((r) => r._tag)).not.toContain("binding")
        expect(records.at(-1)).toMatchObject({ _tag: "settled", status: "failed" })
        expect(JSON.stringify(records.at(-1))).toContain(`apps admission failed for thread ${threadId}`)
        expect(JSON.stringify(records.at(-1))).toContain("the provisional thread was deleted")
      }).pipe(Effect.provide(layerWith(installed))))
  }

  // S3 on resume: the session's thread opened again on a fresh app-server (the first one retired) is checked the same
  // way; failing, it is the session's committed thread, so it is kept (unsubscribed, never deleted)
  const resumeReady: Handler = (_params, ctx) =>
    Effect.tap(ctx.fallback, (r) =>
      ctx.afterReply(
        ctx.notify("mcpServer/startupStatus/updated", { threadId: (r as { thread: { id: string } }).thread.id, name: "codex_apps", status: "ready" })
      ))
  /** app/installed answers these, one per call in turn */
  const answers = (...each: ReadonlyArray<ReadonlyArray<Installed>>): Handler => {
    let call = 0
    return () => Effect.sync(() => ({ apps: each[Math.min(call++, each.length - 1)] }))
  }
  const onFreshAppServer = Effect.gen(function* () {
    const pool = yield* ClientPool
    yield* pool.retire(ordinaryRuntime(Test.settings).poolKey, "a restart, as far as the session can tell")
  })

  it.scoped("[S3] a resumed bound thread gets one app/installed before its turn; failing, no turn starts, it is kept and unloaded, and checked again next time", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const first = yield* harness.runTurn({ sessionId: "s1", prompt: "hi" })
      yield* onFreshAppServer
      const resumed = yield* harness.runTurn({ sessionId: "s1", prompt: "again" })
      expect(resumed.threadId).toBe(first.threadId)
      expect((yield* mock.requests("app/installed")).map((r) => r.params)).toEqual([{ threadId: first.threadId }, { threadId: first.threadId }])
      let order = yield* methods
      expect(order.lastIndexOf("app/installed")).toBeGreaterThan(order.indexOf("thread/resume"))
      expect(order.lastIndexOf("app/installed")).toBeLessThan(order.lastIndexOf("turn/start"))

      yield* onFreshAppServer
      const exit = yield* Effect.exit(harness.runTurn({ sessionId: "s1", prompt: "not now" }))
      expect(Exit.isFailure(exit)).toBe(true)
      const text = JSON.stringify(Exit.isFailure(exit) ? exit.cause.toJSON() : "")
      expect(text).toContain('"cleanup":"unloaded"')
      expect(yield* mock.requests("turn/start")).toHaveLength(2)
      expect(yield* mock.requests("thread/delete")).toHaveLength(0)
      expect((yield* mock.requests("thread/unsubscribe")).map((r) => r.params)).toEqual([{ threadId: first.threadId }])
      const records = yield* recordsOf("s1")
      expect(records.filter((r) => r._tag === "binding").map((r) => r._tag === "binding" && r.threadId)).toEqual([first.threadId])
      expect(JSON.stringify(records.at(-1))).toContain("the session's thread is kept, unloaded until a turn whose check passes")

      // the same connection: forgotten as loaded, so the next turn resumes it and asks again
      const again = yield* harness.runTurn({ sessionId: "s1", prompt: "now?" })
      expect(again).toMatchObject({ status: "completed", threadId: first.threadId })
      expect(yield* mock.requests("app/installed")).toHaveLength(4)
      order = yield* methods
      expect(order.filter((m) => m === "thread/resume")).toHaveLength(3)
    }).pipe(Effect.provide(layerWith(confirmed, {
      "app/installed": answers(confirmed, confirmed, [], confirmed),
      "thread/resume": resumeReady,
      "thread/unsubscribe": () => Effect.succeed({ status: "unsubscribed" })
    }))))

  it.scoped("[S3] a resumed thread that fails the check and cannot be unloaded retires the connection", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* harness.runTurn({ sessionId: "s2", prompt: "hi" })
      yield* onFreshAppServer
      const exit = yield* Effect.exit(harness.runTurn({ sessionId: "s2", prompt: "again" }))
      expect(JSON.stringify(Exit.isFailure(exit) ? exit.cause.toJSON() : "")).toContain('"cleanup":"retired"')
      expect(yield* mock.requests("thread/delete")).toHaveLength(0)
      expect(yield* mock.requests("turn/start")).toHaveLength(1)
      const spawnsBefore = yield* mock.spawnCount
      yield* leaseSessionClient(yield* ClientPool, Test.settings)
      expect((yield* mock.spawnCount) - spawnsBefore).toBe(1)
    }).pipe(Effect.provide(layerWith(confirmed, {
      "app/installed": answers(confirmed, []),
      "thread/resume": resumeReady,
      "thread/unsubscribe": () => Effect.fail({ code: -32603, message: "busy" })
    }))))

  // S4: a delete counts only once two passive reads confirm the thread gone; anything else retires the connection, and
  // the next lease gets a fresh process
  const retiredBy = (sessionId: string) =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const exit = yield* Effect.exit(harness.runTurn({ sessionId, prompt: "hi" }))
      expect(Exit.isFailure(exit)).toBe(true)
      const text = JSON.stringify(Exit.isFailure(exit) ? exit.cause.toJSON() : "")
      expect(text).toContain("AppsNotConfirmed")
      const deleted = yield* mock.awaitRequest("thread/delete")
      expect(yield* mock.requests("turn/start")).toHaveLength(0)
      expect((yield* recordsOf(sessionId)).map((r) => r._tag)).not.toContain("binding")
      const spawnsBefore = yield* mock.spawnCount
      yield* leaseSessionClient(yield* ClientPool, Test.settings)
      return { text, threadId: (deleted.params as { threadId: string }).threadId, respawned: (yield* mock.spawnCount) - spawnsBefore }
    })

  it.scoped("[S4] delete ok and confirmed gone by thread/read and thread/list: deleted, the connection is kept", () =>
    Effect.gen(function* () {
      const { respawned, text, threadId } = yield* retiredBy("c1")
      expect(text).toContain('"cleanup":"deleted"')
      const mock = yield* MockAppServer
      expect((yield* mock.requests("thread/read")).map((r) => r.params)).toEqual([{ threadId }])
      expect((yield* mock.requests("thread/list")).map((r) => r.params)).toEqual([
        { includedThreadIds: [threadId], modelProviders: [], sourceKinds: expect.arrayContaining(["appServer", "vscode", "cli"]) }
      ])
      const order = yield* methods
      expect(order.indexOf("thread/read")).toBeGreaterThan(order.indexOf("thread/delete"))
      expect(respawned).toBe(0)
    }).pipe(Effect.provide(layerWith([]))))

  it.scoped("[S4] delete ok but the thread is still listed: the connection is retired with a typed error", () =>
    Effect.gen(function* () {
      const { respawned, text } = yield* retiredBy("c2")
      expect(text).toContain('"cleanup":"retired"')
      expect(respawned).toBe(1)
    }).pipe(Effect.provide(layerWith([], {
      "thread/list": (params: { includedThreadIds: ReadonlyArray<string> }) =>
        Effect.succeed({ data: params.includedThreadIds.map(threadRow), nextCursor: null })
    }))))

  it.scoped("[S4] delete ok but thread/read still answers the thread: the connection is retired", () =>
    Effect.gen(function* () {
      const { respawned, text } = yield* retiredBy("c3")
      expect(text).toContain('"cleanup":"retired"')
      expect(respawned).toBe(1)
    }).pipe(Effect.provide(layerWith([], { "thread/read": (params: { threadId: string }) => Effect.succeed({ thread: threadRow(params.threadId) }) }))))

  it.scoped("[S4] a failed delete of the provisional thread retires the connection with a typed error", () =>
    Effect.gen(function* () {
      const { respawned, text } = yield* retiredBy("r1")
      expect(text).toContain('"cleanup":"retired"')
      expect(respawned).toBe(1)
      expect(yield* (yield* MockAppServer).requests("thread/read")).toHaveLength(0)
    }).pipe(Effect.provide(layerWith([], { "thread/delete": () => Effect.fail({ code: -32603, message: "disk full" }) }))))

  it.scoped("[S4] delete ok but the thread/list check fails: the connection is retired", () =>
    Effect.gen(function* () {
      const { respawned, text } = yield* retiredBy("c4")
      expect(text).toContain('"cleanup":"retired"')
      expect(respawned).toBe(1)
    }).pipe(Effect.provide(layerWith([], { "thread/list": () => Effect.fail({ code: -32603, message: "index unavailable" }) }))))

  it.scoped("[S4] a delete whose confirmation never answers retires the connection once the request times out (TestClock)", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const fiber = yield* Effect.fork(retiredBy("c5"))
      yield* mock.awaitRequest("thread/read")
      yield* TestClock.adjust("10 minutes")
      const { respawned, text } = yield* Fiber.join(fiber)
      expect(text).toContain('"cleanup":"retired"')
      expect(text).not.toContain('"cleanup":"deleted"')
      expect(respawned).toBe(1)
    }).pipe(Effect.provide(layerWith([], { "thread/read": () => Effect.never }))))

  it.scoped("[S4] app/installed failing counts as not confirmed: the thread is deleted", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const exit = yield* Effect.exit(harness.runTurn({ sessionId: "e1", prompt: "hi" }))
      expect(JSON.stringify(Exit.isFailure(exit) ? exit.cause.toJSON() : "")).toContain("app/installed failed")
      yield* mock.awaitRequest("thread/delete")
      expect(yield* mock.requests("turn/start")).toHaveLength(0)
    }).pipe(Effect.provide(layerWith([], { "app/installed": () => Effect.fail({ code: -32600, message: "thread not found" }) }))))

  it.scoped("[S4] an inventory that cannot be read fails before any thread exists", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const exit = yield* Effect.exit(harness.runTurn({ sessionId: "i1", prompt: "hi" }))
      expect(JSON.stringify(Exit.isFailure(exit) ? exit.cause.toJSON() : "")).toContain("AppsInventoryFailed")
      expect(yield* mock.requests("thread/start")).toHaveLength(0)
    }).pipe(Effect.provide(layerWith([], { "plugin/installed": () => Effect.fail({ code: -32603, message: "boom" }) }))))

  it.scoped("[S2] a session without apps config pays nothing: no plugin or app request, no apps thread config", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* harness.runTurn({ sessionId: "n1", prompt: "hi" })
      const order = yield* methods
      expect(order.filter((m) => m.startsWith("plugin/") || m.startsWith("app/"))).toEqual([])
      const start = yield* mock.awaitRequest("thread/start")
      expect(JSON.stringify(start.params)).not.toContain("_default")
    }).pipe(Effect.provide(Test.layer({ script: { handlers: handlers(confirmed) } }))))
})
