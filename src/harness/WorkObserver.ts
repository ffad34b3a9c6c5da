// Who watches every run of the session work registry, whoever submitted it: `serve` publishes each run's events to
// its clients (a message steered or queued by a second client is followed through the run that carries it), and sets
// the run's approval policy while it runs. An embedder without a watcher pays nothing: the default observes nothing,
// and the registry does not even wrap a run's events then.
import { Context, Effect, type Exit } from "effect"
import type { TurnKind } from "../turn/TurnExtension.js"
import type { TurnEvent } from "../turn/TurnEvent.js"

/** What a run was started with: its head message's options. */
export interface RunStart {
  readonly sessionId: string
  /** increasing within the registry; every event of the run carries it */
  readonly runId: number
  readonly kind: "turn" | "compaction"
  readonly turnKind?: TurnKind | undefined
  /** the approval policy the head message asked for (serve's Interactions apply it while the run lasts) */
  readonly approvals?: "ask" | "allow" | "deny" | undefined
}

export interface WorkObserverService {
  /** before the run's first event */
  readonly runStarted: (run: RunStart) => Effect.Effect<void>
  readonly event: (sessionId: string, runId: number, event: TurnEvent) => Effect.Effect<void>
  /** a queued message's turn run that completed has delivered its reply and recorded its end, before its scope closes
   * (not told for a run that failed or was interrupted, nor for `runTurn`'s and compactions': `runEnded` is their end) */
  readonly runRecorded: (run: RunStart) => Effect.Effect<void>
  /** after the run's last event and its delivery, however it ended */
  readonly runEnded: (run: RunStart, exit: Exit.Exit<unknown, unknown>) => Effect.Effect<void>
}

export const none: WorkObserverService = {
  runStarted: () => Effect.void,
  event: () => Effect.void,
  runRecorded: () => Effect.void,
  runEnded: () => Effect.void
}

/** Optional: by default nobody watches. */
export class WorkObserver extends Context.Reference<WorkObserver>()("codex-harness/WorkObserver", {
  defaultValue: (): WorkObserverService => none
}) {}
