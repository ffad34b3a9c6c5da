// The per-thread compaction fence: a manual compaction holds it for its whole life (a Scoped resource, released by its
// finalizer whatever happens); turns on that thread wait at the fence before they start. It holds no state for threads
// nobody is compacting.
import { Context, Deferred, Effect, Layer, type Scope } from "effect"

export interface CompactionFenceService {
  /** holds the fence for `threadId` until the Scope closes; waits for an earlier holder first */
  readonly hold: (threadId: string) => Effect.Effect<void, never, Scope.Scope>
  /** waits while the fence for `threadId` is held */
  readonly pass: (threadId: string) => Effect.Effect<void>
  readonly isHeld: (threadId: string) => Effect.Effect<boolean>
}

export class CompactionFence extends Context.Tag("codex-harness/CompactionFence")<CompactionFence, CompactionFenceService>() {}

export const make = (): CompactionFenceService => {
  // the current holder's release signal, per thread; absent = open
  const held = new Map<string, Deferred.Deferred<void>>()

  const pass = (threadId: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      const current = held.get(threadId)
      return current === undefined ? Effect.void : Effect.zipRight(Deferred.await(current), pass(threadId))
    })

  // waits (interruptibly) for the current holder, then takes the fence in the same synchronous step as the check
  const take = (threadId: string): Effect.Effect<Deferred.Deferred<void>> =>
    Effect.flatMap(Deferred.make<void>(), (released) =>
      Effect.suspend(() => {
        const current = held.get(threadId)
        if (current !== undefined) return Effect.zipRight(Effect.interruptible(Deferred.await(current)), take(threadId))
        held.set(threadId, released)
        return Effect.succeed(released)
      }))

  const hold = (threadId: string) =>
    Effect.acquireRelease(take(threadId), (released) =>
      Effect.suspend(() => {
        if (held.get(threadId) === released) held.delete(threadId)
        return Deferred.succeed(released, undefined)
      })
    ).pipe(Effect.asVoid)

  return { hold, pass, isHeld: (threadId) => Effect.sync(() => held.has(threadId)) }
}

export const layer: Layer.Layer<CompactionFence> = Layer.sync(CompactionFence, make)
