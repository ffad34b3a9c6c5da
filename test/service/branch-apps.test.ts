// A supervised branch under connected-apps admission (S4, with S2-S3 and S15) on the in-memory app-server, under
// TestClock: on the branch's first turn the canonical thread starts deny-by-default and one app/installed confirms it
// before its history is injected or the binding committed. Every failure branch: the canonical thread is deleted and
// confirmed gone (or the private connection retired), the probe is archived after it, and a probe that cannot be
// archived stays in the session as recovery state. Both are scoped resources: an interrupted turn cleans up the same way.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import type { SessionRecord } from "../../schemas/session.js"
import type { AppsSettings, HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { Branching } from "../../src/supervision/Branching.js"
import * as Supervision from "../../src/supervision/layer.js"
import { type Handler, MockAppServer } from "../../src/testing/MockAppServer.js"

const NATIVE = "/mock/native-home"
const SOURCE = "source-thread"
const MK = "/mock/mk/.agents/plugins/marketplace.json"

const row = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  preview: `preview of ${id}`,
  ephemeral: false,
  modelProvider: "native-provider",
  model: "native-model",
  cwd: "/work",
  status: { type: "notLoaded" },
  createdAt: 1,
  updatedAt: 2,
  source: "cli",
  ...extra
})
const turn = (id: string, user: string, assistant: string) => ({
  id,
  status: "completed",
  items: [
    { type: "userMessage", id: `${id}-u`, content: [{ type: "text", text: user }] },
    { type: "agentMessage", id: `${id}-a`, text: assistant }
  ]
})
const summary = { id: "demo@local", name: "demo", installed: true, enabled: true }
type Installed = { id: string; enabled: boolean; callable: boolean }
const confirmed: ReadonlyArray<Installed> = [{ id: "connector_calendar", enabled: true, callable: true }]

/**
 * A native home with one source thread, the apps inventory, and thread/delete, thread/read and thread/list as 0.171
 * answers them: a deleted thread reads as "thread not loaded" and is not listed.
 */
const handlers = (installed: ReadonlyArray<Installed>, overrides: Record<string, Handler> = {}): Record<string, Handler> => {
  const deleted = new Set<string>()
  return {
    "thread/list": (params) =>
      Effect.succeed({
        data: params.archived === true || params.ancestorThreadId != null
          ? []
          : Array.isArray(params.includedThreadIds)
          ? (params.includedThreadIds as ReadonlyArray<string>).filter((id) => !deleted.has(id)).map((id) => row(id))
          : [row(SOURCE)],
        nextCursor: null
      }),
    "thread/read": (params) =>
      deleted.has(params.threadId)
        ? Effect.fail({ code: -32600, message: `thread not loaded: ${params.threadId}` })
        : Effect.succeed({ thread: row(params.threadId) }),
    "thread/turns/list": () => Effect.succeed({ data: [turn("t2", "second question", "second answer"), turn("t1", "first", "one")], nextCursor: null }),
    "thread/fork": (params) =>
      Effect.succeed({
        thread: row("probe-thread", { forkedFromId: params.threadId, status: { type: "idle" } }),
        model: "fork-model",
        modelProvider: "fork-provider",
        cwd: "/work",
        approvalPolicy: "never",
        sandbox: { type: "readOnly" }
      }),
    // like the real server: codex_apps reports ready for the new thread after thread/start is answered
    "thread/start": (_params, ctx) =>
      Effect.tap(ctx.fallback, (r) =>
        ctx.afterReply(
          ctx.notify("mcpServer/startupStatus/updated", { threadId: (r as { thread: { id: string } }).thread.id, name: "codex_apps", status: "ready" })
        )),
    "thread/delete": (params) => Effect.sync(() => (deleted.add(params.threadId), {})),
    "thread/archive": () => Effect.succeed({}),
    "plugin/installed": () => Effect.succeed({ marketplaces: [{ name: "local", path: MK, plugins: [summary] }], marketplaceLoadErrors: [] }),
    "plugin/read": () =>
      Effect.succeed({
        plugin: {
          marketplaceName: "local",
          marketplacePath: MK,
          summary,
          apps: [{ id: "connector_calendar", name: "Calendar" }],
          skills: [],
          hooks: [],
          mcpServers: [],
          appTemplates: []
        }
      }),
    "app/installed": () => Effect.succeed({ apps: installed }),
    ...overrides
  }
}

const apps: AppsSettings = { plugins: { "demo@local": { allow: ["connector_calendar"] } }, disabledPlugins: [] }
const settings: Partial<HarnessSettings> = { supervision: { enabled: true, codexHome: NATIVE }, apps }
const layerWith = (installed: ReadonlyArray<Installed>, overrides: Record<string, Handler> = {}) =>
  Supervision.layer.pipe(Layer.provideMerge(Test.layer({ settings, script: { handlers: handlers(installed, overrides) } })))

const recordsOf = (sessionId: string) => Effect.flatMap(SessionStore, (s) => s.read(sessionId)).pipe(Effect.map((c) => c.records))
const probeStatuses = (records: ReadonlyArray<SessionRecord>) => records.flatMap((r) => (r._tag === "probe" ? [r.status] : []))
/** the methods the branch's private connection received, in order */
const privateMethods = Effect.gen(function* () {
  const mock = yield* MockAppServer
  const fork = (yield* mock.requests("thread/fork"))[0]!
  return (yield* mock.requests()).filter((r) => r.peer === fork.peer).map((r) => r.method)
})
const privateRetired = Effect.gen(function* () {
  const mock = yield* MockAppServer
  const fork = (yield* mock.requests("thread/fork"))[0]!
  return yield* (yield* mock.peers).find((p) => p.index === fork.peer)!.inputEnded
})
/** the branch decided, then its first turn, which makes the canonical thread */
const firstTurn = (sessionId: string) =>
  Effect.gen(function* () {
    yield* (yield* Branching).branch(SOURCE, { sessionId })
    return yield* (yield* CodexHarness).runTurn({ sessionId, prompt: "go on" })
  })
const failedBranch = (sessionId: string) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(firstTurn(sessionId))
    expect(Exit.isFailure(exit)).toBe(true)
    const text = JSON.stringify(Exit.isFailure(exit) ? exit.cause.toJSON() : "")
    const mock = yield* MockAppServer
    yield* mock.awaitRequest("thread/start")
    const records = yield* recordsOf(sessionId)
    expect(records.map((r) => r._tag)).not.toContain("binding")
    expect(yield* mock.requests("turn/start")).toHaveLength(0)
    return { text, records, methods: yield* privateMethods, retired: yield* privateRetired }
  })
/** the records the first turn added after the branch's own (the branch record, its history and its notice) */
const turnRecords = (records: ReadonlyArray<SessionRecord>) => records.slice(records.findIndex((r) => r._tag === "notice") + 1)

describe("a supervised branch under apps admission", () => {
  it.scoped("[S4][S2][S3] the canonical thread starts deny-by-default; app/installed confirms it before history and binding", () =>
    Effect.gen(function* () {
      const made = yield* firstTurn("ok")
      expect(made.status).toBe("completed")
      const mock = yield* MockAppServer
      const start = (yield* mock.requests("thread/start"))[0]!.params as { config?: unknown; model?: string }
      expect(start).toMatchObject({ model: "fork-model", config: { apps: { _default: { enabled: false }, connector_calendar: { enabled: true } } } })
      expect((yield* mock.requests("app/installed")).map((r) => r.params)).toEqual([{ threadId: made.threadId }])
      const methods = yield* privateMethods
      expect(methods.indexOf("app/installed")).toBeGreaterThan(methods.indexOf("thread/start"))
      expect(methods.indexOf("app/installed")).toBeLessThan(methods.indexOf("thread/inject_items"))
      expect(methods.indexOf("thread/archive")).toBeLessThan(methods.indexOf("turn/start"))
      expect(methods).not.toContain("thread/delete")
      const records = yield* recordsOf("ok")
      expect(records.find((r) => r._tag === "binding")).toMatchObject({ threadId: made.threadId })
      expect(probeStatuses(records)).toEqual(["open", "closed"])
      expect(yield* privateRetired).toBe(false)
    }).pipe(Effect.provide(layerWith(confirmed))))

  it.scoped("[S4] an app not confirmed: the canonical thread is deleted and confirmed gone, then the probe is closed; no history, no binding", () =>
    Effect.gen(function* () {
      const { methods, records, retired, text } = yield* failedBranch("f1")
      expect(text).toContain("AppsNotConfirmed")
      expect(text).toContain('"cleanup":"deleted"')
      expect(methods).not.toContain("thread/inject_items")
      // deleted once (the admission check's cleanup and the thread's finalizer are one), confirmed, then the probe
      const tail = methods.slice(methods.indexOf("app/installed") + 1)
      expect(tail).toEqual(["thread/delete", "thread/read", "thread/list", "thread/archive"])
      expect(probeStatuses(records)).toEqual(["open", "closed"])
      expect(turnRecords(records).map((r) => r._tag)).toEqual(["user", "probe", "probe", "settled"])
      expect(retired).toBe(false)
    }).pipe(Effect.provide(layerWith([{ id: "connector_calendar", enabled: true, callable: false }]))))

  it.scoped("[S4] the canonical thread's deletion not confirmed (still listed): the connection is retired and the probe kept as recovery state", () =>
    Effect.gen(function* () {
      const { methods, records, retired, text } = yield* failedBranch("f2")
      expect(text).toContain('"cleanup":"retired"')
      expect(methods.filter((m) => m === "thread/delete")).toHaveLength(1)
      expect(retired).toBe(true)
      // the probe could not be closed on a retired connection: its recovery state stays for a later run
      expect(probeStatuses(records)).toEqual(["open", "cleanupFailed"])
      expect(records.filter((r) => r._tag === "probe").at(-1)).toMatchObject({ threadId: "probe-thread", sourceThreadId: SOURCE, status: "cleanupFailed" })
    }).pipe(
      Effect.provide(
        layerWith([], {
          "thread/list": (params) =>
            Effect.succeed({ data: params.archived === true ? [] : (params.includedThreadIds ?? [SOURCE]).map((id: string) => row(id)), nextCursor: null })
        })
      )
    ))

  it.scoped("[S4] the canonical thread deleted, but the probe cannot be archived: recovery state is kept, the connection stays", () =>
    Effect.gen(function* () {
      const { methods, records, retired, text } = yield* failedBranch("f3")
      expect(text).toContain('"cleanup":"deleted"')
      expect(methods.indexOf("thread/archive")).toBeGreaterThan(methods.indexOf("thread/list"))
      // a persistent fork stays in the home whatever happens to the connection: retiring it would clean nothing
      expect(retired).toBe(false)
      expect(probeStatuses(records)).toEqual(["open", "cleanupFailed"])
      expect((records.filter((r) => r._tag === "probe").at(-1) as { reason?: string }).reason).toContain("archive refused")
    }).pipe(
      Effect.provide(layerWith([], { "thread/archive": () => Effect.fail({ code: -32603, message: "archive refused" }) }))
    ))

  it.scoped("[S4] the canonical thread's delete fails: the connection is retired, the probe is kept as recovery state", () =>
    Effect.gen(function* () {
      const { methods, records, retired, text } = yield* failedBranch("f4")
      expect(text).toContain('"cleanup":"retired"')
      expect(methods).not.toContain("thread/read")
      expect(retired).toBe(true)
      expect(probeStatuses(records)).toEqual(["open", "cleanupFailed"])
    }).pipe(Effect.provide(layerWith([], { "thread/delete": () => Effect.fail({ code: -32603, message: "disk full" }) }))))

  it.scoped("[S4] a failed history injection after a confirmed check deletes the canonical thread, confirmed gone", () =>
    Effect.gen(function* () {
      const { methods, records, retired, text } = yield* failedBranch("f5")
      expect(text).toContain("inject refused")
      const tail = methods.slice(methods.indexOf("thread/inject_items") + 1)
      expect(tail).toEqual(["thread/delete", "thread/read", "thread/list", "thread/archive"])
      expect(retired).toBe(false)
      expect(probeStatuses(records)).toEqual(["open", "closed"])
    }).pipe(Effect.provide(layerWith(confirmed, { "thread/inject_items": () => Effect.fail({ code: -32603, message: "inject refused" }) }))))

  it.scoped("[S4] a first turn interrupted while the check waits for codex_apps: both finalizers run, thread deleted then probe archived", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const fiber = yield* Effect.fork(firstTurn("i1"))
      yield* mock.awaitRequest("thread/start")
      yield* TestClock.adjust("5 seconds")
      expect(yield* mock.requests("app/installed")).toHaveLength(0)
      yield* Fiber.interrupt(fiber)
      const methods = yield* privateMethods
      expect(methods.slice(methods.indexOf("thread/start") + 1)).toEqual(["thread/delete", "thread/read", "thread/list", "thread/archive"])
      const records = yield* recordsOf("i1")
      expect(records.map((r) => r._tag)).not.toContain("binding")
      expect(probeStatuses(records)).toEqual(["open", "closed"])
    }).pipe(Effect.provide(layerWith(confirmed, { "thread/start": (_p, ctx) => ctx.fallback }))))

  it.scoped("[S4] an inventory that cannot be read fails the first turn before a probe or a thread exists", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(firstTurn("n1"))
      expect(JSON.stringify(Exit.isFailure(exit) ? exit.cause.toJSON() : "")).toContain("AppsInventoryFailed")
      const mock = yield* MockAppServer
      expect(yield* mock.requests("thread/fork")).toHaveLength(0)
      expect(yield* mock.requests("thread/start")).toHaveLength(0)
      expect(turnRecords(yield* recordsOf("n1")).map((r) => r._tag)).toEqual(["user", "settled"])
    }).pipe(Effect.provide(layerWith(confirmed, { "plugin/installed": () => Effect.fail({ code: -32603, message: "boom" }) }))))
})
