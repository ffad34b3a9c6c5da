// The load of bench/cluster.ts: turns over N sessions through one serve's control API (ControlClient, the code
// `run --connect` uses, on one WebSocket), `concurrency` at a time, one turn per session at a time (a second StartTurn
// on a running session is `busy`). Each turn is timed from the StartTurn call to its terminal event (turn.completed or
// turn.failed) arriving here, not to the end of the stream.
//
// Jobs go turn-major (every session's turn 1, then every session's turn 2, ...), so with concurrency below the number
// of sessions a session rarely has two turns queued at once; when it does, the second waits for the first (a
// per-session semaphore) before its clock starts.
import { Effect, Stream } from "effect"
import { performance } from "node:perf_hooks"
import type * as ControlClient from "../../src/control/ControlClient.js"

export interface TurnResult {
  readonly session: string
  /** StartTurn to the terminal event */
  readonly ms: number
  /** StartTurn to `session.selected` (the serve, or the session's entity, has the turn) and to `turn.started` */
  readonly selectedMs?: number | undefined
  readonly startedMs?: number | undefined
  readonly ok: boolean
  readonly error?: string
}

export interface PhaseResult {
  readonly turns: ReadonlyArray<TurnResult>
  /** first StartTurn to last terminal event, ms */
  readonly wallMs: number
}

const TURN_TIMEOUT = "90 seconds"

/** one turn: StartTurn to its terminal event; ok when it completed with `reply` */
export const turnOnce = (client: ControlClient.Client, session: string, prompt: string, reply: string): Effect.Effect<TurnResult> =>
  Effect.gen(function* () {
    const t0 = performance.now()
    let end: number | undefined
    let selected: number | undefined
    let started: number | undefined
    let final: string | null | undefined
    let failure: string | undefined
    yield* client.StartTurn({ session, prompt, approvals: "deny" }).pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          if (end !== undefined) return
          if (event.type === "session.selected") selected ??= performance.now() - t0
          if (event.type === "turn.started") started ??= performance.now() - t0
          if (event.type === "turn.completed") {
            end = performance.now()
            final = event.final_text
          } else if (event.type === "turn.failed") {
            end = performance.now()
            failure = `turn.failed ${event.status}: ${event.error}`
          }
        })
      ),
      Effect.timeoutFail({ duration: TURN_TIMEOUT, onTimeout: () => new Error(`no end within ${TURN_TIMEOUT}`) })
    )
    const marks = { selectedMs: selected, startedMs: started }
    if (end === undefined) return { session, ms: performance.now() - t0, ...marks, ok: false, error: "the stream ended without a terminal event" }
    if (failure !== undefined) return { session, ms: end - t0, ...marks, ok: false, error: failure }
    return final === reply
      ? { session, ms: end - t0, ...marks, ok: true }
      : { session, ms: end - t0, ...marks, ok: false, error: `completed with ${JSON.stringify(final)}` }
  }).pipe(
    Effect.catchAllCause((cause) =>
      Effect.succeed({ session, ms: NaN, ok: false, error: String(cause).split("\n")[0]!.slice(0, 200) } satisfies TurnResult)
    )
  )

/** `turns` turns on each session, turn-major, `concurrency` at a time; prompt(s, i) names the message */
export const phase = (
  client: ControlClient.Client,
  sessions: ReadonlyArray<string>,
  turns: number,
  concurrency: number,
  prompt: (session: number, turn: number) => string,
  reply: string
): Effect.Effect<PhaseResult> =>
  Effect.gen(function* () {
    const gates = yield* Effect.forEach(sessions, () => Effect.makeSemaphore(1))
    const jobs: Array<{ readonly s: number; readonly i: number }> = []
    for (let i = 0; i < turns; i++) for (let s = 0; s < sessions.length; s++) jobs.push({ s, i })
    const t0 = performance.now()
    const results = yield* Effect.forEach(
      jobs,
      ({ i, s }) => gates[s]!.withPermits(1)(turnOnce(client, sessions[s]!, prompt(s, i), reply)),
      { concurrency }
    )
    return { turns: results, wallMs: performance.now() - t0 }
  })

/** nearest-rank percentile of the numbers given (NaN for none) */
export const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (s.length === 0) return NaN
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}
