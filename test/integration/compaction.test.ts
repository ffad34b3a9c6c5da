// Manual native compaction on the real app-server (S37, S39, S35): a compaction after a turn completes and is mirrored;
// during a (slowed) compaction a steer is refused as not steerable and a new turn waits at the fence, reaching the model
// only after the compaction; an app-server SIGKILLed mid-compaction is a typed failure that releases the fence, leaves
// no process behind, and the next compaction succeeds on a fresh client.
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Fiber, Layer, Schedule, Scope } from "effect"
import * as Live from "../../layers/internal/Live.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { AppServerExited } from "../../src/appserver/errors.js"
import * as Compaction from "../../src/compaction/Compaction.js"
import { CompactionFence } from "../../src/compaction/CompactionFence.js"
import * as SessionWork from "../../src/harness/SessionWork.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../../src/config/Settings.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { type RecordedRequest, reply, type ScriptRule } from "../../src/testing/ScriptedModel.js"
import { fixture, groupAlive, leaseSessionClient, processesMentioning } from "../support/harness.js"

const COMPACTION = "CONTEXT CHECKPOINT COMPACTION"
/** the compaction request, slowed so there is time to act while it runs */
const slowCompaction: ScriptRule = {
  whenRequestIncludes: COMPACTION,
  reply: reply.steps({ type: "pause", ms: 1500 }, { type: "message", text: "summary" })
}

/** One "harness process": the live layer plus the Compaction service in a scope the test closes itself. */
const start = (settings: HarnessSettings, options: Compaction.CompactionLayerOptions = {}) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      // the session work registry over this Compaction (its options), as the composition builds it over its own
      SessionWork.layer().pipe(
        Layer.provideMerge(Compaction.layer(options)),
        Layer.provideMerge(Live.layer(settings)),
        Layer.provideMerge(RecordingDelivery.layer)
      ),
      scope
    )
    const pool = Context.get(context, ClientPool)
    return {
      harness: Context.get(context, CodexHarness),
      work: Context.get(context, SessionWork.SessionWork),
      compaction: Context.get(context, Compaction.Compaction),
      fence: Context.get(context, CompactionFence),
      store: Context.get(context, SessionStore),
      pid: Effect.scoped(Effect.map(leaseSessionClient(pool, settings), (c) => c.pid)),
      stop: Scope.close(scope, Exit.void)
    }
  })

const compactionStatuses = (store: Context.Tag.Service<typeof SessionStore>, sessionId: string) =>
  Effect.map(store.read(sessionId), ({ records }) => records.flatMap((r) => (r._tag === "compaction" ? [r.status] : [])))

const indexOfRequest = (requests: ReadonlyArray<RecordedRequest>, needle: string) => requests.findIndex((r) => r.body.includes(needle))

/** Polls until `check` holds (bounded); true when it did. */
const within = (check: () => boolean, duration: Duration.DurationInput = "60 seconds") =>
  Effect.sync(check).pipe(
    Effect.repeat({ until: (ok) => ok, schedule: Schedule.spaced("20 millis") }),
    Effect.timeoutTo({ duration, onTimeout: () => false, onSuccess: () => true })
  )

describe("manual compaction on the real app-server", () => {
  it.scopedLive("[S37][S39] a compaction after one turn succeeds on the session's own client and is recorded", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ rules: [slowCompaction], replies: [reply.text("noted: tangerine"), reply.text("still here")] })
      const h = yield* start(f.settings)
      yield* Effect.addFinalizer(() => h.stop)
      const first = yield* h.harness.runTurn({ sessionId: "c", prompt: "remember tangerine" })
      const pid = yield* h.pid

      const result = yield* h.compaction.compact("c")
      expect(result).toMatchObject({ sessionId: "c", threadId: first.threadId, afterTimeout: false })
      expect(result.durationMs).toBeGreaterThanOrEqual(1_400)
      expect(yield* h.pid).toBe(pid)
      expect(yield* compactionStatuses(h.store, "c")).toEqual(["started", "completed"])
      const records = (yield* h.store.read("c")).records.filter((r) => r._tag === "compaction")
      expect(records.map((r) => r.turnId)).toEqual([result.turnId, result.turnId])

      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests[1]!.body).toContain(COMPACTION)
      expect(requests[1]!.body).toContain("remember tangerine")
      // the thread goes on after it, on the same client
      const next = yield* h.harness.runTurn({ sessionId: "c", prompt: "are you there?" })
      expect(next).toMatchObject({ status: "completed", finalText: "still here", threadId: first.threadId })
      expect(yield* h.pid).toBe(pid)
    })
  )

  it.scopedLive("[S37][S35] during a compaction a steer is not steerable and a message sent meanwhile waits for it, reaching the model after the compaction", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ rules: [slowCompaction], replies: [reply.text("first answer"), reply.text("after the compaction")] })
      const h = yield* start(f.settings)
      yield* Effect.addFinalizer(() => h.stop)
      const first = yield* h.harness.runTurn({ sessionId: "c", prompt: "hello there" })

      const compacting = yield* h.work.compact("c").pipe(Effect.fork)
      yield* f.model.waitForRequests(2)
      expect(yield* h.fence.isHeld(first.threadId)).toBe(true)
      // the compaction turn is the session's run as far as steering goes
      yield* h.work.status("c").pipe(
        Effect.repeat({ until: (status) => status.compacting && status.turnId !== undefined, schedule: Schedule.spaced("20 millis") }),
        Effect.timeout("60 seconds")
      )
      const steered = yield* h.work.steer("c", ["x"])
      expect(steered._tag).toBe("NotSteerable")
      expect(steered._tag === "NotSteerable" ? steered.reason : "").toMatch(/compact/i)

      const sent = yield* h.work.submit("c", "prompt sent during compaction")
      expect(sent.disposition).toBe("queue")
      const turn = yield* Effect.fork(sent.reply)
      const result = yield* Fiber.join(compacting)
      expect(result.threadId).toBe(first.threadId)
      const after = yield* Fiber.join(turn)
      expect(after).toMatchObject({ status: "completed", finalText: "after the compaction", threadId: first.threadId })
      expect(yield* h.fence.isHeld(first.threadId)).toBe(false)

      const requests = yield* f.model.requests
      const compactionAt = indexOfRequest(requests, COMPACTION)
      const duringAt = indexOfRequest(requests, "prompt sent during compaction")
      expect(compactionAt).toBe(1)
      expect(duringAt).toBeGreaterThan(compactionAt)
      // the steer never reached the thread
      expect(requests.some((r) => r.body.includes('"text":"x"'))).toBe(false)
      expect(yield* compactionStatuses(h.store, "c")).toEqual(["started", "completed"])
    })
  )

  it.scopedLive("[S37] the app-server SIGKILLed during a compaction: a typed failure, the fence released, no process left, and the next compaction succeeds", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        rules: [{ whenRequestIncludes: COMPACTION, reply: reply.steps({ type: "hang" }), once: true }, slowCompaction],
        replies: [reply.text("first answer"), reply.text("after the crash")]
      })
      const h = yield* start(f.settings)
      const first = yield* h.harness.runTurn({ sessionId: "c", prompt: "hello" })
      const pid = yield* h.pid

      const compacting = yield* h.compaction.compact("c").pipe(Effect.flip, Effect.fork)
      yield* f.model.waitForRequests(2)
      process.kill(pid!, "SIGKILL")
      // a compaction whose app-server is gone hangs otherwise (its model request never answers): the bound only ends
      // such a run, generous for a loaded machine
      const error = yield* Fiber.join(compacting).pipe(Effect.timeout("120 seconds"))
      expect(error).toBeInstanceOf(Compaction.CompactionClientClosed)
      const closed = error as Compaction.CompactionClientClosed
      expect(closed.cause).toBeInstanceOf(AppServerExited)
      expect((closed.cause as AppServerExited).signal).toBe("SIGKILL")
      expect(yield* h.fence.isHeld(first.threadId)).toBe(false)
      expect(yield* compactionStatuses(h.store, "c")).toEqual(["started", "failed"])

      // a new turn works (a fresh app-server resumes the thread) and the killed one's group is gone
      const next = yield* h.harness.runTurn({ sessionId: "c", prompt: "again" })
      expect(next).toMatchObject({ status: "completed", finalText: "after the crash", threadId: first.threadId })
      const fresh = yield* h.pid
      expect(fresh).not.toBe(pid)
      expect(yield* within(() => !groupAlive(pid))).toBe(true)

      const again = yield* h.compaction.compact("c")
      expect(again.threadId).toBe(first.threadId)
      expect(yield* compactionStatuses(h.store, "c")).toEqual(["started", "failed", "started", "completed"])

      yield* h.stop
      expect(groupAlive(fresh)).toBe(false)
      expect(yield* within(() => processesMentioning(f.stateDir).length === 0)).toBe(true)
    })
  )
})
