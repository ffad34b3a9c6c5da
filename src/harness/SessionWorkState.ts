// The registry's own bookkeeping (SessionWork.ts): a message as it waits, a run as it carries messages, a session's
// state. Internal to the registry; kept apart so the registry's file holds its behaviour.
import type { Deferred, Effect, Fiber } from "effect"
import type { QueueMode } from "../../schemas/config.js"
import type { LiveTurn } from "../turn/TurnEvent.js"
import type { HarnessError, TurnResult } from "./CodexHarness.js"
import type { Carried, SubmitOptions } from "./SessionWorkApi.js"
import type { RunStart } from "./WorkObserver.js"

export interface Message {
  readonly seq: number
  readonly text: string
  readonly mode: QueueMode
  readonly options: SubmitOptions
  readonly reply: Deferred.Deferred<TurnResult, HarnessError>
  readonly carried: Deferred.Deferred<Carried>
}

export interface Run {
  readonly start: RunStart
  /** every message this run carries: the ones it started with and the ones steered into it (none for a compaction) */
  readonly messages: Array<Message>
  /** done when the app-server started the turn, or when the run ended without one */
  readonly started: Deferred.Deferred<void>
  /** where to steer or stop it, once the app-server started it */
  live: LiveTurn | undefined
  /** false for a compaction, and once this run's turn refused steering: its later steer messages wait for the next run */
  steerable: boolean
  /** set as soon as the run is forked */
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  /** the run's fiber has ended: its senders are being told, and the state goes once nothing waits */
  over: boolean
}

export interface SessionState {
  readonly sessionId: string
  /** waiting messages, in arrival (seq) order */
  pending: Array<Message>
  run: Run | undefined
  /** serializes steer flushes and the step from one run to the next */
  readonly lock: Effect.Semaphore
  /** done when the state is removed (the session went idle with nothing queued) */
  readonly idle: Deferred.Deferred<void>
}
