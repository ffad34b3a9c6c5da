// When a followed turn has been quiet for long enough that the runner should ask the app-server how it stands. The turn
// waits in numbered waits: one begins when the runner next reads after something of the turn was heard (or a silence
// was checked), and ends either by being heard (stale from then on) or by expiring after `stallCheckMs`, or at the
// deadline. One watchdog fiber for the whole turn announces an expired wait by its number, so a wait costs no timer
// and no fiber of its own; the runner ignores an announcement for a wait that has already ended.
import { Clock, Effect } from "effect"

export interface SilenceClock {
  /** the runner is about to wait: a new wait begins unless the current one is still open */
  readonly begin: (now: number) => void
  /** something of the turn was heard: true when that ended the open wait (so it counts as heard now) */
  readonly heard: () => boolean
  /** wait `seq` was announced as expired: true when it is the open wait (it ends here); false for a stale one */
  readonly expire: (seq: number) => boolean
  /** for the watchdog: the open wait's number and when it expires */
  readonly current: () => { readonly seq: number; readonly until: number }
  readonly stallCheckMs: number
  readonly endsAt: number
}

// hand-written state: the runner and its watchdog share these three numbers on every message; a Ref would add an
// Effect step per message on the hot path for nothing (both run on the same thread, never concurrently)
export const make = (startedAt: number, stallCheckMs: number, deadlineMs: number): SilenceClock => {
  const endsAt = startedAt + deadlineMs
  const wait = { seq: 0, until: Math.min(startedAt + stallCheckMs, endsAt), open: true }
  return {
    begin: (now) => {
      if (wait.open) return
      wait.seq++
      wait.until = Math.min(now + stallCheckMs, endsAt)
      wait.open = true
    },
    heard: () => {
      if (!wait.open) return false
      wait.open = false
      wait.seq++ // an announcement of the wait that just ended is stale
      return true
    },
    expire: (seq) => {
      if (seq !== wait.seq || !wait.open) return false
      wait.open = false
      return true
    },
    current: () => ({ seq: wait.seq, until: wait.until }),
    stallCheckMs,
    endsAt
  }
}

/** The watchdog: announces each wait that expires, once; runs until interrupted (with the turn's scope). */
export const watch = (clock: SilenceClock, announce: (seq: number) => Effect.Effect<unknown>): Effect.Effect<never> =>
  Effect.gen(function* () {
    let announced = -1
    while (true) {
      const now = yield* Clock.currentTimeMillis
      const wait = clock.current()
      if (wait.seq !== announced && now >= wait.until) {
        announced = wait.seq
        yield* announce(wait.seq)
        continue
      }
      // the next wait ends no sooner than stallCheckMs (or the deadline) from now
      const next = wait.seq !== announced
        ? wait.until
        : now >= clock.endsAt
        ? now + clock.stallCheckMs
        : Math.min(now + clock.stallCheckMs, clock.endsAt)
      yield* Effect.sleep(Math.max(1, next - now))
    }
  })
