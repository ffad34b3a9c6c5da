// One message of a session as a stream of control events, for whoever sends it: `serve`'s StartTurn (Handlers.ts) and
// a cluster runner's Session entity (src/cluster/SessionEntity.ts). The message goes to the session work registry like
// any message from `chat` or `run`: it starts a turn, or, while one runs, is steered into it or queued for after it, as
// the session's queue mode says. The stream says which (`message.accepted`), then carries the events of the run that
// carries the message, as HubObserver publishes them (the turn's own events, its deltas, replies, approvals and
// questions), up to that run's end mark. The run belongs to the registry, not to the stream: a client that goes away
// (a reloaded page, a dropped connection) leaves it running; `Interrupt` stops it.
import { Cause, Context, Deferred, Effect, ExecutionStrategy, Exit, Fiber, Layer, Mailbox, Scope, type Stream } from "effect"
import { type ControlEvent, ControlFailure } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import type { HarnessError, SteerOutcome, TurnResult } from "../harness/CodexHarness.js"
import { type Carried, SessionWork } from "../harness/SessionWork.js"
import type { TurnKind } from "../../schemas/turnEvents.js"
import { EventHub } from "./EventHub.js"
import { failureOf } from "./failures.js"

export interface TurnStreamOptions {
  readonly sessionId: string
  readonly prompt: string
  readonly model?: string | undefined
  readonly kind?: TurnKind | undefined
  readonly approvals?: "ask" | "allow" | "deny" | undefined
  /**
   * told as soon as the registry has the message, before anything can interrupt the caller: from then on the message's
   * end is `onFinished`'s to tell (the cluster's ledger keeps its claim of the message instead of releasing it)
   */
  readonly onSubmitted?: Effect.Effect<void> | undefined
  /** told when Codex starts the turn that carries the message (the cluster's ledger records it) */
  readonly onStarted?: ((threadId: string | undefined, turnId: string) => Effect.Effect<void>) | undefined
  /** the outcome (the run's replies and its one terminal event) once the run that carried the message has ended,
   * however the run and the caller fared: told by the registry, so a caller that went away still gets it recorded */
  readonly onFinished?: ((outcome: ReadonlyArray<ControlEvent>) => Effect.Effect<void>) | undefined
  /** where the run is followed when that must go on after the caller's stream is cut; default the caller's scope. A
   * cluster runner follows in its FollowScope: the cluster stops a Turn's stream (and its entity) when the shard moves
   * or its locks lapse under load, while the run goes on in the registry, and the ledger must still get every reply */
  readonly followIn?: Scope.Scope | undefined
}

/** A scope that lasts as long as the process's control layers: runs followed past their callers end in it. */
export class FollowScope extends Context.Tag("codex-harness/control/FollowScope")<FollowScope, Scope.Scope>() {}

export const followScopeLayer: Layer.Layer<FollowScope> = Layer.scoped(FollowScope, Effect.scope)

/** What a steer did, as the control API says it. */
export const steerResult = (outcome: SteerOutcome) => {
  switch (outcome._tag) {
    case "Steered":
      return { outcome: "steered" as const, turn_id: outcome.turnId }
    case "NotSteerable":
      return { outcome: "not_steerable" as const, reason: outcome.reason }
    case "NoActiveTurn":
      return { outcome: "no_active_turn" as const }
  }
}

/** how long a run that recorded its end waits for its following to catch up, and then for its outcome's write */
const recordedWait = "2 seconds"

/**
 * Resumes after whatever is ready to run now has run (setImmediate: after the pending microtasks, where Effect runs its
 * fibers, and the I/O callbacks due). The run's fiber takes it once its outcome is written: the terminal event's way
 * out (the entity's stream, the cluster client, the serve's socket) is all in memory, and runs before the turn's scope
 * closes instead of behind it. Not a wait for anything: the close follows within one turn of the event loop.
 */
const eventLoopTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

const isTerminal = (event: ControlEvent) => event.type === "turn.completed" || event.type === "turn.failed"

/** the terminal event of a run the following did not see end (its caller went away), from the run's own result */
const terminalOf = (sessionId: string, exit: Exit.Exit<TurnResult, HarnessError>): ControlEvent => {
  if (Exit.isFailure(exit)) {
    const interrupted = Cause.isInterruptedOnly(exit.cause)
    return {
      type: "turn.failed",
      version: eventsVersion,
      session_id: sessionId,
      status: interrupted ? "interrupted" : "error",
      error: interrupted ? "interrupted" : failureOf(exit.cause).message,
      final_text: null,
      usage: null
    }
  }
  const r = exit.value
  const ids = { session_id: sessionId, thread_id: r.threadId, turn_id: r.turnId, final_text: r.finalText ?? null, usage: null }
  return r.status === "completed"
    ? { type: "turn.completed", version: eventsVersion, ...ids }
    : { type: "turn.failed", version: eventsVersion, ...ids, status: r.status === "interrupted" ? "interrupted" : "failed", error: r.error ?? `the turn ended ${r.status}` }
}

/** a message the registry withdrew before a run carried it (a drain, a cancel): its stream still ends with an outcome */
const withdrawn = (sessionId: string): ControlEvent => ({
  type: "turn.failed",
  version: eventsVersion,
  session_id: sessionId,
  status: "interrupted",
  error: "the message was withdrawn before a turn carried it",
  final_text: null,
  usage: null
})

/**
 * Submits the message (refused with ControlFailure `busy` when the session's queue is full, `shutting_down` while
 * draining) and returns its events. The stream ends after the carrying run's terminal event and replies.
 */
export const start = (
  options: TurnStreamOptions
): Effect.Effect<Stream.Stream<ControlEvent, ControlFailure>, ControlFailure, Scope.Scope | SessionWork | EventHub> =>
  Effect.map(open(options), Mailbox.toStream)

/**
 * `start`'s events as the mailbox they are put in, which ends after them: what serve's StartTurn hands to the RPC
 * server, which then takes each batch from it as it comes instead of pulling a stream through its channel layers (that
 * took serve's StartTurn from about 2,400 to 1,200 run-loop steps a warm turn). `announce` goes first, once the
 * message is taken.
 */
export const open = (
  options: TurnStreamOptions & { readonly announce?: ControlEvent | undefined }
): Effect.Effect<Mailbox.ReadonlyMailbox<ControlEvent, ControlFailure>, ControlFailure, Scope.Scope | SessionWork | EventHub> =>
  Effect.gen(function* () {
    const { sessionId } = options
    const work = yield* SessionWork
    const hub = yield* EventHub
    // the following has a scope of its own, under the caller's (or the one it must outlive the caller in): the
    // subscription ends with it
    const caller = yield* Effect.scope
    const parent = options.followIn ?? caller
    const followScope = yield* Scope.fork(parent, ExecutionStrategy.sequential)
    // subscribed before the message is submitted, so nothing the run that carries it publishes is missed
    const subscription = yield* Scope.extend(hub.subscribeMailbox, followScope)
    const outcome: Array<ControlEvent> = []
    // done when the following has seen the run's end (or stopped): the outcome is then as complete as it gets
    const followed = yield* Deferred.make<void>()
    // done when the following has seen the run's Recorded mark: the turn's replies and terminal event are in `outcome`
    const sawRecorded = yield* Deferred.make<void>()
    const onSubmitted = options.onSubmitted ?? Effect.void
    // the outcome is told once: from the run's recorded end when the following saw it in time, else from the run's end
    // (a failed or interrupted run, a following that fell behind); a second teller waits for the first
    const told = yield* Deferred.make<void>()
    let telling = false
    const onFinished = options.onFinished === undefined ? undefined : (events: ReadonlyArray<ControlEvent>) =>
      Effect.suspend(() => {
        if (telling) return Deferred.await(told)
        telling = true
        return options.onFinished!(events).pipe(Effect.ensuring(Deferred.succeed(told, undefined)))
      })
    // On the run's own fiber, before the turn's scope closes (the run waits for this, so each wait is bounded): the
    // outcome's write starts at once, instead of after the scope's close and the End mark, and the run holds the thread
    // until it is done (a write forked and not waited for went out only after the close, measured in bench/README.md)
    const onRecorded = onFinished === undefined ? undefined : () =>
      Deferred.await(sawRecorded).pipe(
        Effect.interruptible,
        Effect.timeoutOption(recordedWait),
        Effect.flatMap((saw) =>
          saw._tag === "None" || !outcome.some(isTerminal)
            ? Effect.void
            : Effect.forkIn(onFinished([...outcome]), parent).pipe(
              Effect.flatMap((telling) => Fiber.await(telling).pipe(Effect.interruptible, Effect.timeoutOption(recordedWait))),
              Effect.zipRight(eventLoopTurn)
            )
        ),
        Effect.asVoid,
        Effect.withSpan("TurnStream.onRecorded")
      )
    // uninterruptible with its onSubmitted (nothing in it waits long: a full queue is refused at once), so a caller
    // interrupted here has either not submitted the message or has been told it did
    const submitted = yield* Effect.uninterruptible(work
      .submit(sessionId, options.prompt, {
        model: options.model,
        kind: options.kind,
        approvals: options.approvals,
        ...(onFinished === undefined ? {} : {
          onRecorded,
          onEnded: (exit: Exit.Exit<TurnResult, HarnessError>) =>
            Deferred.await(followed).pipe(
              Effect.interruptible,
              Effect.timeoutOption("5 seconds"),
              Effect.zipRight(Effect.suspend(() => onFinished(outcome.some(isTerminal) ? outcome : [...outcome, terminalOf(sessionId, exit)]))),
              Effect.withSpan("TurnStream.onEnded")
            )
        })
      }).pipe(Effect.tap(() => onSubmitted)))
      .pipe(Effect.catchAllCause((cause) => Effect.zipRight(Scope.close(followScope, Exit.void), Effect.fail(failureOf(cause)))))
    const mailbox = yield* Mailbox.make<ControlEvent, ControlFailure>({ capacity: 1024 })
    // a caller that goes away takes its mailbox with it: the following (when it outlives the caller) offers to a mailbox
    // that is done, which returns at once instead of waiting for a reader that will never come
    if (parent !== caller) yield* Scope.addFinalizer(caller, mailbox.shutdown)
    if (options.announce !== undefined) yield* mailbox.offer(options.announce)
    yield* mailbox.offer({ type: "message.accepted", version: eventsVersion, session_id: sessionId, disposition: submitted.disposition, mode: submitted.mode })

    const follow = (carried: Carried) =>
      Effect.gen(function* () {
        const { runId } = carried
        // a message steered into a run (or answering its question) joins it under way; a turn of its own starts after
        let inRun = carried._tag !== "Turn"
        let threadId: string | undefined
        while (true) {
          const [batch, done] = yield* subscription.takeAll
          for (const published of batch) {
            if (published.sessionId !== sessionId) continue
            if (published._tag === "Start") {
              if (published.runId === runId) inRun = true
              continue
            }
            if (published._tag === "End") {
              if (published.runId === runId) return
              continue
            }
            if (published._tag === "Recorded") {
              if (published.runId === runId) yield* Deferred.succeed(sawRecorded, undefined)
              continue
            }
            // a run's own event carries its id; the session's others (replies, approvals) belong to the run under way
            if (published.runId !== undefined ? published.runId !== runId : !inRun) continue
            const event = published.event
            if (event.type === "thread.started") threadId = event.thread_id
            if (event.type === "turn.started" && options.onStarted !== undefined) yield* options.onStarted(threadId, event.turn_id)
            if (event.type === "reply" || isTerminal(event)) outcome.push(event)
            yield* mailbox.offer(event)
          }
          // the hub closed (the process is stopping): the following ends as when its run ends
          if (done) return
        }
      })

    yield* submitted.carried.pipe(
      Effect.flatMap(follow),
      Effect.ensuring(
        Deferred.succeed(followed, undefined).pipe(
          // an answer to the running turn's question is no message of the queue: its outcome is the one followed here
          Effect.zipRight(Effect.suspend(() =>
            onFinished === undefined || submitted.disposition !== "answer"
              ? Effect.void
              : onFinished(outcome.some(isTerminal) ? outcome : [...outcome, withdrawn(sessionId)])
          )),
          Effect.zipRight(Effect.suspend(() => (outcome.some(isTerminal) ? Effect.void : Effect.asVoid(mailbox.offer(withdrawn(sessionId)))))),
          Effect.zipRight(mailbox.end),
          Effect.zipRight(Scope.close(followScope, Exit.void))
        )
      ),
      Effect.forkIn(parent)
    )
    return mailbox
  })
