// Manual native compaction (S37, S39) against the in-memory app-server, with the TestClock driving the timeout and the
// interrupt grace: completion, timeout with a confirmed interrupt, an unconfirmed interrupt (retirement before the fence
// opens), client closure, cancellation, "no active turn" on either side of the item, remote detach, the shared client,
// and nothing sent beyond resume / compact / interrupt.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, Layer, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { AppServerExited, ConnectionRetired } from "../../src/appserver/errors.js"
import {
  Compaction,
  CompactionClientClosed,
  CompactionFailed,
  type CompactionLayerOptions,
  CompactionThreadGone,
  CompactionTimedOut,
  layer as compactionLayer,
  NothingToCompact
} from "../../src/compaction/Compaction.js"
import { CompactionFence } from "../../src/compaction/CompactionFence.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type LifecycleEvent, PluginHooks } from "../../src/ports/PluginHooks.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"
import { type Handler, MockAppServer, type MockPeer } from "../../src/testing/MockAppServer.js"
import { untilHolds } from "../support/untilHolds.js"

const layerWith = (options: CompactionLayerOptions = {}, test: Test.TestLayerOptions = {}) =>
  compactionLayer(options).pipe(Layer.provideMerge(Test.layer(test)))

const recordsOf = (sessionId: string) =>
  Effect.flatMap(SessionStore, (store) => store.read(sessionId)).pipe(Effect.map((c) => c.records))
const compactionStatuses = (sessionId: string) =>
  Effect.map(recordsOf(sessionId), (records) => records.flatMap((r) => (r._tag === "compaction" ? [r.status] : [])))

const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, what: string) => untilHolds(check, `never happened: ${what}`)

/** the prompt of a turn is mirrored before the turn passes the fence */
const promptMirrored = (sessionId: string, text: string) =>
  eventually(Effect.map(recordsOf(sessionId), (records) => JSON.stringify(records).includes(JSON.stringify(text))), `prompt ${text} mirrored`)

const startedRecorded = (sessionId: string) =>
  eventually(Effect.map(compactionStatuses(sessionId), (s) => s.includes("started")), "compaction started recorded")

// ---- the compaction turn on the mock, shaped like 0.171's: {} then turn/started, then item/started contextCompaction ----

const compactTurnId = (n: number) => `compact-turn-${n}`
const isCompactTurn = (turnId: unknown) => typeof turnId === "string" && turnId.startsWith("compact-turn-")

/** thread/compact/start: answers {}, starts a compaction turn, then runs `afterStart` (default: nothing; the test ends it). */
const compactStart = (
  afterStart: (peer: MockPeer, threadId: string, turnId: string) => Effect.Effect<void> = () => Effect.void
): Handler => {
  let n = 0
  return (params, ctx) =>
    Effect.gen(function* () {
      const threadId = params.threadId as string
      const turnId = compactTurnId(++n)
      yield* ctx.afterReply(
        Effect.gen(function* () {
          yield* ctx.notify("turn/started", { threadId, turn: { id: turnId, status: "inProgress", items: [], error: null } })
          yield* ctx.notify("item/started", { threadId, turnId, startedAtMs: 0, item: { type: "contextCompaction", id: `cc-${turnId}` } })
          yield* afterStart(ctx, threadId, turnId)
        })
      )
      return {}
    })
}

const itemCompleted = (peer: MockPeer, threadId: string, turnId: string) =>
  peer.notify("item/completed", { threadId, turnId, completedAtMs: 0, item: { type: "contextCompaction", id: `cc-${turnId}` } })

const turnCompleted = (peer: MockPeer, threadId: string, turnId: string, status = "completed", error?: string) =>
  peer.notify("turn/completed", {
    threadId,
    turn: { id: turnId, status, items: [], error: error === undefined ? null : { message: error } }
  })

/** turn/interrupt of a compaction turn: waits for `gate` (when given), answers {} and ends the turn interrupted */
const interruptConfirms = (gate?: Deferred.Deferred<void>): Handler => (params, ctx) =>
  isCompactTurn(params.turnId)
    ? Effect.gen(function* () {
      if (gate !== undefined) yield* Deferred.await(gate)
      yield* ctx.afterReply(turnCompleted(ctx, params.threadId, params.turnId, "interrupted"))
      return {}
    })
    : ctx.fallback

/** turn/interrupt of a compaction turn that is never answered (a wedged or unreachable app-server) */
const interruptHangs: Handler = (params, ctx) => (isCompactTurn(params.turnId) ? Effect.never : ctx.fallback)

/** the app-server's answer when the turn has already ended */
const interruptNoActiveTurn: Handler = () => Effect.fail({ code: -32600, message: "no active turn to interrupt" })

/** a session with one finished turn: its thread is bound and loaded on the shared client */
const boundSession = (sessionId = "s") =>
  Effect.gen(function* () {
    const harness = yield* CodexHarness
    const first = yield* harness.runTurn({ sessionId, prompt: "hello" })
    const mock = yield* MockAppServer
    return { threadId: first.threadId, peer: yield* mock.latest }
  })

describe("manual compaction", () => {
  it.scoped("[S37][S39] completes: started and completed recorded; the fence is held during and released after; a turn started meanwhile waits at the fence and runs after", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const harness = yield* CodexHarness
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { peer, threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart())

      const compacting = yield* compaction.compact("s").pipe(Effect.fork)
      yield* startedRecorded("s")
      expect(yield* fence.isHeld(threadId)).toBe(true)

      const turn = yield* harness.runTurn({ sessionId: "s", prompt: "during" }).pipe(Effect.fork)
      yield* promptMirrored("s", "during")
      // every fiber settles (TestClock waits for them to suspend); well inside the timeout
      yield* TestClock.adjust("10 seconds")
      expect(yield* mock.requests("turn/start")).toHaveLength(1)
      expect(turn.unsafePoll()).toBeNull()

      yield* itemCompleted(peer, threadId, compactTurnId(1))
      expect(yield* fence.isHeld(threadId)).toBe(true)
      yield* turnCompleted(peer, threadId, compactTurnId(1))
      const result = yield* Fiber.join(compacting)
      expect(result).toMatchObject({ sessionId: "s", threadId, turnId: compactTurnId(1), afterTimeout: false })
      expect(result.durationMs).toBe(10_000)
      expect(yield* fence.isHeld(threadId)).toBe(false)

      const after = yield* Fiber.join(turn)
      expect(after).toMatchObject({ status: "completed", threadId })
      expect(yield* mock.requests("turn/start")).toHaveLength(2)
      const records = yield* recordsOf("s")
      expect(records.filter((r) => r._tag === "compaction")).toEqual([
        expect.objectContaining({ threadId, turnId: compactTurnId(1), status: "started" }),
        expect.objectContaining({ threadId, turnId: compactTurnId(1), status: "completed" })
      ])
      // the prompt sent during the compaction is mirrored before the compaction's end, its turn after it
      const tags = records.map((r) => (r._tag === "compaction" ? `compaction:${r.status}` : r._tag))
      expect(tags.indexOf("compaction:completed")).toBeLessThan(tags.lastIndexOf("turn"))
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] times out, requests turn/interrupt, and holds the fence until the interrupt is confirmed", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { threadId } = yield* boundSession()
      const gate = yield* Deferred.make<void>()
      yield* mock.setHandler("thread/compact/start", compactStart())
      yield* mock.setHandler("turn/interrupt", interruptConfirms(gate))

      const compacting = yield* compaction.compact("s").pipe(Effect.either, Effect.fork)
      yield* startedRecorded("s")
      yield* TestClock.adjust("179 seconds")
      expect(yield* mock.requests("turn/interrupt")).toHaveLength(0)
      yield* TestClock.adjust("1 second")
      const interrupt = yield* mock.awaitRequest("turn/interrupt")
      expect(interrupt.params).toEqual({ threadId, turnId: compactTurnId(1) })
      // the interrupt is not confirmed yet: lease and fence stay held (within the grace)
      yield* TestClock.adjust("20 seconds")
      expect(yield* fence.isHeld(threadId)).toBe(true)
      expect(compacting.unsafePoll()).toBeNull()

      yield* Deferred.succeed(gate, undefined)
      const outcome = yield* Fiber.join(compacting)
      expect(outcome._tag).toBe("Left")
      const error = outcome._tag === "Left" ? outcome.left : undefined
      expect(error).toBeInstanceOf(CompactionTimedOut)
      expect(error).toMatchObject({ threadId, turnId: compactTurnId(1), timeoutMs: 180_000, retired: false, detached: false })
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* compactionStatuses("s")).toEqual(["started", "interrupted"])
      // the client was not retired: the next turn runs on it
      const harness = yield* CodexHarness
      yield* harness.runTurn({ sessionId: "s", prompt: "next" })
      expect(yield* mock.spawnCount).toBe(1)
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] an interrupt never confirmed within the grace retires the client before the fence opens: the waiting turn fails with ConnectionRetired, the next lease spawns a fresh peer", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const harness = yield* CodexHarness
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { peer, threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart())
      yield* mock.setHandler("turn/interrupt", interruptHangs)

      const compacting = yield* compaction.compact("s").pipe(Effect.flip, Effect.fork)
      yield* startedRecorded("s")
      const waiting = yield* harness.runTurn({ sessionId: "s", prompt: "queued behind the compaction" }).pipe(Effect.flip, Effect.fork)
      yield* promptMirrored("s", "queued behind the compaction")
      yield* TestClock.adjust("180 seconds")
      yield* mock.awaitRequest("turn/interrupt")
      yield* TestClock.adjust("29 seconds")
      expect(yield* fence.isHeld(threadId)).toBe(true)
      expect(yield* peer.inputEnded).toBe(false)
      yield* TestClock.adjust("1 second")

      const error = yield* Fiber.join(compacting)
      expect(error).toBeInstanceOf(CompactionTimedOut)
      expect(error).toMatchObject({ retired: true, detached: false })
      expect(error.message).toContain("retired")
      expect(yield* fence.isHeld(threadId)).toBe(false)
      // the turn that waited at the fence reached the retired client, not a live one
      const turnError = yield* Fiber.join(waiting)
      expect(turnError).toBeInstanceOf(ConnectionRetired)
      expect((turnError as ConnectionRetired).retryable).toBe(true)
      expect(yield* mock.requests("turn/start")).toHaveLength(1)
      expect(yield* peer.inputEnded).toBe(true)
      expect(yield* compactionStatuses("s")).toEqual(["started", "failed"])

      // a retry gets a fresh client and the same (local) binding
      const retried = yield* harness.runTurn({ sessionId: "s", prompt: "retry" })
      expect(retried).toMatchObject({ status: "completed", threadId })
      expect(yield* mock.spawnCount).toBe(2)
      expect((yield* mock.latest).index).toBe(2)
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] the client closing mid-compaction (peer crash) is a typed failure carrying the cause; fence and lease are released", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { peer, threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart())

      const compacting = yield* compaction.compact("s").pipe(Effect.flip, Effect.fork)
      yield* startedRecorded("s")
      yield* peer.crash("SIGKILL")
      const error = yield* Fiber.join(compacting)
      expect(error).toBeInstanceOf(CompactionClientClosed)
      const closed = error as CompactionClientClosed
      expect(closed.cause).toBeInstanceOf(AppServerExited)
      expect((closed.cause as AppServerExited).signal).toBe("SIGKILL")
      expect(closed.message).toContain("killed by SIGKILL")
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* compactionStatuses("s")).toEqual(["started", "failed"])
      // no lease is left: the idle time-to-live runs out and the dead client's transport is released
      yield* TestClock.adjust("2 minutes")
      expect(yield* peer.released).toBe(true)
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] cancelling the compaction sends turn/interrupt and releases the fence", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { peer, threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart())
      yield* mock.setHandler("turn/interrupt", interruptConfirms())

      const compacting = yield* compaction.compact("s").pipe(Effect.fork)
      yield* startedRecorded("s")
      const exit = yield* Fiber.interrupt(compacting)
      expect(Exit.isInterrupted(exit)).toBe(true)
      const interrupts = yield* mock.requests("turn/interrupt")
      expect(interrupts.map((r) => r.params)).toEqual([{ threadId, turnId: compactTurnId(1) }])
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* compactionStatuses("s")).toEqual(["started", "interrupted"])
      // confirmed: nothing retired
      expect(yield* peer.inputEnded).toBe(false)
      expect(yield* mock.spawnCount).toBe(1)
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] cancelling while the interrupt is never confirmed: the grace still runs (inside the interruption), the client is retired, then the fence opens", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { peer, threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart())
      yield* mock.setHandler("turn/interrupt", interruptHangs)

      const compacting = yield* compaction.compact("s").pipe(Effect.fork)
      yield* startedRecorded("s")
      const cancelling = yield* Fiber.interrupt(compacting).pipe(Effect.fork)
      yield* mock.awaitRequest("turn/interrupt")
      yield* TestClock.adjust("29 seconds")
      expect(cancelling.unsafePoll()).toBeNull()
      expect(yield* fence.isHeld(threadId)).toBe(true)
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.join(cancelling)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(yield* peer.inputEnded).toBe(true)
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* compactionStatuses("s")).toEqual(["started", "failed"])
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] \"no active turn to interrupt\" after the compaction item completed is a success", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { threadId } = yield* boundSession()
      // the item completes, the turn's end never reaches us
      yield* mock.setHandler("thread/compact/start", compactStart((peer, t, turnId) => itemCompleted(peer, t, turnId)))
      yield* mock.setHandler("turn/interrupt", interruptNoActiveTurn)

      const compacting = yield* compaction.compact("s").pipe(Effect.fork)
      yield* startedRecorded("s")
      yield* TestClock.adjust("180 seconds")
      const result = yield* Fiber.join(compacting)
      expect(result).toMatchObject({ threadId, turnId: compactTurnId(1), afterTimeout: true })
      expect(yield* mock.requests("turn/interrupt")).toHaveLength(1)
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* compactionStatuses("s")).toEqual(["started", "completed"])
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] \"no active turn to interrupt\" before the compaction item completed is a failure (not a retirement)", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { peer, threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart())
      yield* mock.setHandler("turn/interrupt", interruptNoActiveTurn)

      const compacting = yield* compaction.compact("s").pipe(Effect.flip, Effect.fork)
      yield* startedRecorded("s")
      yield* TestClock.adjust("180 seconds")
      yield* mock.awaitRequest("turn/interrupt")
      // it waits (at most the grace) for the ended turn's last notifications, then gives up on the item
      yield* TestClock.adjust("30 seconds")
      const error = yield* Fiber.join(compacting)
      expect(error).toBeInstanceOf(CompactionTimedOut)
      expect(error).toMatchObject({ retired: false, detached: false })
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* peer.inputEnded).toBe(false)
      expect(yield* compactionStatuses("s")).toEqual(["started", "interrupted"])
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] a compaction turn that ends failed before its item completed is a failed operation, recorded", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { threadId } = yield* boundSession()
      yield* mock.setHandler(
        "thread/compact/start",
        compactStart((peer, t, turnId) => turnCompleted(peer, t, turnId, "failed", "context window exceeded"))
      )
      const error = yield* compaction.compact("s").pipe(Effect.flip)
      expect(error).toBeInstanceOf(CompactionFailed)
      expect(error).toMatchObject({ threadId, turnId: compactTurnId(1), status: "failed", message: "context window exceeded" })
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* compactionStatuses("s")).toEqual(["started", "failed"])
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] a compaction turn that ends interrupted before its item completed is a failed operation, recorded", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart((peer, t, turnId) => turnCompleted(peer, t, turnId, "interrupted")))
      const error = yield* compaction.compact("s").pipe(Effect.flip)
      expect(error).toBeInstanceOf(CompactionFailed)
      expect(error).toMatchObject({ status: "interrupted" })
      expect(yield* compactionStatuses("s")).toEqual(["started", "interrupted"])
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] thread/compact/start rejected by Codex is a failed operation with nothing recorded", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const { threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", () => Effect.fail({ code: -32603, message: "compaction unavailable" }))
      const error = yield* compaction.compact("s").pipe(Effect.flip)
      expect(error).toBeInstanceOf(CompactionFailed)
      expect(error).toMatchObject({ status: "rejected", message: "compaction unavailable" })
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* compactionStatuses("s")).toEqual([])
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] on a remote connection an unconfirmed interrupt also detaches the binding: the next message starts a fresh thread", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const harness = yield* CodexHarness
      const compaction = yield* Compaction
      const { threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart())
      yield* mock.setHandler("turn/interrupt", interruptHangs)

      const compacting = yield* compaction.compact("s").pipe(Effect.flip, Effect.fork)
      yield* startedRecorded("s")
      yield* TestClock.adjust("60 seconds")
      yield* mock.awaitRequest("turn/interrupt")
      yield* TestClock.adjust("5 seconds")
      const error = yield* Fiber.join(compacting)
      expect(error).toBeInstanceOf(CompactionTimedOut)
      expect(error).toMatchObject({ retired: true, detached: true, timeoutMs: 60_000 })
      expect(error.message).toContain("binding detached")
      const records = yield* recordsOf("s")
      expect(sessionState(records).binding).toBeUndefined()
      expect(records.find((r) => r._tag === "detached")).toMatchObject({ threadId })

      const next = yield* harness.runTurn({ sessionId: "s", prompt: "fresh start" })
      expect(next.threadId).not.toBe(threadId)
      expect(yield* mock.requests("thread/start")).toHaveLength(2)
      expect(sessionState(yield* recordsOf("s")).binding?.threadId).toBe(next.threadId)
    }).pipe(Effect.provide(layerWith({ remote: true, timeout: "60 seconds", interruptGrace: "5 seconds" }))))

  it.scoped("[S37] compaction runs on the same shared client as the session's live thread (one spawn)", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const harness = yield* CodexHarness
      const compaction = yield* Compaction
      const { threadId } = yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart((peer, t, turnId) =>
        itemCompleted(peer, t, turnId).pipe(Effect.zipRight(turnCompleted(peer, t, turnId)))
      ))
      yield* compaction.compact("s")
      yield* harness.runTurn({ sessionId: "s", prompt: "after" })
      yield* compaction.compact("s")
      expect(yield* mock.spawnCount).toBe(1)
      const compacts = yield* mock.requests("thread/compact/start")
      expect(compacts.map((r) => [r.peer, r.params])).toEqual([
        [1, { threadId }],
        [1, { threadId }]
      ])
      expect(yield* compactionStatuses("s")).toEqual(["started", "completed", "started", "completed"])
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37][S1] no preflight, no fallback summary: on the thread's loaded client a compaction sends only thread/compact/start and turn/interrupt", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      yield* boundSession()
      yield* mock.setHandler("thread/compact/start", compactStart())
      yield* mock.setHandler("turn/interrupt", interruptConfirms())
      const before = (yield* mock.messages).length

      const compacting = yield* compaction.compact("s").pipe(Effect.flip, Effect.fork)
      yield* startedRecorded("s")
      yield* TestClock.adjust("180 seconds")
      expect(yield* Fiber.join(compacting)).toBeInstanceOf(CompactionTimedOut)
      const sent = (yield* mock.messages).slice(before)
      expect(sent.map((m) => (m._tag === "Request" ? m.method : m._tag))).toEqual(["thread/compact/start", "turn/interrupt"])
      // the transcript gets statuses only: no invented summary
      const records = (yield* recordsOf("s")).filter((r) => r._tag === "compaction")
      expect(records.every((r) => Object.keys(r).sort().join() === "_tag,at,status,threadId,turnId")).toBe(true)
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] a compaction that is the first to load the thread on a client resumes it as a turn would: the same instructions and config", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const { peer, threadId } = yield* boundSession()
      const turnOpen = (yield* mock.requests("thread/start"))[0]!.params as Record<string, unknown>
      // the client dies between turns: the next lease spawns a fresh one, where nothing is loaded
      yield* peer.crash("SIGKILL")
      yield* mock.setHandler("thread/compact/start", compactStart((ctx, thread, turnId) =>
        Effect.zipRight(itemCompleted(ctx, thread, turnId), turnCompleted(ctx, thread, turnId))))
      yield* compaction.compact("s")
      const resumes = yield* mock.requests("thread/resume")
      expect(resumes).toHaveLength(1)
      const resume = resumes[0]!.params as Record<string, unknown>
      expect(resume).toMatchObject({ threadId, personality: "none" })
      // what decides the thread's context on this client is what a turn sends: not a bare resume
      for (const key of ["developerInstructions", "config", "baseInstructions", "model", "cwd"] as const) {
        expect(resume[key], key).toEqual(turnOpen[key])
      }
      expect(resume.developerInstructions).toEqual(expect.any(String))
      expect(yield* compactionStatuses("s")).toEqual(["started", "completed"])
    }).pipe(Effect.provide(layerWith())))

  it.scoped("[S37] a session with no thread has nothing to compact; a thread that is gone is a typed error; neither takes the fence or spawns", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const fence = yield* CompactionFence
      const nothing = yield* compaction.compact("empty").pipe(Effect.flip)
      expect(nothing).toBeInstanceOf(NothingToCompact)
      expect(yield* mock.spawnCount).toBe(0)

      const { threadId } = yield* boundSession()
      yield* mock.forgetThread(threadId)
      // the thread is loaded on the shared client, so compact/start goes straight out and is refused; the compaction
      // opens the thread once more (a resume), which finds nothing
      yield* mock.setHandler("thread/compact/start", (params) =>
        Effect.fail({ code: -32600, message: `thread not found: ${String(params.threadId)}` }))
      const gone = yield* compaction.compact("s").pipe(Effect.flip)
      expect(gone).toBeInstanceOf(CompactionThreadGone)
      expect(gone).toMatchObject({ threadId })
      expect(yield* fence.isHeld(threadId)).toBe(false)
      expect(yield* mock.requests("thread/compact/start")).toHaveLength(1)
      expect((yield* mock.requests("thread/resume")).map((r) => (r.params as { threadId?: string }).threadId)).toEqual([threadId])
    }).pipe(Effect.provide(layerWith())))
})

describe("manual compaction lifecycle", () => {
  it.scoped("[S24][S37] a manual compaction is projected as before_compaction and after_compaction to PluginHooks", () => {
    const seen: Array<LifecycleEvent> = []
    const done = Deferred.unsafeMake<void>(FiberId.none)
    const observer = Layer.succeed(PluginHooks, {
      observe: (event) =>
        Effect.sync(() => {
          seen.push(event)
          if (event.type === "after_compaction") Deferred.unsafeDone(done, Effect.void)
        })
    })
    return Effect.gen(function* () {
      const mock = yield* MockAppServer
      const compaction = yield* Compaction
      const { threadId } = yield* boundSession()
      yield* mock.setHandler(
        "thread/compact/start",
        compactStart((peer, thread, turnId) =>
          itemCompleted(peer, thread, turnId).pipe(Effect.zipRight(turnCompleted(peer, thread, turnId)))
        )
      )
      yield* compaction.compact("s")
      yield* Deferred.await(done)
      const compactions = seen.filter((e) => e.type === "before_compaction" || e.type === "after_compaction")
      expect(compactions).toEqual([
        { type: "before_compaction", sessionId: "s", threadId, turnId: compactTurnId(1) },
        { type: "after_compaction", sessionId: "s", threadId, turnId: compactTurnId(1), status: "completed" }
      ])
    }).pipe(Effect.provide(layerWith().pipe(Layer.provide(observer))))
  })
})
