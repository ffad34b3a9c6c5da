// What the session work registry (SessionWork.ts) offers and answers: its service, the messages' dispositions and how
// they left the queue, and its typed refusals. Kept apart from the implementation so the front ends read one page.
import { Context, Duration, type Effect, type Exit, Schema } from "effect"
import type { QueueMode } from "../../schemas/config.js"
import type { CompactionError, CompactionResult, CompactOptions } from "../compaction/Compaction.js"
import type { MirrorError } from "../session/TranscriptMirror.js"
import type { NewThreadRefused } from "../session/errors.js"
import type { InvalidSessionId, SessionHoldError, SessionStoreError } from "../session/SessionStore.js"
import type { RequestError } from "../appserver/errors.js"
import type { TurnKind } from "../turn/TurnExtension.js"
import type { EventSink } from "../turn/TurnEvent.js"
import type { HarnessError, NewThreadOutcome, SteerOutcome, TurnRequest, TurnResult } from "./CodexHarness.js"

export type { QueueMode } from "../../schemas/config.js"

/** At most this many messages wait per session (not counting those already carried by the running turn). */
export const defaultMaxQueued = 64
/** Steer mode: a batch is sent once no message arrived for this long (restarted by each message). */
export const defaultQuietWindow: Duration.DurationInput = "500 millis"

/** The session already has `limit` messages waiting: the message was refused, nothing was dropped. */
export class QueueFull extends Schema.TaggedError<QueueFull>()("QueueFull", {
  sessionId: Schema.String,
  limit: Schema.Number
}) {
  override get message() {
    return `session ${this.sessionId} already has ${this.limit} messages waiting; wait for the running turn before sending more`
  }
}

/** The registry is draining (the process shuts down): nothing new starts. */
export class ShuttingDown extends Schema.TaggedError<ShuttingDown>()("ShuttingDown", { sessionId: Schema.String }) {
  override get message() {
    return `shutting down: nothing new runs in session ${this.sessionId} here`
  }
}

/** Something that needs the session to itself (a manual compaction) while the session runs or queues work. */
export class SessionBusy extends Schema.TaggedError<SessionBusy>()("SessionBusy", {
  sessionId: Schema.String,
  what: Schema.String
}) {
  override get message() {
    return `a turn is running in session ${this.sessionId}: ${this.what} once the turn has ended`
  }
}

export interface SubmitOptions {
  /** an explicit model choice, as in `runTurn` (used when this message starts or heads a turn) */
  readonly model?: string | undefined
  /** "plan": the turn this message starts or heads runs in Codex's Plan mode (as in `runTurn`) */
  readonly collaboration?: "default" | "plan" | undefined
  /** the kind of turn this message starts or heads (as in `runTurn`) */
  readonly kind?: TurnKind | undefined
  /** the approval policy of the turn this message starts or heads, for the registry's observer (serve) */
  readonly approvals?: "ask" | "allow" | "deny" | undefined
  /** events of the turn this message starts or heads (a steered message joins a turn that already has its sink) */
  readonly onEvent?: EventSink | undefined
  /** told once the run that carried the message has ended (or the message was withdrawn), however its sender fares:
   * a cluster entity records the outcome for its idempotency key here, even when its caller went away */
  readonly onEnded?: ((exit: Exit.Exit<TurnResult, HarnessError>) => Effect.Effect<void>) | undefined
  /** told on the run's own fiber when the turn that carried the message completed and recorded its end, before the
   * turn's scope closes (and before `onEnded`). The run waits for it: it must bound its own wait */
  readonly onRecorded?: ((result: TurnResult) => Effect.Effect<void>) | undefined
}

/** How a message left the queue; `runId` names the run that carries it (its events carry the same id). */
export type Carried =
  /** sent into the running turn with turn/steer */
  | { readonly _tag: "Steered"; readonly turnId: string; readonly runId: number }
  /** a turn of its own, or one shared with the messages it was batched or collected with (joined by blank lines) */
  | { readonly _tag: "Turn"; readonly prompt: string; readonly runId: number }
  /** taken as the answer to a question the running turn was waiting on (S33) */
  | { readonly _tag: "Answered"; readonly runId: number }

export interface Submitted {
  /** arrival number within the service, increasing */
  readonly seq: number
  /** what happens next: "start" a turn now; "steer" into the running turn after the quiet window; "queue" for after it;
   * "answer": it already answered the question the running turn asked */
  readonly disposition: "start" | "steer" | "queue" | "answer"
  /** the mode the message was taken in (later `setMode` calls do not change it) */
  readonly mode: QueueMode
  /** completes when the message leaves the queue; interrupted if it is cancelled, drained or the service closes first */
  readonly carried: Effect.Effect<Carried>
  /** the result of the turn that carried the message (for a steered one: the turn it was steered into); fails as
   * `runTurn` fails; interrupted when that turn is interrupted, the message is cancelled or the service closes */
  readonly reply: Effect.Effect<TurnResult, HarnessError>
}

export interface QueuedMessage {
  readonly seq: number
  readonly text: string
  readonly mode: QueueMode
}

export interface SessionWorkStatus {
  readonly mode: QueueMode
  /** a turn runs for the session (it may still be opening its thread) */
  readonly running: boolean
  /** a manual compaction runs for the session */
  readonly compacting: boolean
  /** the running turn's id, once the app-server has started it */
  readonly turnId: string | undefined
  /** messages waiting, in arrival order */
  readonly queued: ReadonlyArray<QueuedMessage>
}

/** A session's run in this process, as `serve`'s health and the cluster's status show it. */
export interface RunningWork {
  readonly sessionId: string
  readonly kind: "turn" | "compaction"
  readonly threadId: string | undefined
  readonly turnId: string | undefined
}

/** A local session with a run in flight on a thread (S16). */
export interface RunOwner {
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string
}

export interface SessionWorkService {
  /** takes a message at once; wait on `reply` for the turn that carries it. Fails when the session's queue is full
   * or the registry drains */
  readonly submit: (sessionId: string, text: string, options?: SubmitOptions) => Effect.Effect<Submitted, QueueFull | ShuttingDown>
  /** one turn as the session's run (what `Harness.runTurn` is), after whatever the session runs or queues now;
   * messages submitted meanwhile are steered into it or wait for it as usual, and `interrupt` stops it */
  readonly runTurn: (request: TurnRequest) => Effect.Effect<TurnResult, HarnessError | ShuttingDown>
  /** a manual compaction as the session's run (messages that arrive meanwhile wait for it); refused while the session
   * runs or queues anything */
  readonly compact: (
    sessionId: string,
    options?: CompactOptions
  ) => Effect.Effect<CompactionResult, CompactionError | SessionBusy | ShuttingDown>
  /** adds messages to the session's running turn at once, as one turn/steer (the control API's explicit Steer) */
  readonly steer: (
    sessionId: string,
    texts: ReadonlyArray<string>
  ) => Effect.Effect<SteerOutcome, RequestError | SessionStoreError | InvalidSessionId>
  /** interrupts the session's running turn or compaction (its messages' replies are interrupted); queued messages
   * still run after it. false when nothing ran */
  readonly interrupt: (sessionId: string) => Effect.Effect<boolean>
  /** waits until the session has no run and nothing queued */
  readonly idle: (sessionId: string) => Effect.Effect<void>
  /** the mode for the session's later messages (`/queue steer|followup|collect`) */
  readonly setMode: (sessionId: string, mode: QueueMode) => Effect.Effect<void>
  readonly mode: (sessionId: string) => Effect.Effect<QueueMode>
  readonly status: (sessionId: string) => Effect.Effect<SessionWorkStatus>
  /** withdraws the session's waiting messages (their waiters are interrupted) and yields them; the running turn goes on */
  readonly cancelQueued: (sessionId: string) => Effect.Effect<ReadonlyArray<QueuedMessage>>
  /** every session's run in this process */
  readonly running: Effect.Effect<ReadonlyArray<RunningWork>>
  /** the local sessions with a run in flight on any of these threads (the archive guard's and branching's check) */
  readonly owners: (threadIds: ReadonlySet<string>) => Effect.Effect<ReadonlyArray<RunOwner>>
  /** the harness's `newThread`, refused while the session runs or queues anything */
  readonly newThread: (
    sessionId: string,
    options: { readonly carry: boolean }
  ) => Effect.Effect<NewThreadOutcome, MirrorError | SessionHoldError | NewThreadRefused>
  /** the harness's `release` (a cluster runner lets go of the session); a session with work is left alone */
  readonly release: (sessionId: string) => Effect.Effect<void>
  /** sessions with a run or a queue right now */
  readonly sessions: Effect.Effect<ReadonlyArray<string>>
  readonly draining: Effect.Effect<boolean>
  /** refuses new work; waits up to `grace` for what runs and waits, then withdraws what waits, interrupts what runs
   * (Codex is told, as on Ctrl-C) and waits up to `bound` more */
  readonly drain: (grace: Duration.DurationInput, bound: Duration.DurationInput) => Effect.Effect<{ readonly interrupted: number }>
}

export class SessionWork extends Context.Tag("codex-harness/SessionWork")<SessionWork, SessionWorkService>() {}

export interface SessionWorkOptions {
  /** default mode of every session (config `messages.queue.mode`); default "steer" */
  readonly mode?: QueueMode | undefined
  /** config `messages.queue.quietWindowMs`; default 500 ms */
  readonly quietWindow?: Duration.DurationInput | undefined
  /** per-session bound on waiting messages; default 64 */
  readonly maxQueued?: number | undefined
}

/** The options from the config file's `messages.queue` section (`HarnessConfig.merge(...).messages.queue`). */
export const optionsFromConfig = (queue: { readonly mode: QueueMode; readonly quietWindowMs: number }): SessionWorkOptions => ({
  mode: queue.mode,
  quietWindow: Duration.millis(queue.quietWindowMs)
})
