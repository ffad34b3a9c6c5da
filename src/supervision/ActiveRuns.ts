// Who is known to be running on a thread right now (S16): the local sessions whose turn (or manual compaction) is in
// flight on it, as this process's live-turn registry knows them. It cannot see other processes; that gap is what the
// operator's no-other-runner confirmation covers.
import { Context, Effect, Layer } from "effect"
import { LiveTurns } from "../turn/LiveTurns.js"

export interface RunOwner {
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string
}

export interface ActiveRunsService {
  /** the local sessions with a run in flight on any of these threads */
  readonly owners: (threadIds: ReadonlySet<string>) => Effect.Effect<ReadonlyArray<RunOwner>>
}

export class ActiveRuns extends Context.Tag("codex-harness/supervision/ActiveRuns")<ActiveRuns, ActiveRunsService>() {}

export const make = Effect.gen(function* () {
  const live = yield* LiveTurns
  return {
    owners: (threadIds) =>
      Effect.map(live.all, (running) =>
        running.flatMap(([sessionId, turn]) =>
          threadIds.has(turn.threadId) ? [{ sessionId, threadId: turn.threadId, turnId: turn.turnId }] : []
        ))
  } satisfies ActiveRunsService
})

export const layer: Layer.Layer<ActiveRuns, never, LiveTurns> = Layer.effect(ActiveRuns, make)
