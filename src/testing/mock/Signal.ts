// A level-triggered "something changed" for the mock's waiters (a message arrived, a turn started, a peer exited):
// waiters re-check their own condition after every fire. It carries no value, and it must never let a waiter sleep
// through a change that happened while it was checking.
import { Deferred, Effect, Ref } from "effect"

export interface Signal {
  /** wakes every waiter to re-check; fire after making the change, never before */
  readonly fire: Effect.Effect<void>
  /** re-evaluates `probe` after every fire until it yields a value */
  readonly waitFor: <A>(probe: () => A | undefined) => Effect.Effect<A>
}

export const makeSignal: Effect.Effect<Signal> = Effect.gen(function* () {
  const pending = yield* Ref.make(yield* Deferred.make<void>())
  const fire = Effect.flatMap(Deferred.make<void>(), (next) =>
    Effect.flatMap(Ref.getAndSet(pending, next), (fired) => Deferred.succeed(fired, undefined))
  )
  const waitFor = <A>(probe: () => A | undefined): Effect.Effect<A> => {
    // The deferred is taken before the probe runs, so a change the probe missed is followed by a fire that completes
    // this very deferred (or an earlier fire already did): no yield point in between can lose it.
    const loop: Effect.Effect<A> = Effect.flatMap(Ref.get(pending), (wake) => {
      const found = probe()
      return found !== undefined ? Effect.succeed(found) : Effect.zipRight(Deferred.await(wake), loop)
    })
    return loop
  }
  return { fire, waitFor }
})
