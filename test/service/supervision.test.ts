// Supervision against the in-memory app-server (S14-S17): discovery pooling with its idle time-to-live (TestClock),
// passivity, descendant enumeration failing closed (errors, cycles, repeated cursors, page limits), probe cleanup failure
// keeping recovery state and retiring the connection, drift and disabled supervision failing closed, remote rows, and
// the history bounds.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import type { Turn } from "../../schemas/protocol.js"
import type { SessionRecord } from "../../schemas/session.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../../src/config/Settings.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { ArchiveGuard } from "../../src/supervision/ArchiveGuard.js"
import { boundHistory, Branching, historyBounds } from "../../src/supervision/Branching.js"
import { Catalog, descendantCycle, localRow } from "../../src/supervision/Catalog.js"
import { EnumerationFailed } from "../../src/supervision/errors.js"
import * as Supervision from "../../src/supervision/layer.js"
import { RemoteCatalogs } from "../../src/supervision/RemoteCatalogs.js"
import { checkDeletable } from "../../src/supervision/SessionGuard.js"
import { supervisedPoolKey } from "../../src/supervision/SupervisionSettings.js"
import { branchHistory } from "../../src/threads/BranchStart.js"
import { type Handler, MockAppServer, type MockScript } from "../../src/testing/MockAppServer.js"

const NATIVE = "/mock/native-home"
const SOURCE = "source-thread"

const nativeThread = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  preview: `preview of ${id}`,
  ephemeral: false,
  modelProvider: "native-provider",
  model: "native-model",
  cwd: "/work",
  status: { type: "notLoaded" },
  name: null,
  createdAt: 1,
  updatedAt: 2,
  forkedFromId: null,
  parentThreadId: null,
  source: "cli",
  turns: [],
  ...extra
})

const turn = (id: string, status: Turn["status"], user: string, assistant: string, extra: ReadonlyArray<unknown> = []) => ({
  id,
  status,
  items: [
    { type: "userMessage", id: `${id}-u`, content: [{ type: "text", text: user }] },
    ...extra,
    { type: "agentMessage", id: `${id}-a`, text: assistant }
  ]
})

/** A native home with threads: thread/list and thread/read answer from `threads`; the rest is per test. */
const nativeHandlers = (
  threads: ReadonlyArray<ReturnType<typeof nativeThread>>,
  overrides: Record<string, Handler> = {}
): Record<string, Handler> => ({
  "thread/list": (params) =>
    Effect.succeed({
      data: params.archived === true || params.ancestorThreadId != null ? [] : threads,
      nextCursor: null
    }),
  "thread/read": (params) => {
    const found = threads.find((t) => t.id === params.threadId)
    return found !== undefined
      ? Effect.succeed({ thread: found })
      : Effect.fail({ code: -32600, message: `thread not loaded: ${params.threadId}` })
  },
  "thread/turns/list": () =>
    Effect.succeed({
      data: [
        turn("t3", "inProgress", "still typing", "partial"),
        turn("t2", "completed", "second question", "second answer", [
          { type: "reasoning", id: "r", summary: ["SECRET"] },
          { type: "commandExecution", id: "c", command: "ls", status: "completed" }
        ]),
        turn("t1", "completed", "first question", "first answer")
      ],
      nextCursor: null
    }),
  "thread/fork": (params) =>
    Effect.succeed({
      thread: nativeThread("probe-thread", { forkedFromId: params.threadId, status: { type: "idle" } }),
      model: "fork-model",
      modelProvider: "fork-provider",
      cwd: "/work",
      approvalPolicy: "never",
      sandbox: { type: "readOnly" }
    }),
  "thread/inject_items": () => Effect.succeed({}),
  "thread/unsubscribe": () => Effect.succeed({ status: "unsubscribed" }),
  "thread/archive": () => Effect.succeed({}),
  ...overrides
})

const supervised: Partial<HarnessSettings> = { supervision: { enabled: true, codexHome: NATIVE } }

const testLayer = (script: MockScript, settings: Partial<HarnessSettings> = supervised) =>
  Supervision.layer.pipe(Layer.provideMerge(Test.layer({ settings, script })))

const recordsOf = (sessionId: string) => Effect.flatMap(SessionStore, (s) => s.read(sessionId)).pipe(Effect.map((c) => c.records))
const methodsOfNativePeers = Effect.gen(function* () {
  const mock = yield* MockAppServer
  const peers = (yield* mock.peers).filter((p) => p.options.codexHome === NATIVE)
  const requests = yield* Effect.forEach(peers, (p) => p.requests())
  return requests.flat().map((r) => r.method)
})

describe("supervision: discovery and catalog", () => {
  it.scoped("[S14] polls reuse one pooled discovery client under the supervision home; it goes after its idle time-to-live", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog
      const mock = yield* MockAppServer
      for (let i = 0; i < 100; i++) expect((yield* catalog.list).rows.map((r) => r.threadId)).toEqual([SOURCE])
      const peers = yield* mock.peers
      expect(peers).toHaveLength(1)
      expect(peers[0]!.options.codexHome).toBe(NATIVE)
      yield* TestClock.adjust("119 seconds")
      expect(yield* peers[0]!.released).toBe(false)
      yield* TestClock.adjust("2 seconds")
      yield* peers[0]!.awaitReleased
      yield* catalog.list
      expect(yield* mock.spawnCount).toBe(2)
    }).pipe(Effect.provide(testLayer({ handlers: nativeHandlers([nativeThread(SOURCE)]) }))))

  it.scoped("[S14] listing and showing are passive: only thread/list and thread/read reach the app-server", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog
      yield* catalog.list
      const row = yield* catalog.show(SOURCE)
      expect(row).toMatchObject({ threadId: SOURCE, node: "local", remote: false, status: "notLoaded", model: "native-model" })
      const methods = yield* methodsOfNativePeers
      expect(new Set(methods)).toEqual(new Set(["initialize", "thread/list", "thread/read"]))
      const lists = (yield* (yield* MockAppServer).requests("thread/list")).map((r) => r.params as Record<string, unknown>)
      // only non-archived threads are projected into the catalog
      expect(lists[0]).toMatchObject({ archived: false })
    }).pipe(Effect.provide(testLayer({ handlers: nativeHandlers([nativeThread(SOURCE)]) }))))

  it.scoped("[S14] the catalog follows every page; a repeated cursor fails closed", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog
      const mock = yield* MockAppServer
      let page = 0
      yield* mock.setHandler("thread/list", () =>
        Effect.sync(() => {
          page++
          return { data: [nativeThread(`t${page}`)], nextCursor: page < 3 ? `c${page}` : null }
        }))
      expect((yield* catalog.list).rows.map((r) => r.threadId)).toEqual(["t1", "t2", "t3"])
      yield* mock.setHandler("thread/list", () => Effect.succeed({ data: [nativeThread("loop")], nextCursor: "same" }))
      const error = yield* catalog.list.pipe(Effect.flip)
      expect(error).toBeInstanceOf(EnumerationFailed)
      expect(error.message).toContain('repeated cursor "same"')
    }).pipe(Effect.provide(testLayer({ handlers: nativeHandlers([]) }))))

  it.scoped("[S17] rows of paired nodes are metadata-only: listed, but continue and archive are refused with a reason", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog
      const rows = (yield* catalog.list).rows
      const remote = rows.find((r) => r.threadId === "remote-1")!
      expect(remote).toMatchObject({ node: "laptop", remote: true, status: "idle", title: "on the laptop" })
      const branch = yield* (yield* Branching).branch(remote).pipe(Effect.flip)
      expect(branch.message).toBe("cannot branch thread remote-1: it belongs to paired node laptop, whose catalog is metadata-only")
      // by id too: the local home does not know it, the paired node's catalog does
      const archive = yield* (yield* ArchiveGuard).archive("remote-1", { confirmNoOtherRunner: true }).pipe(Effect.flip)
      expect(archive.message).toBe("cannot archive thread remote-1: it belongs to paired node laptop, whose catalog is metadata-only")
      const methods = yield* methodsOfNativePeers
      expect(methods).not.toContain("thread/fork")
      expect(methods).not.toContain("thread/archive")
    }).pipe(
      Effect.provide(
        testLayer({ handlers: nativeHandlers([nativeThread(SOURCE)]) }).pipe(
          Layer.provide(
            Layer.succeed(RemoteCatalogs, [
              { node: "laptop", list: Effect.succeed([{ threadId: "remote-1", title: "on the laptop", status: "idle" as const }]) }
            ])
          )
        )
      )
    ))
})

describe("supervision: archive guard", () => {
  const descendantsBy = (pages: (cursor: string | undefined) => { data: ReadonlyArray<unknown>; nextCursor: string | null }) =>
    nativeHandlers([nativeThread(SOURCE)], {
      "thread/list": (params) =>
        Effect.sync(() =>
          params.ancestorThreadId != null
            ? pages(params.cursor ?? undefined)
            : { data: params.archived === true ? [] : [nativeThread(SOURCE)], nextCursor: null }
        )
    })

  const archiveError = Effect.flatMap(ArchiveGuard, (g) => g.archive(SOURCE, { confirmNoOtherRunner: true })).pipe(Effect.flip)

  it.scoped("[S16] notLoaded is unknown: archive needs the no-other-runner confirmation, then archives after a fresh read", () =>
    Effect.gen(function* () {
      const guard = yield* ArchiveGuard
      const unconfirmed = yield* guard.archive(SOURCE).pipe(Effect.flip)
      expect(unconfirmed.message).toBe(
        `cannot archive thread ${SOURCE}: it is notLoaded (its activity is unknown); confirm that no other runner uses it (--confirm-no-other-runner)`
      )
      expect(yield* methodsOfNativePeers).not.toContain("thread/archive")
      const done = yield* guard.archive(SOURCE, { confirmNoOtherRunner: true })
      expect(done).toMatchObject({ threadId: SOURCE, status: "notLoaded", descendantsChecked: 0 })
      const methods = yield* methodsOfNativePeers
      // the status was read again after the descendant query, right before the archive
      const archiveAt = methods.indexOf("thread/archive")
      // descendant query, fresh status read, archived check, archive
      expect(methods.slice(archiveAt - 3, archiveAt + 1)).toEqual(["thread/list", "thread/read", "thread/list", "thread/archive"])
    }).pipe(Effect.provide(testLayer({ handlers: nativeHandlers([nativeThread(SOURCE)]) }))))

  it.scoped("[S16] an active thread is neither archived nor branched, even with confirmation", () =>
    Effect.gen(function* () {
      const error = yield* archiveError
      expect(error.message).toBe(`cannot archive thread ${SOURCE}: it is active (waitingOnApproval)`)
      const branch = yield* Effect.flatMap(Branching, (b) => b.branch(SOURCE)).pipe(Effect.flip)
      expect(branch.message).toBe(`cannot branch thread ${SOURCE}: it is active; branch it once its turn has ended`)
      expect(yield* methodsOfNativePeers).not.toContain("thread/archive")
    }).pipe(
      Effect.provide(
        testLayer({ handlers: nativeHandlers([nativeThread(SOURCE, { status: { type: "active", activeFlags: ["waitingOnApproval"] } })]) })
      )
    ))

  it.scoped("[S16] a cycle among the descendants fails closed", () =>
    Effect.gen(function* () {
      const error = yield* archiveError
      expect(error._tag).toBe("ArchiveBlocked")
      expect(error.message).toContain("cycle: the parent chain of thread x loops through")
      expect(yield* methodsOfNativePeers).not.toContain("thread/archive")
    }).pipe(
      Effect.provide(
        testLayer({
          handlers: descendantsBy(() => ({
            data: [nativeThread("x", { parentThreadId: "y" }), nativeThread("y", { parentThreadId: "x" })],
            nextCursor: null
          }))
        })
      )
    ))

  it.scoped("[S16] the target listed as its own descendant is a cycle too", () =>
    Effect.gen(function* () {
      expect((yield* archiveError).message).toContain(`cycle: thread ${SOURCE} is listed as its own descendant`)
    }).pipe(Effect.provide(testLayer({ handlers: descendantsBy(() => ({ data: [nativeThread(SOURCE)], nextCursor: null })) }))))

  it.scoped("[S16] a repeated descendant cursor fails closed", () =>
    Effect.gen(function* () {
      const error = yield* archiveError
      expect(error.message).toContain('the server repeated cursor "again"')
      expect(yield* methodsOfNativePeers).not.toContain("thread/archive")
    }).pipe(
      Effect.provide(
        testLayer({
          handlers: descendantsBy((cursor) => ({
            data: [nativeThread(`child-${cursor ?? "first"}`, { parentThreadId: SOURCE })],
            nextCursor: "again"
          }))
        })
      )
    ))

  it.scoped("[S16] exhausting the descendant page limit fails closed", () =>
    Effect.gen(function* () {
      const error = yield* archiveError
      expect(error.message).toContain("more than 100 pages (safety limit)")
      const lists = (yield* (yield* MockAppServer).requests("thread/list")).filter(
        (r) => (r.params as { ancestorThreadId?: string }).ancestorThreadId === SOURCE
      )
      expect(lists).toHaveLength(100)
      expect(yield* methodsOfNativePeers).not.toContain("thread/archive")
    }).pipe(
      Effect.provide(
        testLayer({
          handlers: descendantsBy((cursor) => {
            const n = cursor === undefined ? 0 : Number(cursor.slice(1))
            return { data: [nativeThread(`child-${n}`, { parentThreadId: SOURCE })], nextCursor: `p${n + 1}` }
          })
        })
      )
    ))

  it.scoped("[S16] a descendant query error fails closed with its reason", () =>
    Effect.gen(function* () {
      const error = yield* archiveError
      expect(error.message).toContain("its descendants could not be checked")
      expect(error.message).toContain("index unavailable")
    }).pipe(
      Effect.provide(
        testLayer({
          handlers: nativeHandlers([nativeThread(SOURCE)], {
            "thread/list": (params) =>
              params.ancestorThreadId != null
                ? Effect.fail({ code: -32603, message: "index unavailable" })
                : Effect.succeed({ data: [], nextCursor: null })
          })
        })
      )
    ))

  it("[S16] descendantCycle accepts a proper tree", () => {
    const rows = [
      localRow(nativeThread("a", { parentThreadId: SOURCE }) as never),
      localRow(nativeThread("b", { parentThreadId: "a" }) as never)
    ]
    expect(descendantCycle(SOURCE, rows)).toBeUndefined()
    expect(descendantCycle(SOURCE, [...rows, rows[0]!])).toBe("thread a is listed twice")
  })
})

describe("supervision: continue as branch", () => {
  it.scoped("[S15][S13] a branch asks nothing of its private connection; the first turn forks with no model or provider, starts the canonical thread with the fork's pair, injects only the visible history and archives the fork", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const made = yield* (yield* Branching).branch(SOURCE, { sessionId: "b1" })
      expect(made).toMatchObject({ sessionId: "b1", sourceThreadId: SOURCE, lastTurnId: "t2" })
      // only the discovery client was asked anything, and only passive reads
      const passive = new Set(["initialize", "thread/list", "thread/read", "thread/turns/list"])
      expect((yield* methodsOfNativePeers).filter((m) => !passive.has(m))).toEqual([])
      expect((yield* mock.peers).filter((p) => p.options.codexHome === NATIVE)).toHaveLength(1)
      expect(yield* mock.requests("thread/fork")).toHaveLength(0)
      expect(yield* mock.requests("thread/start")).toHaveLength(0)

      const harness = yield* CodexHarness
      const first = yield* harness.runTurn({ sessionId: "b1", prompt: "go on" })
      // the probe carried no model or provider, and is a persistent fork (it is archived, not unsubscribed)
      const fork = (yield* mock.requests("thread/fork"))[0]!
      expect(fork.params).toEqual({ threadId: SOURCE, excludeTurns: true, lastTurnId: "t2" })
      const start = (yield* mock.requests("thread/start"))[0]!.params as Record<string, unknown>
      expect(start).toMatchObject({ model: "fork-model", modelProvider: "fork-provider", personality: "none" })
      expect(first.threadId).not.toBe("probe-thread")
      // only visible user/assistant text up to the last terminal turn; no reasoning, no tool call
      const inject = (yield* mock.requests("thread/inject_items"))[0]!.params as { threadId: string; items: Array<{ role: string; content: Array<{ text: string }> }> }
      expect(inject.threadId).toBe(first.threadId)
      expect(inject.items.map((i) => `${i.role}:${i.content[0]!.text}`)).toEqual([
        "user:first question",
        "assistant:first answer",
        "user:second question",
        "assistant:second answer"
      ])
      expect((yield* mock.requests("thread/archive")).map((r) => r.params)).toEqual([{ threadId: "probe-thread" }])
      expect(yield* mock.requests("thread/unsubscribe")).toHaveLength(0)
      expect(yield* mock.requests("thread/resume")).toHaveLength(0)
      // all of it on the private connection under the supervision home, before the turn started
      const privatePeer = (yield* mock.peers).find((p) => p.index === fork.peer)!
      expect(privatePeer.options.codexHome).toBe(NATIVE)
      const methods = (yield* mock.requests()).filter((r) => r.peer === fork.peer).map((r) => r.method)
      const order = ["thread/fork", "thread/start", "thread/inject_items", "thread/archive", "turn/start"].map((m) => methods.indexOf(m))
      expect(order).toEqual([...order].sort((a, b) => a - b))
      expect((yield* mock.requests("turn/start"))[0]!.params).not.toHaveProperty("model")
      const records = yield* recordsOf("b1")
      expect(records.filter((r) => r._tag === "probe").map((r) => (r as { status: string }).status)).toEqual(["open", "closed"])
      expect(records.find((r) => r._tag === "binding")).toMatchObject({ threadId: first.threadId, model: "fork-model", modelProvider: "fork-provider", locked: true })

      // a later turn reuses the thread on the same private connection: no fork, no start, no resume
      const later = yield* harness.runTurn({ sessionId: "b1", prompt: "and on" })
      expect(later.threadId).toBe(first.threadId)
      expect(yield* mock.requests("thread/fork")).toHaveLength(1)
      expect(yield* mock.requests("thread/start")).toHaveLength(1)
      expect(yield* mock.requests("thread/resume")).toHaveLength(0)
      expect((yield* mock.requests("turn/start")).map((r) => r.peer)).toEqual([fork.peer, fork.peer])
    }).pipe(Effect.provide(testLayer({ handlers: nativeHandlers([nativeThread(SOURCE)]) }))))

  it.scoped("[S15][S4] a probe that cannot be archived stays as recovery state; the connection stays and the first turn goes on", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      yield* (yield* Branching).branch(SOURCE, { sessionId: "b1" })
      const result = yield* (yield* CodexHarness).runTurn({ sessionId: "b1", prompt: "go on" })
      expect(result.status).toBe("completed")
      const probes = (yield* recordsOf("b1")).filter((r): r is Extract<SessionRecord, { _tag: "probe" }> => r._tag === "probe")
      expect(probes.map((p) => p.status)).toEqual(["open", "cleanupFailed"])
      expect(probes[1]).toMatchObject({ threadId: "probe-thread", sourceThreadId: SOURCE })
      expect(probes[1]!.reason).toContain("archive refused")
      const fork = (yield* mock.requests("thread/fork"))[0]!
      expect(yield* (yield* mock.peers).find((p) => p.index === fork.peer)!.inputEnded).toBe(false)
      expect((yield* mock.requests("turn/start")).map((r) => r.peer)).toEqual([fork.peer])
    }).pipe(
      Effect.provide(
        testLayer({
          handlers: nativeHandlers([nativeThread(SOURCE)], {
            "thread/archive": () => Effect.fail({ code: -32603, message: "archive refused" })
          })
        })
      )
    ))

  it.scoped("[S15] a first turn that fails before the canonical thread exists leaves the branch pending; the next turn forks again", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      yield* (yield* Branching).branch(SOURCE, { sessionId: "b1" })
      const harness = yield* CodexHarness
      const failed = yield* harness.runTurn({ sessionId: "b1", prompt: "first try" }).pipe(Effect.flip)
      expect(failed.message).toContain("fork refused")
      expect(yield* mock.requests("thread/start")).toHaveLength(0)
      yield* mock.setHandler("thread/fork", nativeHandlers([nativeThread(SOURCE)])["thread/fork"]!)
      const again = yield* harness.runTurn({ sessionId: "b1", prompt: "second try" })
      expect(again.status).toBe("completed")
      expect(yield* mock.requests("thread/fork")).toHaveLength(2)
      // the history injected once, without the failed prompt
      const inject = (yield* mock.requests("thread/inject_items")).map((r) => JSON.stringify(r.params))
      expect(inject).toHaveLength(1)
      expect(inject[0]).not.toContain("first try")
    }).pipe(
      Effect.provide(
        testLayer({
          handlers: nativeHandlers([nativeThread(SOURCE)], { "thread/fork": () => Effect.fail({ code: -32603, message: "fork refused" }) })
        })
      )
    ))

  it.scoped("[S15] a branch whose history was not fully recorded fails closed before anything is asked of Codex", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const runtime = { transport: "stdio" as const, codexHome: NATIVE, poolKey: supervisedPoolKey("cut"), locked: true }
      yield* store.append("cut", { _tag: "branch", at: "t", sourceThreadId: SOURCE, messages: 2, runtime })
      yield* store.append("cut", { _tag: "user", at: "t", text: "only the question" })
      const error = yield* (yield* CodexHarness).runTurn({ sessionId: "cut", prompt: "hi" }).pipe(Effect.flip)
      expect(error._tag).toBe("SupervisedBindingDrift")
      expect(error.message).toContain("was not fully recorded")
      const mock = yield* MockAppServer
      expect(yield* mock.requests("thread/fork")).toHaveLength(0)
      expect(yield* mock.requests("turn/start")).toHaveLength(0)
    }).pipe(Effect.provide(testLayer({ handlers: nativeHandlers([nativeThread(SOURCE)]) }))))

  it.scoped("[S4] a branch probe that could not be archived is archived when the session next opens its connection", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const harness = yield* CodexHarness
      const probeStatuses = Effect.map(recordsOf("b2"), (records) =>
        records.flatMap((r) => (r._tag === "probe" ? [r.status] : [])))
      const probeArchives = Effect.map(mock.requests("thread/archive"), (requests) =>
        requests.filter((r) => (r.params as { threadId?: string }).threadId === "probe-thread"))

      yield* (yield* Branching).branch(SOURCE, { sessionId: "b2" })
      // the first turn makes the probe and fails to archive it: recorded, and the turn runs
      expect((yield* harness.runTurn({ sessionId: "b2", prompt: "one" })).status).toBe("completed")
      expect(yield* probeStatuses).toEqual(["open", "cleanupFailed"])
      expect(yield* probeArchives).toHaveLength(1)

      // the next turn retries it first; that fails again, and the turn still runs and the record stays
      expect((yield* harness.runTurn({ sessionId: "b2", prompt: "two" })).status).toBe("completed")
      expect(yield* probeArchives).toHaveLength(2)
      expect(yield* probeStatuses).toEqual(["open", "cleanupFailed"])

      // the turn after: Codex archives it, and the probe is recorded closed
      expect((yield* harness.runTurn({ sessionId: "b2", prompt: "three" })).status).toBe("completed")
      expect(yield* probeArchives).toHaveLength(3)
      expect(yield* probeStatuses).toEqual(["open", "cleanupFailed", "closed"])
      const closed = (yield* recordsOf("b2")).filter((r) => r._tag === "probe").at(-1)
      expect(closed).toMatchObject({ threadId: "probe-thread", sourceThreadId: SOURCE, reason: "cleaned up on a later start (archived)" })

      // and never again
      expect((yield* harness.runTurn({ sessionId: "b2", prompt: "four" })).status).toBe("completed")
      expect(yield* probeArchives).toHaveLength(3)
    }).pipe(
      Effect.provide(
        testLayer({
          handlers: nativeHandlers([nativeThread(SOURCE)], {
            "thread/archive": (() => {
              let probeCalls = 0
              return (params: { threadId: string }) => {
                if (params.threadId !== "probe-thread") return Effect.succeed({})
                probeCalls++
                return probeCalls <= 2 ? Effect.fail({ code: -32603, message: `archive refused (${probeCalls})` }) : Effect.succeed({})
              }
            })()
          })
        })
      )
    ))

  it.scoped("[S15] a supervised binding whose home drifted fails closed; so does one naming another session's connection", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const binding = { _tag: "binding" as const, at: "t", threadId: "canon", locked: true, connection: supervisedPoolKey("s1") }
      yield* store.append("s1", { ...binding, codexHome: "/elsewhere" })
      const drift = yield* harness.runTurn({ sessionId: "s1", prompt: "hi" }).pipe(Effect.flip)
      expect(drift._tag).toBe("SupervisedBindingDrift")
      expect(drift.message).toContain("CODEX_HOME /elsewhere")
      yield* store.append("s2", { ...binding, connection: supervisedPoolKey("another"), codexHome: NATIVE })
      expect((yield* harness.runTurn({ sessionId: "s2", prompt: "hi" }).pipe(Effect.flip))._tag).toBe("SupervisedBindingDrift")
      expect(yield* mock.requests("turn/start")).toHaveLength(0)
      expect(yield* mock.spawnCount).toBe(0)
    }).pipe(Effect.provide(testLayer({}))))

  it.scoped("[S15] a supervised chat whose canonical thread vanished fails closed instead of starting a fresh thread", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      yield* store.append("s1", { _tag: "binding", at: "t", threadId: "gone", locked: true, connection: supervisedPoolKey("s1"), codexHome: NATIVE })
      const error = yield* (yield* CodexHarness).runTurn({ sessionId: "s1", prompt: "hi" }).pipe(Effect.flip)
      expect(error.message).toContain("no rollout found for thread id gone")
      const mock = yield* MockAppServer
      expect(yield* mock.requests("thread/start")).toHaveLength(0)
      expect(yield* mock.requests("turn/start")).toHaveLength(0)
    }).pipe(Effect.provide(testLayer({}))))

  it.scoped("[S15] disabled supervision refuses branches and supervised turns without spawning anything", () =>
    Effect.gen(function* () {
      const store = yield* SessionStore
      yield* store.append("s1", { _tag: "binding", at: "t", threadId: "c", locked: true, connection: supervisedPoolKey("s1"), codexHome: NATIVE })
      const turn = yield* (yield* CodexHarness).runTurn({ sessionId: "s1", prompt: "hi" }).pipe(Effect.flip)
      expect(turn._tag).toBe("SupervisionDisabled")
      const branch = yield* (yield* Branching).branch(SOURCE).pipe(Effect.flip)
      expect(branch._tag).toBe("SupervisionDisabled")
      expect((yield* (yield* Catalog).list.pipe(Effect.flip))._tag).toBe("SupervisionDisabled")
      expect(yield* (yield* MockAppServer).spawnCount).toBe(0)
    }).pipe(Effect.provide(testLayer({ handlers: nativeHandlers([nativeThread(SOURCE)]) }, {}))))

  it.scoped("[S15] a branch never reuses an existing session and refuses an archived source", () =>
    Effect.gen(function* () {
      const branching = yield* Branching
      yield* (yield* SessionStore).append("taken", { _tag: "notice", at: "t", text: "hello" })
      expect((yield* branching.branch(SOURCE, { sessionId: "taken" }).pipe(Effect.flip)).message).toContain("session taken already exists")
      const mock = yield* MockAppServer
      yield* mock.setHandler("thread/list", (params) =>
        Effect.succeed({ data: params.archived === true ? [nativeThread(SOURCE)] : [], nextCursor: null }))
      expect((yield* branching.branch(SOURCE).pipe(Effect.flip)).message).toBe(`cannot branch thread ${SOURCE}: it is archived`)
      expect(yield* mock.requests("thread/fork")).toHaveLength(0)
    }).pipe(Effect.provide(testLayer({ handlers: nativeHandlers([nativeThread(SOURCE)]) }))))

  it("[S15] the history keeps the newest messages within the documented bounds and cuts an oversized message", () => {
    const many = Array.from({ length: 150 }, (_, i) => turn(`t${149 - i}`, "completed", `q${149 - i}`, `a${149 - i}`)) as Array<Turn>
    const bounded = boundHistory(many)
    expect(bounded.messages).toHaveLength(historyBounds.maxMessages)
    expect(bounded.messages[0]!.text).toBe("q50")
    expect(bounded.messages.at(-1)!.text).toBe("a149")
    expect(bounded.truncated).toBe(true)
    expect(bounded.lastTurnId).toBe("t149")

    const huge = "x".repeat(70 * 1024)
    const cut = boundHistory([turn("big", "completed", huge, "ok")] as Array<Turn>)
    expect(Buffer.byteLength(cut.messages[0]!.text)).toBeLessThanOrEqual(historyBounds.maxMessageBytes)
    expect(cut.truncated).toBe(true)

    const total = boundHistory(
      Array.from({ length: 12 }, (_, i) => turn(`t${i}`, "completed", "y".repeat(60 * 1024), "z")) as Array<Turn>
    )
    expect(total.bytes).toBeLessThanOrEqual(historyBounds.maxTotalBytes)
    expect(total.messages.length).toBeLessThan(24)

    const none = boundHistory([turn("running", "inProgress", "q", "a")] as Array<Turn>)
    expect(none).toEqual({ messages: [], bytes: 0, truncated: false, lastTurnId: undefined })
  })

  it("[S15] the first turn takes exactly the history its branch record announces, closed by the branch's notice", () => {
    const runtime = { transport: "stdio" as const, codexHome: NATIVE, poolKey: supervisedPoolKey("b"), locked: true }
    const branch: SessionRecord = { _tag: "branch", at: "t", sourceThreadId: SOURCE, messages: 2, runtime }
    const q: SessionRecord = { _tag: "user", at: "t", text: "q" }
    const a: SessionRecord = { _tag: "assistant", at: "t", threadId: SOURCE, turnId: "t1", text: "a" }
    const notice: SessionRecord = { _tag: "notice", at: "t", text: "Branched" }
    const prompt: SessionRecord = { _tag: "user", at: "t", text: "a later prompt" }
    const settled: SessionRecord = { _tag: "settled", at: "t", status: "failed", reason: "fork refused" }
    const b = branch as Extract<SessionRecord, { _tag: "branch" }>
    expect(branchHistory([b, q, a, notice, prompt, settled], b)).toEqual([{ role: "user", text: "q" }, { role: "assistant", text: "a" }])
    // cut short (a failed write): never completed by a later prompt
    expect(branchHistory([b, q, prompt, settled], b)).toBeUndefined()
    expect(branchHistory([b, q, a], b)).toBeUndefined()
    expect(branchHistory([{ ...b, messages: 0 }, notice], { ...b, messages: 0 })).toEqual([])
  })
})

describe("supervision: deleting a session", () => {
  it.effect("[S16] a supervised chat cannot be deleted while it protects its native binding", () =>
    Effect.gen(function* () {
      const bound: Array<SessionRecord> = [{ _tag: "binding", at: "t", threadId: "canon", locked: true, connection: "supervision:s" }]
      const refused = yield* checkDeletable("s", bound).pipe(Effect.flip)
      expect(refused.message).toBe(
        "cannot delete session s: it is a supervised chat protecting native thread canon; archive that thread first"
      )
      yield* checkDeletable("s", [...bound, { _tag: "detached", at: "t", threadId: "canon", reason: "archived" }])
      yield* checkDeletable("plain", [{ _tag: "binding", at: "t", threadId: "other" }])
    }))
})
