// The harness as an embedding app calls it: run a turn of a session, interrupt the session's running turn, steer it,
// answer its question, choose a model, move the session to a fresh thread. Each call goes through the session's work
// registry (SessionWork), so a turn started here is the session's run: `interrupt` finds it, messages submitted
// meanwhile are steered into it or wait for it, and two turns of one session never run at once (the second waits).
// Every call runs under the harness's log span and level (HarnessSettings.logLevel).
import { Context, Effect, Layer } from "effect"
import type { RequestError } from "../appserver/errors.js"
import { Settings } from "../config/Settings.js"
import * as HarnessLog from "../platform/HarnessLog.js"
import type { ModelLocked, NewThreadRefused } from "../session/errors.js"
import type { InvalidSessionId, SessionHoldError, SessionStoreError } from "../session/SessionStore.js"
import type { MirrorError } from "../session/TranscriptMirror.js"
import { CodexHarness, type HarnessError, type NewThreadOutcome, type SteerOutcome, type TurnRequest, type TurnResult } from "./CodexHarness.js"
import { SessionWork, type ShuttingDown } from "./SessionWorkApi.js"

/**
 * The harness service: what an app does with sessions. Get it from the Live layer (or the Test layer in tests).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Harness } from "codex-harness"
 *
 * const ask = (sessionId: string, prompt: string) =>
 *   Effect.gen(function* () {
 *     const harness = yield* Harness.Harness
 *     const result = yield* harness.runTurn({ sessionId, prompt })
 *     return result.finalText
 *   })
 *
 * // stops whatever turn the session runs now; its runTurn is interrupted, the session stays usable
 * const stop = (sessionId: string) => Effect.flatMap(Harness.Harness, (harness) => harness.interrupt(sessionId))
 * ```
 */
export interface HarnessService {
  /**
   * Runs one turn of the session (made on its first turn) and waits for its end: the reply is delivered through the
   * app's `Delivery` and recorded in the session's transcript. A turn of the same session that is already running
   * is waited for first. Interrupting the caller interrupts the turn (Codex is told), as `interrupt` does.
   */
  readonly runTurn: (request: TurnRequest) => Effect.Effect<TurnResult, HarnessError | ShuttingDown>
  /**
   * Interrupts the session's running turn (Codex is told with turn/interrupt; the transcript records it): the
   * `runTurn` waiting on it is interrupted. `true` when something ran, `false` when the session was idle.
   */
  readonly interrupt: (sessionId: string) => Effect.Effect<boolean>
  /** Adds messages to the session's running turn (Codex's turn/steer), in order, as one message. */
  readonly steer: (
    sessionId: string,
    texts: ReadonlyArray<string>
  ) => Effect.Effect<SteerOutcome, RequestError | SessionStoreError | InvalidSessionId>
  /**
   * A plain-text answer to the question the session's running turn waits on: `true` when a question took it, `false`
   * when none was asked (send it as a turn instead, so it is never lost).
   */
  readonly answer: (sessionId: string, text: string) => Effect.Effect<boolean>
  /** Records a model for the session's later turns without running one; refused for a locked (supervised) session. */
  readonly chooseModel: (sessionId: string, model: string) => Effect.Effect<void, MirrorError | SessionHoldError | ModelLocked>
  /**
   * The session continues on a fresh Codex thread from its next turn; with `carry` the conversation so far is projected
   * into it (the ContextEngine port decides what). Refused while the session runs a turn.
   */
  readonly newThread: (
    sessionId: string,
    options: { readonly carry: boolean }
  ) => Effect.Effect<NewThreadOutcome, MirrorError | SessionHoldError | NewThreadRefused>
}

/** The harness service's tag: `yield* Harness` in an Effect run with the Live or Test layer. */
export class Harness extends Context.Tag("codex-harness/Harness")<Harness, HarnessService>() {}

/** The front door over the session work registry and the turn engine. */
export const layer: Layer.Layer<Harness, never, SessionWork | CodexHarness | Settings> = Layer.effect(
  Harness,
  Effect.gen(function* () {
    const work = yield* SessionWork
    const engine = yield* CodexHarness
    const within = HarnessLog.within((yield* Settings).logLevel)
    return {
      runTurn: (request) => within(work.runTurn(request)),
      interrupt: (sessionId) => within(work.interrupt(sessionId)),
      steer: (sessionId, texts) => within(work.steer(sessionId, texts)),
      answer: (sessionId, text) => within(engine.answer(sessionId, text)),
      chooseModel: (sessionId, model) => within(engine.chooseModel(sessionId, model)),
      newThread: (sessionId, options) => within(work.newThread(sessionId, options))
    } satisfies HarnessService
  })
)
