// A wait for state other fibers reach by their ordinary work, in tests that run on the TestClock (where a sleep would
// never end): the check again after each scheduler turn, for at most 60 s of real time. A count of turns was once too
// few on a loaded machine (questions.test.ts), where what a check waits on took longer in real time than that many turns.
import { Effect } from "effect"

export const untilHolds = <E, R>(check: Effect.Effect<boolean, E, R>, what = "condition never held") =>
  Effect.gen(function* () {
    for (const bound = Date.now() + 60_000; Date.now() < bound;) {
      if (yield* check) return
      yield* Effect.yieldNow()
    }
    if (yield* check) return
    return yield* Effect.dieMessage(what)
  })
