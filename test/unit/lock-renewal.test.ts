// LockRenewal on the clock alone (TestClock): a shard lock refresh the database does not answer in time, or that fails,
// keeps the runner's shards while its last renewal is within the tolerance; past it the runner fences itself (refreshes
// fail, `fenced` says so) until a refresh succeeds again; a shard a late refresh holds that the cluster no longer asks
// about is in the answer, for the cluster to release. The storage underneath is a stand-in whose refresh the test
// makes answer, fail or hang.
import * as ClusterError from "@effect/cluster/ClusterError"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as ShardId from "@effect/cluster/ShardId"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, SubscriptionRef, TestClock } from "effect"
import * as LockRenewal from "../../src/cluster/LockRenewal.js"

type Mode = { readonly _tag: "answer"; readonly held?: ReadonlyArray<string> } | { readonly _tag: "fail" } | { readonly _tag: "hang"; readonly until: Deferred.Deferred<void> }

const shards = [ShardId.make("default", 1), ShardId.make("default", 2), ShardId.make("default", 3)]
const address = RunnerAddress.make("127.0.0.1", 1)

const setup = Effect.gen(function* () {
  let mode: Mode = { _tag: "answer" }
  let calls = 0
  const memory = yield* RunnerStorage.makeMemory
  const underlying: RunnerStorage.RunnerStorage["Type"] = {
    ...memory,
    refresh: (_address, ids) =>
      Effect.suspend(() => {
        calls++
        const asked = Array.from(ids)
        const m = mode
        if (m._tag === "fail") return Effect.fail(new ClusterError.PersistenceError({ cause: new Error("connection terminated") }))
        if (m._tag === "hang") return Effect.as(Deferred.await(m.until), asked)
        return Effect.succeed(m.held === undefined ? asked : asked.filter((s) => m.held!.includes(s.toString())))
      })
  }
  const [storage, renewal] = yield* LockRenewal.make(underlying, { runner: "127.0.0.1:1", tolerance: "9 seconds", deadline: "2500 millis", every: "250 millis" })
  return {
    storage,
    renewal,
    set: (m: Mode) => void (mode = m),
    calls: () => calls
  }
})

/** a refresh, run on its own fiber, and the clock moved on until it answers */
const refreshAfter = (storage: RunnerStorage.RunnerStorage["Type"], ids: ReadonlyArray<ShardId.ShardId>, advance: Duration.DurationInput) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(storage.refresh(address, ids))
    yield* TestClock.adjust(advance)
    return yield* Fiber.await(fiber)
  })

describe("LockRenewal", () => {
  it.scoped("a refresh the database answers returns what it holds", () =>
    Effect.gen(function* () {
      const t = yield* setup
      t.set({ _tag: "answer", held: ["default:1", "default:3"] })
      const exit = yield* refreshAfter(t.storage, shards, "0 millis")
      expect(Exit.map(exit, (ids) => ids.map(String))).toEqual(Exit.succeed(["default:1", "default:3"]))
      expect(yield* SubscriptionRef.get(t.renewal.fenced)).toBe(false)
    }))

  it.scoped("a stall keeps the shards for the tolerance, then fences; an answer lifts the fence", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const until = yield* Deferred.make<void>()
      t.set({ _tag: "hang", until })
      // 2.5 s without an answer: the shards are kept, and the refresh goes on in the background
      const first = yield* refreshAfter(t.storage, shards, "2500 millis")
      expect(Exit.map(first, (ids) => ids.length)).toEqual(Exit.succeed(3))
      expect(yield* SubscriptionRef.get(t.renewal.fenced)).toBe(false)
      // the next refresh waits for the same one (never two at once) and still keeps them at 6 s
      const second = yield* refreshAfter(t.storage, shards, "3500 millis")
      expect(Exit.map(second, (ids) => ids.length)).toEqual(Exit.succeed(3))
      expect(t.calls()).toBe(1)
      expect(yield* SubscriptionRef.get(t.renewal.fenced)).toBe(false)
      // past 9 s since the last renewal the watchdog fences, without waiting for a refresh
      yield* TestClock.adjust("3250 millis")
      expect(yield* SubscriptionRef.get(t.renewal.fenced)).toBe(true)
      const fencedRefresh = yield* refreshAfter(t.storage, shards, "2500 millis")
      expect(Exit.isFailure(fencedRefresh)).toBe(true)
      // the database answers: the refresh in flight succeeds, the fence is lifted, and refreshes answer again
      yield* Deferred.succeed(until, undefined)
      yield* TestClock.adjust("1 millis")
      expect(yield* SubscriptionRef.get(t.renewal.fenced)).toBe(false)
      t.set({ _tag: "answer" })
      const after = yield* refreshAfter(t.storage, shards, "0 millis")
      expect(Exit.map(after, (ids) => ids.length)).toEqual(Exit.succeed(3))
    }))

  it.scoped("failed refreshes (a restart) keep the shards within the tolerance only", () =>
    Effect.gen(function* () {
      const t = yield* setup
      t.set({ _tag: "fail" })
      for (let i = 0; i < 3; i++) {
        const kept = yield* refreshAfter(t.storage, shards, "2900 millis")
        expect(Exit.map(kept, (ids) => ids.length), `refresh ${i}`).toEqual(Exit.succeed(3))
      }
      // 8.7 s; the watchdog looks every 250 ms, so by 9.3 s it has seen more than 9 s
      yield* TestClock.adjust("600 millis")
      expect(yield* SubscriptionRef.get(t.renewal.fenced)).toBe(true)
      const failed = yield* refreshAfter(t.storage, shards, "0 millis")
      expect(Exit.isFailure(failed)).toBe(true)
    }))

  it.scoped("an earlier refresh answers for the shards it was asked about; shards taken since count as held", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const until = yield* Deferred.make<void>()
      t.set({ _tag: "hang", until })
      yield* refreshAfter(t.storage, shards.slice(0, 2), "2500 millis")
      const next = yield* Effect.fork(t.storage.refresh(address, shards))
      yield* Deferred.succeed(until, undefined)
      yield* TestClock.adjust("1 millis")
      // the earlier refresh (1 and 2) answered both held; 3 was not asked, so it is still this runner's
      expect((yield* Fiber.join(next)).map(String)).toEqual(["default:1", "default:2", "default:3"])
    }))

  it.scoped("a shard the cluster let go while a refresh waited, and that refresh took again, is in the answer (so the cluster releases it)", () =>
    Effect.gen(function* () {
      const t = yield* setup
      const until = yield* Deferred.make<void>()
      t.set({ _tag: "hang", until })
      // asked for 1, 2 and 3; unanswered past the deadline: kept for now
      yield* refreshAfter(t.storage, shards, "2500 millis")
      // meanwhile the cluster released 3 (its shard moved): the next refresh asks for 1 and 2, and waits for the same one
      const next = yield* Effect.fork(t.storage.refresh(address, shards.slice(0, 2)))
      yield* Deferred.succeed(until, undefined)
      yield* TestClock.adjust("1 millis")
      // that refresh holds 3 again: said, or its lock stayed with this runner with nobody to release it
      expect((yield* Fiber.join(next)).map(String)).toEqual(["default:1", "default:2", "default:3"])
    }))
})
