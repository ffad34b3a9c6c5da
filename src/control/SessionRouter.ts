// Where a session's work runs. By default here, in this process's harness (serve alone). In a cluster
// (`serve --cluster`), a session lives on whichever runner owns its shard: the cluster provides a router that sends
// its turns, steers, interrupts, answers and compactions there (src/cluster/ClusterRouter.ts), and the control API
// keeps its shape. Reads (sessions, threads) stay local: the session store is shared (PostgreSQL); what waits for an
// answer and a session's live events come from wherever they are (`pending`, `watch`).
import { Context, type Effect, type Stream } from "effect"
import type { ControlEvent, ControlFailure, Pending } from "../../schemas/control.js"

export interface RoutedTurn {
  readonly sessionId: string
  /** the session id was made up for this turn */
  readonly created: boolean
  readonly prompt: string
  readonly model?: string | undefined
  readonly turn_kind?: "user" | "heartbeat" | "lightweight" | "ringZero" | "messageOnly" | "toolDisabled" | undefined
  readonly approvals?: "ask" | "allow" | "deny" | undefined
  /** the client's idempotency key; default a fresh one */
  readonly messageId?: string | undefined
}

export interface SessionRouterService {
  /** the turn's events, `session.selected` first, through its terminal event and replies */
  readonly startTurn: (turn: RoutedTurn) => Stream.Stream<ControlEvent, ControlFailure>
  readonly steer: (
    sessionId: string,
    texts: ReadonlyArray<string>
  ) => Effect.Effect<{ readonly outcome: "steered" | "not_steerable" | "no_active_turn"; readonly turn_id?: string | undefined; readonly reason?: string | undefined }, ControlFailure>
  readonly interrupt: (sessionId: string) => Effect.Effect<{ readonly interrupted: boolean }, ControlFailure>
  /** an approval or question waiting on another runner, by id (ControlFailure not_found when nobody knows it) */
  readonly answer: (
    id: string,
    input: {
      readonly decision?: "allow_once" | "allow_always" | "deny" | undefined
      readonly answers?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
      readonly decline?: boolean | undefined
    },
    by: string
  ) => Effect.Effect<void, ControlFailure>
  readonly compact: (
    sessionId: string
  ) => Effect.Effect<{ readonly session_id: string; readonly thread_id: string; readonly turn_id: string; readonly duration_ms: number }, ControlFailure>
  /** every approval and question waiting for an answer, wherever its turn runs (else this process's) */
  readonly pending?: Effect.Effect<ReadonlyArray<Pending>, ControlFailure> | undefined
  /** one session's live events, wherever it runs (else this process's hub): what waits for an answer first */
  readonly watch?: ((sessionId: string) => Stream.Stream<ControlEvent, ControlFailure>) | undefined
}

/** Optional: none means every session runs in this process. */
export class SessionRouter extends Context.Reference<SessionRouter>()("codex-harness/control/SessionRouter", {
  defaultValue: (): SessionRouterService | undefined => undefined
}) {}
