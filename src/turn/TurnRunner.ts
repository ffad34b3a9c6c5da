// One turn on one thread: open the thread (start, or resume a bound one), subscribe to its notifications before
// `turn/start`, follow the turn to `turn/completed`, and collect the final assistant text. It owns no state between
// turns; bindings and the transcript belong to the session room.
import { Chunk, Duration, Effect, Fiber, Mailbox, Option, Ref, type Scope, Stream } from "effect"
import type {
  AskForApproval,
  CollaborationMode,
  DynamicToolSpec,
  SandboxMode,
  SandboxPolicy,
  TurnEnvironment,
  ServerNotification,
  UserInput
} from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import { type RequestError, RpcError } from "../appserver/errors.js"
import { turnIdOf } from "../appserver/Notifications.js"
import { type EventSink, type OpenedThread, TurnEvent, type TurnOutcome } from "./TurnEvent.js"
import * as LoadedThreads from "./LoadedThreads.js"
import type { LoadedThreadsService } from "./LoadedThreads.js"
import * as SilenceClock from "./SilenceClock.js"
import * as TurnProgress from "./TurnProgress.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export { type EventSink, type OpenedThread, TurnEvent, type TurnOutcome } from "./TurnEvent.js"

export interface ThreadSettings {
  readonly cwd: string
  readonly approvalPolicy: AskForApproval
  readonly sandbox: SandboxMode
  /** the model to ask for; ignored (never sent) on a locked binding */
  readonly model?: string | undefined
  readonly approvalsReviewer?: "user" | "auto_review" | undefined
  readonly serviceTier?: string | undefined
  /**
   * Codex retries an unreachable model provider forever ("Reconnecting... waiting for network"). After this many
   * consecutive connection failures with no progress the turn is interrupted and reported failed. Default 1: Codex's
   * second retry notice comes about 5 s after the first.
   */
  readonly maxReconnects?: number | undefined
  /**
   * How long a turn may stay silent before the harness reads the thread's status. An idle thread with no
   * turn/completed is a stalled turn: it is settled (failed, keeping any reply already complete) instead of waited on
   * forever; an active one is waited on and checked again. Default 30 s.
   */
  readonly stallCheckAfter?: Duration.DurationInput | undefined
  /** the provider sent nothing for this long while the thread waits on it (no approval, no tool running): the turn
   * is interrupted and reported failed. Default 5 minutes. */
  readonly providerSilence?: Duration.DurationInput | undefined
  /** the whole turn's deadline: past it the turn is interrupted and reported failed, keeping what it completed */
  readonly deadline?: Duration.DurationInput | undefined
}

export const defaultStallCheckAfter = Duration.seconds(30)
/** An active turn whose provider has sent nothing for this long, while nothing else runs, is ended (below Codex's own 10 minutes). */
export const defaultProviderSilence = Duration.minutes(5)

/** Thread-level extras sent when a thread is started or resumed. */
export interface ThreadExtras {
  /** the compatibility route's system prompt in place of Codex's base instructions (S6) */
  readonly baseInstructions?: string | undefined
  readonly developerInstructions?: string | undefined
  readonly config?: Readonly<Record<string, unknown>> | undefined
  /** only on thread/start: Codex keeps a thread's dynamic tools */
  readonly dynamicTools?: ReadonlyArray<DynamicToolSpec> | undefined
  /** only on thread/start: where the thread's commands run (S26: a paired node's environment); Codex keeps them */
  readonly environments?: ReadonlyArray<TurnEnvironment> | undefined
}

export interface BoundThread {
  readonly threadId: string
  /** supervised binding: never send model or provider, keep what Codex restores (S13) */
  readonly locked: boolean
  /** false: a bound thread that is gone fails the turn instead of being replaced (a supervised branch, S15) */
  readonly replaceIfGone?: boolean | undefined
}

/** Turn-level extras for turn/start. */
export interface TurnExtras {
  readonly locked?: boolean | undefined
  readonly collaborationMode?: CollaborationMode | undefined
}

export const defaultMaxReconnects = 1

/** The app-server's words for a bound thread that no longer exists. */
export const isThreadGone = (error: RequestError): error is RpcError =>
  error instanceof RpcError && /thread not found|no rollout|not loaded|invalid thread id/i.test(error.rpcMessage)

const sandboxPolicies = {
  "read-only": { type: "readOnly" },
  "workspace-write": { type: "workspaceWrite" },
  "danger-full-access": { type: "dangerFullAccess" }
} as const satisfies Record<SandboxMode, SandboxPolicy>

/** What every start and resume resends (S7, S12); a locked binding omits model and provider (S13). */
export const threadParams = (settings: ThreadSettings, extras: ThreadExtras, locked: boolean) => ({
  cwd: settings.cwd,
  approvalPolicy: settings.approvalPolicy,
  sandbox: settings.sandbox,
  personality: "none" as const,
  ...(settings.approvalsReviewer !== undefined ? { approvalsReviewer: settings.approvalsReviewer } : {}),
  ...(settings.serviceTier !== undefined ? { serviceTier: settings.serviceTier } : {}),
  ...(!locked && settings.model !== undefined ? { model: settings.model } : {}),
  ...(extras.baseInstructions !== undefined ? { baseInstructions: extras.baseInstructions } : {}),
  ...(extras.developerInstructions !== undefined ? { developerInstructions: extras.developerInstructions } : {}),
  ...(extras.config !== undefined ? { config: { ...extras.config } } : {})
})

/** What every turn/start resends (S12); a locked binding omits the model (S13). */
export const turnParams = (threadId: string, input: ReadonlyArray<UserInput>, settings: ThreadSettings, extras: TurnExtras) => ({
  threadId,
  input,
  approvalPolicy: settings.approvalPolicy,
  sandboxPolicy: sandboxPolicies[settings.sandbox],
  ...(settings.approvalsReviewer !== undefined ? { approvalsReviewer: settings.approvalsReviewer } : {}),
  ...(settings.serviceTier !== undefined ? { serviceTier: settings.serviceTier } : {}),
  ...(!extras.locked && settings.model !== undefined ? { model: settings.model } : {}),
  ...(extras.collaborationMode !== undefined ? { collaborationMode: extras.collaborationMode } : {})
})

/** What a resume of a thread sends; as text, compared with what opened it on this connection. */
const resumeParams = (settings: ThreadSettings, extras: ThreadExtras, threadId: string, locked: boolean) => ({
  ...threadParams(settings, extras, locked),
  threadId,
  excludeTurns: true
})

/** How the thread was opened on this connection: a later open that would send the same sends nothing. */
const remember = (
  connection: AppServerConnection,
  settings: ThreadSettings,
  extras: ThreadExtras,
  loaded: LoadedThreadsService,
  opened: OpenedThread,
  locked: boolean
) =>
  Effect.sync(() => {
    loaded.remember(connection, opened.threadId, {
      sentWith: JSON.stringify(resumeParams(settings, extras, opened.threadId, locked)),
      config: JSON.stringify(extras.config ?? null),
      opened
    })
    return opened
  })

/**
 * Starts a fresh thread (`thread/start`) with the settings and extras. `pinned`: a supervised branch's canonical thread
 * (S15), started with exactly the model and provider its probe fork returned and kept model-locked from then on.
 */
export const startThread = (
  connection: AppServerConnection,
  settings: ThreadSettings,
  extras: ThreadExtras = {},
  loaded: LoadedThreadsService = LoadedThreads.none,
  pinned?: { readonly model: string; readonly modelProvider: string }
): Effect.Effect<OpenedThread, RequestError> =>
  connection
    .request("thread/start", {
      ...threadParams(settings, extras, pinned !== undefined),
      ...(pinned !== undefined ? { model: pinned.model, modelProvider: pinned.modelProvider } : {}),
      ...(extras.dynamicTools !== undefined && extras.dynamicTools.length > 0 ? { dynamicTools: extras.dynamicTools } : {}),
      ...(extras.environments !== undefined && extras.environments.length > 0 ? { environments: extras.environments } : {})
    })
    .pipe(
      Effect.flatMap((r) =>
        remember(
          connection,
          settings,
          extras,
          loaded,
          { threadId: r.thread.id, model: r.model, modelProvider: r.modelProvider, resumed: false },
          pinned !== undefined
        )
      )
    )

/**
 * The session's thread on this connection: the bound one (nothing sent when it is loaded here as this open would
 * leave it, else resumed; replaced by a fresh one when gone, unless the binding forbids it), or a fresh one.
 */
export const openThread = (
  connection: AppServerConnection,
  settings: ThreadSettings,
  bound: BoundThread | undefined,
  extras: ThreadExtras = {},
  loaded: LoadedThreadsService = LoadedThreads.none
): Effect.Effect<OpenedThread, RequestError> => {
  const start = startThread(connection, settings, extras, loaded)
  if (bound === undefined) return start
  const params = resumeParams(settings, extras, bound.threadId, bound.locked)
  const configText = JSON.stringify(extras.config ?? null)
  const known = loaded.get(connection, bound.threadId)
  if (known !== undefined && known.sentWith === JSON.stringify(params)) {
    return Effect.succeed({ ...known.opened, resumed: true, reused: true, replacedThreadId: undefined })
  }
  // loaded here with other thread config: a resume would keep the old one, so the thread is unloaded first
  const reload = known !== undefined && known.config !== configText
    ? unloadThread(connection, bound.threadId).pipe(Effect.zipRight(Effect.sync(() => loaded.forget(connection, bound.threadId))))
    : Effect.void
  return reload.pipe(Effect.zipRight(connection.request("thread/resume", params)))
    .pipe(
      Effect.flatMap((r) =>
        remember(
          connection,
          settings,
          extras,
          loaded,
          { threadId: r.thread.id, model: r.model, modelProvider: r.modelProvider, resumed: true },
          bound.locked
        )
      ),
      Effect.catchIf((error): error is RpcError => bound.replaceIfGone !== false && isThreadGone(error), (error) =>
        HarnessLog.warning(`bound thread ${bound.threadId} is gone (${error.rpcMessage}); starting a fresh thread`).pipe(
          Effect.zipRight(start),
          Effect.map((opened): OpenedThread => ({ ...opened, replacedThreadId: bound.threadId }))
        )
      )
    )
}

/** How long an unsubscribed thread may take to close; past it the resume goes ahead (and may keep the old config). */
export const unloadTimeout = Duration.seconds(5)

/**
 * Unsubscribes this connection from a thread and waits for Codex to close it (the app-server runs with
 * `thread_unload_delay_secs=0`, so that is at once when nobody else is subscribed). Bounded; never fails the turn.
 */
export const unloadThread = (connection: AppServerConnection, threadId: string): Effect.Effect<void> =>
  Effect.scoped(
    Effect.gen(function* () {
      const events = yield* connection.subscribe({ threadId })
      const closed = yield* events.pipe(Stream.filter((n) => n._tag === "ThreadClosed"), Stream.runHead, Effect.fork)
      const unsubscribed = yield* connection.request("thread/unsubscribe", { threadId }).pipe(
        Effect.as(true),
        // the resume that follows says what is wrong, if anything is
        Effect.catchAll((error) => HarnessLog.debug(`thread/unsubscribe ${threadId}: ${error.message}`).pipe(Effect.as(false)))
      )
      if (!unsubscribed) return
      const done = yield* Fiber.join(closed).pipe(Effect.timeoutOption(unloadTimeout))
      if (Option.isNone(done)) yield* HarnessLog.debug(`thread ${threadId} did not close within ${Duration.format(unloadTimeout)}`)
    })
  )

/** The thread's status and active flags from a passive `thread/read`, or undefined when it cannot be read. */
const threadStatus = (connection: AppServerConnection, threadId: string) =>
  connection.request("thread/read", { threadId }, { timeout: "10 seconds" }).pipe(
    Effect.map((r) => r.thread.status),
    Effect.catchAll((error) =>
      error._tag === "AppServerExited" || error._tag === "ConnectionRetired"
        ? Effect.fail(error)
        : HarnessLog.debug(`thread/read failed: ${error.message}`).pipe(Effect.as(undefined))
    )
  )

/** the turn's progress so far, written by its follower alone */
interface ProgressCell {
  current: TurnProgress.Progress
}

/** A turn's own message in its mailbox: wait `seq` ended with nothing of the turn heard (the SilenceClock's watchdog). */
interface Silence {
  readonly _tag: typeof silenceTag
  readonly seq: number
}
const silenceTag = "codex-harness/TurnSilence" as const
/** the turn's mailbox, as large as the connection's default subscription buffer */
const inboxSize = 4_096

/** A turn the app-server has started, held for the length of a Scope (see `startTurn`). */
export interface RunningTurn {
  readonly threadId: string
  readonly turnId: string
  /** where the turn stands: its notifications folded in so far (TurnProgress); readable while and after it runs */
  readonly progress: Effect.Effect<TurnProgress.Progress>
  /**
   * Follows the turn to its end, Codex's turn/completed or a reason to stop waiting (an unreachable provider, a stalled
   * thread, the deadline: then the turn is interrupted), telling `onEvent` each of its notifications; at most once.
   */
  readonly follow: (onEvent: EventSink) => Effect.Effect<TurnOutcome, RequestError>
  /** asks Codex to stop the turn unless it has ended (best effort, bounded), ahead of the scope's release doing so */
  readonly stop: Effect.Effect<void>
}

/**
 * Starts a turn on an open thread as a resource of the current Scope: the thread's notifications are subscribed before
 * `turn/start` (the first ones can come before its response), and when the scope closes on a turn that has not ended,
 * it is interrupted (best effort, bounded). `turn/start` itself is waited on even by an interrupted caller: the turn
 * starts on the server either way, and only its id lets the release interrupt it instead of leaving it to run.
 */
export const startTurn = (
  connection: AppServerConnection,
  threadId: string,
  input: ReadonlyArray<UserInput>,
  settings: ThreadSettings,
  extras: TurnExtras = {}
): Effect.Effect<RunningTurn, RequestError, Scope.Scope> =>
  Effect.gen(function* () {
    // the turn's own mailbox, read directly, which also carries the turn's silence checks (see `follow`)
    const inbox = yield* Mailbox.make<ServerNotification | Silence>({ capacity: inboxSize, strategy: "suspend" })
    yield* connection.subscribeMailbox(inbox, { threadId })
    // where the turn stands, written only by its follower; a plain cell, not a Ref: one Effect step less per message on
    // the hot path, and the follower and the readers below run on one thread, never at the same time
    const progress: ProgressCell = { current: TurnProgress.initial }
    const readProgress = Effect.sync(() => progress.current)
    // Codex is asked to stop a turn once, whoever asks first (a stall, `stop`, the scope's release): a second request
    // would only wait out its own bound again behind one Codex did not answer
    const asked = yield* Ref.make(false)
    const interruptTurn = (turnId: string) =>
      Effect.flatMap(Ref.getAndSet(asked, true), (already) =>
        already ? Effect.void : connection.request("turn/interrupt", { threadId, turnId }, { timeout: "2 seconds" }).pipe(Effect.ignore))
    const turnId = yield* Effect.acquireRelease(
      // in a fiber of the turn's scope, not of the caller: a request's wait is interruptible even here (so its timeout
      // holds in a finalizer), an interrupted caller passes the interruption on to its child fibers at once, and an
      // interrupted wait would lose the answer; the join in the acquire is not interrupted
      connection.request("turn/start", turnParams(threadId, input, settings, extras)).pipe(
        Effect.map((r) => r.turn.id),
        Effect.forkScoped,
        Effect.flatMap(Fiber.join)
      ),
      // a turn that neither completed nor was given up on is still running on the server
      (turnId) => Effect.suspend(() => (TurnProgress.done(progress.current) ? Effect.void : interruptTurn(turnId)))
    )
    return {
      threadId,
      turnId,
      progress: readProgress,
      follow: (onEvent) => followTurn(connection, { threadId, turnId, inbox, progress, interrupt: interruptTurn(turnId) }, settings, onEvent),
      stop: Effect.suspend(() => (TurnProgress.done(progress.current) ? Effect.void : interruptTurn(turnId)))
    } satisfies RunningTurn
    // as a whole: a caller interrupted meanwhile still gets the started turn (to record it); the interruption lands after
  }).pipe(Effect.uninterruptible)

/** Runs one turn to its end. Interrupting the caller sends `turn/interrupt` (best effort). */
export const runTurn = (
  connection: AppServerConnection,
  threadId: string,
  input: ReadonlyArray<UserInput>,
  settings: ThreadSettings,
  onEvent: EventSink = () => Effect.void,
  extras: TurnExtras = {}
): Effect.Effect<TurnOutcome, RequestError> =>
  Effect.scoped(Effect.flatMap(startTurn(connection, threadId, input, settings, extras), (turn) => turn.follow(onEvent)))

interface Followed {
  readonly threadId: string
  readonly turnId: string
  readonly inbox: Mailbox.Mailbox<ServerNotification | Silence>
  readonly progress: ProgressCell
  readonly interrupt: Effect.Effect<void>
}

/**
 * The turn's notifications folded into its progress until it is done. When the turn goes quiet, the app-server is
 * asked (a passive status read) instead of waited on blindly: one watchdog fiber for the whole turn puts a Silence into
 * the turn's mailbox when a wait of stallCheckMs (or the deadline) passes with nothing of the turn heard, so a wait
 * costs no timer and no fiber of its own.
 */
const followTurn = (
  connection: AppServerConnection,
  turn: Followed,
  settings: ThreadSettings,
  onEvent: EventSink
): Effect.Effect<TurnOutcome, RequestError> =>
  Effect.scoped(Effect.gen(function* () {
    const { inbox, threadId, turnId } = turn
    const maxReconnects = settings.maxReconnects ?? defaultMaxReconnects
    const providerSilenceMs = Duration.toMillis(settings.providerSilence ?? defaultProviderSilence)
    // checked often enough to end a silent provider within a quarter of its limit past it
    const stallCheckMs = Math.min(Duration.toMillis(settings.stallCheckAfter ?? defaultStallCheckAfter), providerSilenceMs / 4)
    const deadlineMs = settings.deadline !== undefined ? Duration.toMillis(settings.deadline) : Number.POSITIVE_INFINITY
    const ours = (n: ServerNotification) => n._tag === "DroppedLine" || turnIdOf(n) === turnId
    // while the turn is followed, its subscription only ends with the connection (the mailbox is ended, and done once
    // what it held is taken): then the connection's cause is the turn's failure
    const ended = Effect.flatMap(connection.terminated, Effect.fail)
    const take: Effect.Effect<Chunk.Chunk<ServerNotification | Silence>, RequestError> = Effect.flatMap(
      inbox.takeAll,
      ([there, done]) => (Chunk.isNonEmpty(there) ? Effect.succeed(there) : done ? ended : Effect.succeed(there))
    )
    // the fiber's Clock (a TestClock in tests), looked up once instead of on every message
    const time = yield* Effect.clock
    const startedAt = yield* time.currentTimeMillis
    const clock = SilenceClock.make(startedAt, stallCheckMs, deadlineMs)
    yield* Effect.forkScoped(SilenceClock.watch(clock, (seq) => inbox.offer({ _tag: silenceTag, seq })))
    let progress = TurnProgress.initial
    const advance = (next: TurnProgress.Progress) => {
      progress = next
      turn.progress.current = next
    }
    let heardAt = startedAt
    yield* onEvent(TurnEvent.TurnStarted({ threadId, turnId }))
    while (!TurnProgress.done(progress)) {
      const now = yield* time.currentTimeMillis
      if (now - startedAt >= deadlineMs) {
        advance(TurnProgress.pastDeadline(progress, deadlineMs))
        break
      }
      clock.begin(now)
      for (const item of yield* take) {
        if (item._tag === silenceTag) {
          if (!clock.expire(item.seq)) continue // an earlier wait's, already ended by what was heard
          const after = yield* time.currentTimeMillis
          if (after - startedAt >= deadlineMs) break
          const status = yield* threadStatus(connection, threadId)
          const checked = TurnProgress.afterSilence(
            progress,
            { status: status?.type, activeFlags: status?.type === "active" ? status.activeFlags : [], silentMs: after - heardAt },
            providerSilenceMs
          )
          if (!checked.counts) heardAt = after
          advance(checked.progress)
          if (TurnProgress.done(progress)) break
          continue
        }
        if (!ours(item)) continue
        if (clock.heard()) heardAt = yield* time.currentTimeMillis
        yield* onEvent(TurnEvent.Notification({ notification: item }))
        advance(TurnProgress.absorb(turnId, maxReconnects, progress, item))
        if (TurnProgress.done(progress)) break
      }
    }
    if (progress.ended?.interrupt === true) yield* turn.interrupt
    const outcome: TurnOutcome = {
      threadId,
      turnId,
      status: progress.status ?? "failed",
      finalText: progress.finalText,
      items: progress.items,
      error: progress.ended?.reason ?? progress.error
    }
    yield* onEvent(TurnEvent.TurnCompleted({ outcome }))
    return outcome
  })).pipe(Effect.raceFirst(Effect.flatMap(connection.terminated, Effect.fail)))
