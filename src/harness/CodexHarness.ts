// The harness's front door for embedders and the CLI: run a turn for a session, steer its running turn, answer its
// pending question, record a model choice. A turn leases its connection through the session's recorded runtime,
// resumes or starts the bound thread with the resend rules, installs the turn extensions, waits at the compaction
// fence, follows the turn, delivers what is visible and mirrors it into the transcript. It never talks to the wire
// itself and knows no capability by name: tools, approvals, hooks and questions plug in as turn extensions.
import { Cause, Context, Data, Effect, Exit, Layer, Option, Schema, type Scope } from "effect"
import type { AppsError } from "../apps/errors.js"
import type { LeaseError } from "../appserver/ClientPool.js"
import { type RequestError, RpcError } from "../appserver/errors.js"
import { CompactionFence } from "../compaction/CompactionFence.js"
import { Settings } from "../config/Settings.js"
import { Delivery, type Reply } from "../ports/Delivery.js"
import { ToolCallHooks } from "../ports/ToolCallHooks.js"
import { ModelLocked, NewThreadRefused, SupervisedThreadGone } from "../session/errors.js"
import { type InvalidSessionId, type SessionHoldError, SessionStore, type SessionStoreError } from "../session/SessionStore.js"
import { type RuntimeRefusal, SessionRuntime } from "../session/SessionRuntime.js"
import type { SessionState } from "../session/SessionState.js"
import { type MirrorError, mediaOf, TranscriptMirror } from "../session/TranscriptMirror.js"
import * as NativeToolCalls from "../tools/NativeToolCalls.js"
import * as ToolBridge from "../tools/ToolBridge.js"
import type { BootstrapFailed } from "../turn/BootstrapProjection.js"
import type { EventSink, LiveTurn, TurnOutcome } from "../turn/TurnEvent.js"
import * as Instructions from "../turn/Instructions.js"
import { LifecycleBus } from "../turn/LifecycleBus.js"
import { LoadedThreads } from "../turn/LoadedThreads.js"
import type { TurnContext } from "../turn/TurnContext.js"
import { type TurnKind, TurnExtensions } from "../turn/TurnExtension.js"
import * as TurnRunner from "../turn/TurnRunner.js"
import { ThreadOpener } from "../threads/ThreadOpener.js"
import * as TurnFollower from "./TurnFollower.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export type { TurnKind } from "../turn/TurnExtension.js"
export type { MemoryMode, TurnContext } from "../turn/TurnContext.js"

/** A thread taken as loaded on its connection that Codex no longer has loaded; the turn is attempted once more. */
class StaleThread extends Data.TaggedError("StaleThread")<{ readonly threadId: string; readonly error: RpcError }> {}

export interface TurnRequest {
  readonly sessionId: string
  readonly prompt: string
  /** default: the context's kind, else `user` */
  readonly kind?: TurnKind | undefined
  /** what this turn knows beyond its prompt (skills, memory, adapter context, ...); over the TurnContexts port's */
  readonly context?: TurnContext | undefined
  /** an explicit model choice: recorded for the session and kept on later turns (S12); refused on a locked session */
  readonly model?: string | undefined
  /** "plan": Codex's Plan collaboration mode, where the agent may ask with request_user_input (S33) */
  readonly collaboration?: "default" | "plan" | undefined
  readonly onEvent?: EventSink | undefined
}

/** What the turn engine takes: a request, and where to tell the session's work registry that the turn started. */
export interface EngineTurnRequest extends TurnRequest {
  /** told when the app-server has started the turn: where to steer or stop it (the session's work registry keeps it) */
  readonly onLive?: ((turn: LiveTurn) => Effect.Effect<void>) | undefined
  /** told when a completed turn has delivered its reply and recorded its end, before the turn's scope closes. The run
   * waits for it and cannot be interrupted meanwhile: it must bound its own wait (a cluster runner writes the message's
   * outcome here, so its client has the turn's end without waiting for the scope to close) */
  readonly onRecorded?: ((result: TurnResult) => Effect.Effect<void>) | undefined
}

export interface TurnResult extends TurnOutcome {
  /** whether the final text went to Delivery (false in message_tool mode or when there was none) */
  readonly delivered: boolean
  readonly media: ReadonlyArray<string>
  readonly model: string | undefined
}

export type HarnessError =
  | LeaseError
  | RequestError
  | MirrorError
  | SessionHoldError
  | RuntimeRefusal
  | ModelLocked
  | SupervisedThreadGone
  | BootstrapFailed
  | AppsError

/** What became of messages sent into a running turn (S35). */
export type SteerOutcome =
  | { readonly _tag: "Steered"; readonly turnId: string }
  /** the active turn refuses steering (a compaction or review turn): send the messages after it ends */
  | { readonly _tag: "NotSteerable"; readonly reason: string }
  /** nothing is running for the session (or the turn just ended): start a turn instead */
  | { readonly _tag: "NoActiveTurn" }

export interface CodexHarnessService {
  readonly runTurn: (request: EngineTurnRequest) => Effect.Effect<TurnResult, HarnessError>
  /** adds messages to a running turn of the session with turn/steer (expectedTurnId), in order, as one request; they
   * are recorded as the session's prompts once Codex took them */
  readonly steer: (
    sessionId: string,
    turn: LiveTurn,
    texts: ReadonlyArray<string>
  ) => Effect.Effect<SteerOutcome, RequestError | SessionStoreError | InvalidSessionId>
  /**
   * A plain-text reply for a question the session's running turn is waiting on (S33): true when a pending question took
   * it as its answer; false when nothing was asked (send it as a message instead, so it is never lost).
   */
  readonly answer: (sessionId: string, text: string) => Effect.Effect<boolean>
  /** records the user's model choice for the session without running a turn (`/model NAME`); refused when locked */
  readonly chooseModel: (sessionId: string, model: string) => Effect.Effect<void, MirrorError | SessionHoldError | ModelLocked>
  /**
   * The session continues on a fresh Codex thread from its next turn (`/new --carry`, `/new --thread`): its binding is
   * detached; with `carry` the fresh thread gets the conversation projected into it before its first turn, as the
   * ContextEngine agrees (S38). Refused for a supervised session (and, by the session's work registry, while a turn runs).
   */
  /**
   * This process lets go of the session, so another may continue it at once (a cluster runner it moved to): its thread
   * is unloaded from this process's app-server (Codex lets one process write a thread) and its lock released. Never
   * starts an app-server; bounded. The caller makes sure the session runs nothing (the session's work registry).
   */
  readonly release: (sessionId: string) => Effect.Effect<void>
  readonly newThread: (
    sessionId: string,
    options: { readonly carry: boolean }
  ) => Effect.Effect<NewThreadOutcome, MirrorError | SessionHoldError | NewThreadRefused>
}

/** What `newThread` did: the thread the session leaves (undefined when it had none bound: it starts one anyway). */
export interface NewThreadOutcome {
  readonly previousThreadId: string | undefined
  readonly carry: boolean
}

export class CodexHarness extends Context.Tag("codex-harness/CodexHarness")<CodexHarness, CodexHarnessService>() {}

/** A locked (supervised) session keeps its model; asking for another is refused in one line (S13). */
const refuseModelSwitch = (sessionId: string, state: SessionState, requested: string | undefined) => {
  const locked = state.runtime?.locked === true || state.binding?.locked === true
  const model = state.binding?.model
  return locked && requested !== undefined && requested !== model
    ? Effect.fail(new ModelLocked({ sessionId, model: model ?? "the thread's own", requested }))
    : Effect.void
}

/** Codex's error data when the active turn refuses steering (a compaction or review turn), read without a cast */
const isNotSteerableData = Schema.is(Schema.Struct({ codexErrorInfo: Schema.Struct({ activeTurnNotSteerable: Schema.Object }) }))
const notSteerable = (error: RpcError) =>
  isNotSteerableData(error.data) || /ActiveTurnNotSteerable|cannot steer/i.test(error.rpcMessage)
const turnGone = (error: RpcError) => /no active turn|expected active turn id/i.test(error.rpcMessage)

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const runtimes = yield* SessionRuntime
  const store = yield* SessionStore
  const mirror = yield* TranscriptMirror
  const delivery = yield* Delivery
  const fence = yield* CompactionFence
  const bus = yield* LifecycleBus
  const opener = yield* ThreadOpener
  const extensions = yield* TurnExtensions
  const loadedThreads = yield* LoadedThreads
  // read when the layer is built: a Context.Reference read per turn would see the caller's fiber, not the layer's
  const toolHooks = yield* ToolCallHooks
  // Codex-native tool calls described in the transcript (S38), through the ToolResultPersistence port read here
  const recordNative = yield* NativeToolCalls.recorder
  const visibleReplies = settings.visibleReplies ?? "automatic"

  const deliver = (reply: Reply) =>
    delivery.deliver(reply).pipe(
      Effect.catchAll((error) => HarnessLog.warning(error.message)),
      Effect.withSpan("Delivery.deliver", { attributes: { source: reply.source } })
    )

  const chooseModel = (sessionId: string, model: string) =>
    Effect.gen(function* () {
      yield* store.hold(sessionId)
      const { state } = yield* mirror.read(sessionId)
      yield* refuseModelSwitch(sessionId, state, model)
      yield* mirror.modelChoice(sessionId, model)
    }).pipe(Effect.scoped)

  const newThread = (sessionId: string, { carry }: { readonly carry: boolean }) =>
    Effect.gen(function* () {
      yield* store.hold(sessionId)
      const { state } = yield* mirror.read(sessionId)
      if (state.runtime?.locked === true || state.binding?.locked === true) {
        return yield* new NewThreadRefused({
          sessionId,
          reason: "it is a supervised chat, bound to its native thread for good (branch the source thread again instead)"
        })
      }
      const previousThreadId = state.binding?.threadId ?? state.detached?.threadId
      if (previousThreadId !== undefined) {
        const reason = carry ? "a fresh thread carrying the conversation was asked for" : "a fresh, empty thread was asked for"
        yield* mirror.detached(sessionId, previousThreadId, reason, { carry })
      }
      return { previousThreadId, carry } satisfies NewThreadOutcome
    }).pipe(Effect.scoped, Effect.withSpan("CodexHarness.newThread", { attributes: { sessionId, carry } }))

  const steer = (sessionId: string, active: LiveTurn, texts: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      if (texts.length === 0) return { _tag: "NoActiveTurn" } as SteerOutcome
      const outcome = yield* active.connection
        .request("turn/steer", {
          threadId: active.threadId,
          expectedTurnId: active.turnId,
          input: texts.map((text) => ({ type: "text" as const, text }))
        })
        .pipe(
          Effect.map((r): SteerOutcome => ({ _tag: "Steered", turnId: r.turnId })),
          Effect.catchIf(
            (error): error is RpcError => error instanceof RpcError && (notSteerable(error) || turnGone(error)),
            (error) =>
              Effect.succeed<SteerOutcome>(
                notSteerable(error) ? { _tag: "NotSteerable", reason: error.rpcMessage } : { _tag: "NoActiveTurn" }
              )
          )
        )
      if (outcome._tag === "Steered") {
        for (const text of texts) yield* mirror.prompt(sessionId, text)
      }
      return outcome
    }).pipe(Effect.withSpan("CodexHarness.steer", { attributes: { sessionId } }))

  /** the failure or interruption an exit ended with, as a status and one line for the record */
  const endOf = <E>(cause: Cause.Cause<E>) => {
    const interrupted = Cause.isInterrupted(cause)
    return {
      status: interrupted ? ("interrupted" as const) : ("failed" as const),
      reason: interrupted
        ? undefined
        : Option.match(Cause.failureOption(cause), { onNone: () => "failed", onSome: (e) => (e as { message: string }).message })
    }
  }

  /** Phase 1, before anything is asked of Codex: the session held and read, refusals, the prompt recorded. */
  const prepare = (request: TurnRequest, kind: TurnKind) =>
    Effect.gen(function* () {
      const { model: requestedModel, prompt, sessionId } = request
      // one writer per session: a second process is refused here; the state is read once the session is ours
      yield* store.hold(sessionId)
      const { contents, state } = yield* mirror.read(sessionId)
      const locked = state.runtime?.locked === true || state.binding?.locked === true
      // refusals come before anything is recorded or sent: nothing was asked of Codex
      yield* refuseModelSwitch(sessionId, state, requestedModel)
      yield* runtimes.resolve(sessionId, state)
      // a supervised chat continues on its bound thread, or makes it (a branch not started yet, S15); never a fresh one
      if (locked && state.binding === undefined && state.branch === undefined) {
        return yield* new SupervisedThreadGone({
          sessionId,
          threadId: state.detached?.threadId ?? "(unknown)",
          reason: state.detached !== undefined ? `detached: ${state.detached.reason}` : "no binding"
        })
      }
      if (!locked && requestedModel !== undefined && requestedModel !== state.modelChoice) {
        yield* mirror.modelChoice(sessionId, requestedModel)
      }
      // the prompt is recorded before anything can fail on the Codex side, so it is never lost
      yield* mirror.prompt(sessionId, prompt, kind)
      return { contents, state, locked }
    })

  type Prepared = Effect.Effect.Success<ReturnType<typeof prepare>>

  /** Phase 2: the thread opened (one way, ThreadOpener), the turn's extensions installed, the compaction fence passed. */
  const openForTurn = (request: TurnRequest, kind: TurnKind, { contents, locked, state }: Prepared) =>
    Effect.gen(function* () {
      const { collaboration, model: requestedModel, onEvent = () => Effect.void, sessionId } = request
      const opened = yield* opener.open({
        sessionId,
        state,
        records: contents.records,
        kind,
        context: request.context,
        requestedModel,
        mayStartFresh: true,
        // the turn's tools, approvals, questions and observers, for the turn's life, as soon as the thread exists
        // (a supervised branch's canonical thread is made in this open, S15)
        install: ({ connection, setup: { tools }, threadId }) =>
          Effect.gen(function* () {
            yield* ToolBridge.install(connection, { sessionId, threadId, tools, hooks: toolHooks })
            for (const extension of extensions) {
              if (extension.install !== undefined) {
                yield* extension.install({ sessionId, threadId, kind, connection, observe: bus.observe })
              }
            }
          })
      })
      const { setup: { instructions }, thread } = opened
      yield* onEvent(TurnRunner.TurnEvent.ThreadOpened({ thread }))
      const defaultMode = Instructions.collaborationMode(instructions, { model: thread.model })
      const collaborationMode: Instructions.CollaborationMode | undefined = collaboration === "plan"
        ? {
          mode: "plan",
          settings: { model: thread.model, reasoning_effort: null, developer_instructions: defaultMode?.settings.developer_instructions ?? null }
        }
        : defaultMode
      // a manual compaction of this thread goes first (S37)
      yield* fence.pass(thread.threadId)
      return { opened, input: Instructions.turnInput(instructions, request.prompt), extras: { locked, collaborationMode } }
    })

  type OpenedTurn = Effect.Effect.Success<ReturnType<typeof openForTurn>>

  /** The turn's end, once it started: delivered and recorded as completed, or as failed or interrupted keeping its reply. */
  const recordEnd = (
    sessionId: string,
    kind: TurnKind,
    { opened: { settings: threadSettings, thread } }: OpenedTurn,
    turn: TurnRunner.RunningTurn,
    { locked }: Prepared
  ) =>
  (exit: Exit.Exit<TurnRunner.TurnOutcome, RequestError>): Effect.Effect<TurnResult, RequestError | MirrorError> =>
    Effect.gen(function* () {
      const progress = yield* turn.progress
      if (Exit.isFailure(exit)) {
        // Codex stops the turn first (best effort, bounded; the scope's release would send it only after the records
        // below): a store that does not answer (a cluster runner cut off from its database, fencing itself) must not
        // keep the turn running on the app-server while its records wait
        yield* turn.stop
        // failed or interrupted (a signal, the caller): a reply that had completed is still delivered and kept
        const completed = progress.completedText
        if (completed !== undefined && visibleReplies === "automatic") {
          yield* deliver({ sessionId, text: completed, media: [], source: "final" })
          yield* mirror.reply(sessionId, { threadId: turn.threadId, turnId: turn.turnId }, completed, true).pipe(Effect.ignore)
        }
        const { reason, status } = endOf(exit.cause)
        yield* mirror.turnAborted(sessionId, { threadId: turn.threadId, turnId: turn.turnId }, status, reason).pipe(Effect.ignore)
        return yield* Effect.failCause(exit.cause)
      }
      const outcome = exit.value
      // delivery first: transcript writes that fail afterwards cannot take the reply with them
      const media = mediaOf(outcome.items)
      const visibleText = visibleReplies === "automatic" && kind !== "heartbeat" ? outcome.finalText : undefined
      if (visibleText !== undefined || media.length > 0) {
        yield* deliver({ sessionId, text: visibleText, media: media.map((p) => ({ kind: "image", path: p })), source: "final" })
      }
      // started but never completed: the turn's own end is the compaction's terminal status
      const openCompaction = progress.compacting.size === 0 ? undefined : outcome.status === "interrupted" ? "interrupted" : "failed"
      yield* mirror.turnEnded(sessionId, outcome, { delivered: visibleText !== undefined, openCompaction })
      if (openCompaction !== undefined) {
        yield* bus.observe({ type: "after_compaction", sessionId, threadId: outcome.threadId, turnId: outcome.turnId, status: openCompaction })
      }
      return { ...outcome, delivered: visibleText !== undefined, media, model: locked ? thread.model : threadSettings.model ?? thread.model }
    })

  /**
   * One attempt of the turn, in its phases. From the recorded prompt on, the prompt has exactly one outcome, written by
   * the phase that ends it: a settled record when the thread could not be opened or the turn not started (and a fresh
   * thread that never materialised is detached), else the turn's own record. Only the phases' waits are interruptible
   * (`restore`), so an interruption always lands in a phase that records it.
   */
  const attempt = (
    request: EngineTurnRequest,
    kind: TurnKind,
    prepared: Prepared,
    restore: <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  ): Effect.Effect<TurnResult, HarnessError | StaleThread, Scope.Scope> =>
    Effect.gen(function* () {
      const { onEvent = () => Effect.void, onLive = () => Effect.void, sessionId } = request
      const settle = <E>(cause: Cause.Cause<E>) => {
        const { reason, status } = endOf(cause)
        return mirror.settled(sessionId, status, reason ?? "interrupted before its turn ended").pipe(Effect.ignore)
      }
      const ready = yield* restore(openForTurn(request, kind, prepared)).pipe(Effect.onError(settle))
      const { opened: { carriedFrom, connection, forget, settings, thread } } = ready
      // not `restore`d: startTurn is uninterruptible as a whole (a turn the server started is always known to be
      // interrupted and recorded), and an interruption at the end of a restored region would drop the started turn
      const turn = yield* TurnRunner.startTurn(connection, thread.threadId, ready.input, settings, ready.extras).pipe(
        // a thread taken as loaded that Codex has unloaded (or lost) meanwhile: the whole attempt once more, which
        // opens it as any first turn on a connection does (a resume; a fresh thread with a notice when it is gone)
        Effect.catchIf(
          (error): error is RpcError => thread.reused === true && TurnRunner.isThreadGone(error),
          (error) => forget.pipe(Effect.zipRight(Effect.fail(new StaleThread({ threadId: thread.threadId, error }))))
        ),
        Effect.onError((cause) => {
          if (Cause.failureOption(cause).pipe(Option.exists((e) => e instanceof StaleThread))) return Effect.void
          // a first turn Codex refused leaves no binding to a thread that never materialised
          const detach = thread.resumed
            ? Effect.void
            : mirror.detached(sessionId, thread.threadId, `its first turn did not start: ${endOf(cause).reason ?? "interrupted"}`, {
              // a carry not yet taken up is still owed to the next fresh thread
              carry: carriedFrom !== undefined
            })
          return detach.pipe(Effect.ignore, Effect.zipRight(settle(cause)))
        })
      )
      const sink = TurnFollower.make({
        sessionId,
        threadId: thread.threadId,
        connection,
        input: ready.input,
        onEvent,
        onLive,
        bus,
        mirror,
        recordNative
      })
      const result = yield* restore(turn.follow(sink)).pipe(
        Effect.exit,
        Effect.flatMap(recordEnd(sessionId, kind, ready, turn, prepared))
      )
      if (request.onRecorded !== undefined) yield* request.onRecorded(result)
      return result
    })

  const runTurn = (request: EngineTurnRequest) => {
    const kind: TurnKind = request.kind ?? request.context?.kind ?? "user"
    return Effect.scoped(
      Effect.gen(function* () {
        const prepared = yield* prepare(request, kind)
        return yield* Effect.uninterruptibleMask((restore) =>
          attempt(request, kind, prepared, restore).pipe(
            Effect.catchTag("StaleThread", (stale) =>
              HarnessLog.debug(`thread ${stale.threadId} was no longer loaded (${stale.error.rpcMessage}); opening it again`).pipe(
                // the second attempt opens the thread (nothing is taken as loaded any more), so it cannot be stale again
                Effect.zipRight(Effect.catchTag(attempt(request, kind, prepared, restore), "StaleThread", (again) => Effect.fail(again.error)))
              )
            )
          )
        )
      })
    ).pipe(Effect.withSpan("CodexHarness.runTurn", { attributes: { sessionId: request.sessionId, kind } }))
  }

  const answer = (sessionId: string, text: string) =>
    Effect.gen(function* () {
      for (const extension of extensions) {
        if (extension.answer !== undefined && (yield* extension.answer(sessionId, text))) return true
      }
      return false
    })

  const release = (sessionId: string) =>
    Effect.gen(function* () {
      const { state } = yield* mirror.read(sessionId)
      const threadId = state.binding?.threadId
      if (threadId !== undefined) {
        const resolved = yield* runtimes.resolve(sessionId, state)
        if (yield* runtimes.running(resolved.runtime)) {
          yield* Effect.scoped(Effect.gen(function* () {
            const connection = yield* runtimes.leaseRuntime(resolved.runtime, resolved.spec)
            if (loadedThreads.get(connection, threadId) === undefined) return
            yield* TurnRunner.unloadThread(connection, threadId)
            loadedThreads.forget(connection, threadId)
          }))
        }
      }
      if (store.release !== undefined) yield* store.release(sessionId)
    }).pipe(
      Effect.timeout("15 seconds"),
      Effect.catchAllCause((cause) => HarnessLog.warning(`session ${sessionId} was not released cleanly`, cause)),
      Effect.withSpan("CodexHarness.release", { attributes: { sessionId } })
    )

  return { runTurn, steer, answer, chooseModel, newThread, release } satisfies CodexHarnessService
})

export const layer: Layer.Layer<
  CodexHarness,
  never,
  | Settings
  | SessionRuntime
  | SessionStore
  | TranscriptMirror
  | Delivery
  | CompactionFence
  | LifecycleBus
  | ThreadOpener
  | TurnExtensions
  | LoadedThreads
> = Layer.effect(CodexHarness, make)
