// How a runner keeps its shards through a database hiccup, and gives them up only when it truly cannot renew them.
//
// @effect/cluster 0.60.2 refreshes a runner's shard locks every min(shardLockRefreshInterval, shardLockExpiration / 3)
// (3 s here) and treats one refresh that fails or takes longer than that as the end: it marks its lock storage unhealthy,
// drops every shard at once and stops their entities ("Shard lock storage is unhealthy"). A PostgreSQL restart (every
// connection refused for a moment), a stall of a few seconds, or a runner whose event loop was held up by load all did
// that, and every session of the runner moved or stalled. The locks themselves outlive such a hiccup (an advisory lock
// lasts as long as its connection; after a restart the next refresh takes them again, and no other runner tries as long
// as this one's heartbeat is fresh), so the harness wraps the cluster's RunnerStorage: a refresh PostgreSQL has not
// answered within `deadline` (below the cluster's bound) or that failed, while the last renewal is less than `tolerance`
// ago, is answered "still held" and the real one goes on in the background. Only when no refresh has succeeded for
// `tolerance` does the runner fence itself: from then on its refreshes fail (the cluster gives the shards up and stops
// their entities), and `fenced` tells the runner to stop its running turns, before the database drops this runner's
// connections (ClusterDatabase: idle_session_timeout and TCP keepalive, both at the lock expiry) and with them its locks,
// which is the earliest another runner can take its sessions. The first refresh that succeeds again ends the fence.
import * as ClusterError from "@effect/cluster/ClusterError"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import type { ShardId } from "@effect/cluster/ShardId"
import { Cause, Clock, Context, Duration, Effect, Exit, Fiber, Layer, Option, Schedule, type Scope, SubscriptionRef } from "effect"

export interface LockRenewalOptions {
  /** how long after the last renewal the runner keeps its shards and its turns (the fence); default 12 s (ClusterDatabase.fenceAfter) */
  readonly tolerance?: Duration.DurationInput | undefined
  /** how long one refresh is waited for before it counts as unanswered for now; default 2.5 s (the cluster's bound is 3 s) */
  readonly deadline?: Duration.DurationInput | undefined
  /** how often the fence is checked; default 250 ms */
  readonly every?: Duration.DurationInput | undefined
  /** this runner's address, for the log lines */
  readonly runner: string
}

export interface LockRenewalService {
  /** true while the runner is fenced: it could not renew its locks for `tolerance`, so it must run nothing */
  readonly fenced: SubscriptionRef.SubscriptionRef<boolean>
  /** milliseconds since the last renewal PostgreSQL answered */
  readonly sinceRenewal: Effect.Effect<number>
  readonly tolerance: Duration.Duration
}

export class LockRenewal extends Context.Tag("codex-harness/cluster/LockRenewal")<LockRenewal, LockRenewalService>() {}

type Storage = RunnerStorage.RunnerStorage["Type"]

/** one line for a refresh's failure: the cluster wraps the database's error in a PersistenceError */
const describe = (error: unknown): string => {
  const inner = error instanceof ClusterError.PersistenceError ? error.cause : error
  const text = inner instanceof Error ? `${inner.message}${inner.cause instanceof Error ? `: ${inner.cause.message}` : ""}` : String(inner)
  return text.split("\n")[0]!.slice(0, 200)
}

/** the wrapped storage and the fence, until the scope closes */
export const make = (underlying: Storage, options: LockRenewalOptions): Effect.Effect<readonly [Storage, LockRenewalService], never, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const tolerance = Duration.decode(options.tolerance ?? "12 seconds")
    const deadline = Duration.decode(options.deadline ?? "2500 millis")
    const fenced = yield* SubscriptionRef.make(false)
    let lastRenewed = yield* Clock.currentTimeMillis
    // the refresh PostgreSQL has not answered yet, and the shards it was asked for: never two at once
    let inflight: { readonly fiber: Fiber.RuntimeFiber<Array<ShardId>, ClusterError.PersistenceError>; readonly asked: Set<string> } | undefined
    // one warning per hiccup
    let riding = false

    const sinceRenewal = Effect.map(Clock.currentTimeMillis, (now) => now - lastRenewed)

    const renewed = Effect.gen(function* () {
      lastRenewed = yield* Clock.currentTimeMillis
      if (riding) {
        riding = false
        yield* Effect.logInfo(`cluster runner ${options.runner}: PostgreSQL renews this runner's shard locks again`)
      }
      if (yield* SubscriptionRef.get(fenced)) {
        yield* SubscriptionRef.set(fenced, false)
        yield* Effect.logWarning(`cluster runner ${options.runner}: PostgreSQL answers again; the fence is lifted and the runner takes shards again`)
      }
    })

    const fence = (why: string) =>
      Effect.gen(function* () {
        if (yield* SubscriptionRef.get(fenced)) return
        yield* SubscriptionRef.set(fenced, true)
        yield* Effect.logError(`cluster runner ${options.runner} fenced: ${why}; its running turns are stopped and its shards ` +
          "given up, so another runner can take its sessions once PostgreSQL drops this runner's connections")
      })

    const overdue = (ms: number) =>
      `PostgreSQL has not renewed this runner's shard locks for ${(ms / 1000).toFixed(1)} s (the bound is ${Duration.toSeconds(tolerance)} s)`

    // the fence does not wait for the cluster's next refresh: checked every `every`
    yield* Effect.gen(function* () {
      const ms = yield* sinceRenewal
      if (ms > Duration.toMillis(tolerance)) yield* fence(overdue(ms))
    }).pipe(Effect.repeat(Schedule.spaced(options.every ?? "250 millis")), Effect.forkIn(scope))

    const refresh: Storage["refresh"] = (address, shardIds) =>
      Effect.gen(function* () {
        const requested = Array.from(shardIds)
        let current = inflight
        if (current === undefined) {
          const fiber = yield* underlying.refresh(address, requested).pipe(
            Effect.tap(() => renewed),
            Effect.tapErrorCause((cause) => Effect.logDebug(`shard lock refresh failed: ${describe(Cause.squash(cause))}`)),
            Effect.ensuring(Effect.sync(() => void (inflight = undefined))),
            Effect.forkIn(scope)
          )
          current = inflight = { fiber, asked: new Set(requested.map(String)) }
        }
        const asked = current.asked
        const answer = yield* Fiber.await(current.fiber).pipe(Effect.timeoutOption(deadline))
        if (Option.isSome(answer) && Exit.isSuccess(answer.value)) {
          // an earlier call's refresh answers for the shards it was asked about; ones taken since are this runner's
          const held = new Set(answer.value.value.map(String))
          const kept = requested.filter((shard) => held.has(String(shard)) || !asked.has(String(shard)))
          // and the shards it holds that this call does not ask about go back in the answer: the cluster let them go
          // while that refresh waited, and the refresh took them again. Told, the cluster releases them (it releases
          // any shard a refresh returns that is not assigned to it); left out, their locks stayed with this runner for
          // good and no runner served their sessions (the chaos test: one session unanswered for minutes, its shard
          // assigned to a runner that could not take it)
          const wanted = new Set(requested.map(String))
          return [...kept, ...answer.value.value.filter((shard) => !wanted.has(String(shard)))]
        }
        const ms = yield* sinceRenewal
        const isFenced = yield* SubscriptionRef.get(fenced)
        if (!isFenced && ms <= Duration.toMillis(tolerance)) {
          if (!riding) {
            riding = true
            const what = Option.isNone(answer)
              ? `no answer within ${(Duration.toMillis(deadline) / 1000).toFixed(1)} s`
              : `an error (${describe(Exit.isFailure(answer.value) ? Cause.squash(answer.value.cause) : undefined)})`
            yield* Effect.logWarning(`cluster runner ${options.runner}: a shard lock refresh got ${what}; the shards are kept ` +
              `while the last renewal is under ${Duration.toSeconds(tolerance)} s old (${(ms / 1000).toFixed(1)} s now)`)
          }
          return requested
        }
        if (!isFenced) yield* fence(overdue(ms))
        return yield* new ClusterError.PersistenceError({
          cause: Option.isSome(answer) && Exit.isFailure(answer.value) ? answer.value.cause : new Error(overdue(ms))
        })
      })

    const storage: Storage = { ...underlying, refresh }
    return [storage, { fenced, sinceRenewal, tolerance }] as const
  })

/** RunnerStorage (the wrapped one) and LockRenewal, over the RunnerStorage `underlying` provides */
export const layer = <E, R>(
  underlying: Layer.Layer<RunnerStorage.RunnerStorage, E, R>,
  options: LockRenewalOptions
): Layer.Layer<RunnerStorage.RunnerStorage | LockRenewal, E, R> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const [storage, renewal] = yield* make(yield* RunnerStorage.RunnerStorage, options)
      return Context.make(RunnerStorage.RunnerStorage, storage).pipe(Context.add(LockRenewal, renewal))
    })
  ).pipe(Layer.provide(underlying))
