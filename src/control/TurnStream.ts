// One message of a session as a stream of control events, for whoever sends it: `serve`'s StartTurn (Handlers.ts) and
// a cluster runner's Session entity (src/cluster/SessionEntity.ts). The message goes to the session work registry like
// any message from `chat` or `run`: it starts a turn, or, while one runs, is steered into it or queued for after it, as
// the session's queue mode says. The stream says which (`message.accepted`), then carries the events of the run that
// carries the message, as HubObserver publishes them (the turn's own events, its deltas, replies, approvals and
// questions), up to that run's end mark. The run belongs to the registry, not to the stream: a client that goes away
// (a reloaded page, a dropped connection) leaves it running; `Interrupt` stops it.
import { Effect, ExecutionStrategy, Exit, Mailbox, Queue, Scope, type Stream } from "effect"
import { type ControlEvent, ControlFailure } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import type { SteerOutcome } from "../harness/CodexHarness.js"
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
  /** told when Codex starts the turn that carries the message (the cluster's ledger records it) */
  readonly onStarted?: ((threadId: string | undefined, turnId: string) => Effect.Effect<void>) | undefined
  /** the outcome (the run's replies and its one terminal event), before the stream ends, however the run ended */
  readonly onFinished?: ((outcome: ReadonlyArray<ControlEvent>) => Effect.Effect<void>) | undefined
  /** the caller going away interrupts the turn this message started (a cluster entity: its ledger records the turn's
   * outcome when its stream ends, so the turn must not outlive it); by default the turn goes on without the caller */
  readonly interruptOnLeave?: boolean | undefined
}

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

const isTerminal = (event: ControlEvent) => event.type === "turn.completed" || event.type === "turn.failed"

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
  Effect.gen(function* () {
    const { sessionId } = options
    const work = yield* SessionWork
    const hub = yield* EventHub
    // the following has a scope of its own, under the caller's: the subscription ends with it
    const parent = yield* Effect.scope
    const followScope = yield* Scope.fork(parent, ExecutionStrategy.sequential)
    // subscribed before the message is submitted, so nothing the run that carries it publishes is missed
    const subscription = yield* Scope.extend(hub.subscribe, followScope)
    const submitted = yield* work
      .submit(sessionId, options.prompt, { model: options.model, kind: options.kind, approvals: options.approvals })
      .pipe(Effect.catchAllCause((cause) => Effect.zipRight(Scope.close(followScope, Exit.void), Effect.fail(failureOf(cause)))))
    const mailbox = yield* Mailbox.make<ControlEvent, ControlFailure>({ capacity: 1024 })
    yield* mailbox.offer({ type: "message.accepted", version: eventsVersion, session_id: sessionId, disposition: submitted.disposition, mode: submitted.mode })
    const outcome: Array<ControlEvent> = []

    const follow = (carried: Carried) =>
      Effect.gen(function* () {
        const { runId } = carried
        // a message steered into a run (or answering its question) joins it under way; a turn of its own starts after
        let inRun = carried._tag !== "Turn"
        let threadId: string | undefined
        while (true) {
          const published = yield* Queue.take(subscription)
          if (published.sessionId !== sessionId) continue
          if (published._tag === "Start") {
            if (published.runId === runId) inRun = true
            continue
          }
          if (published._tag === "End") {
            if (published.runId === runId) return
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
      })

    let started: number | undefined
    yield* submitted.carried.pipe(
      Effect.tap((carried) => Effect.sync(() => void (started = carried._tag === "Turn" ? carried.runId : undefined))),
      Effect.flatMap(follow),
      Effect.onInterrupt(() =>
        options.interruptOnLeave === true && started !== undefined ? Effect.asVoid(work.interrupt(sessionId)) : Effect.void
      ),
      Effect.ensuring(
        Effect.suspend(() =>
          options.onFinished === undefined
            ? Effect.void
            : options.onFinished(outcome.some(isTerminal) ? outcome : [...outcome, withdrawn(sessionId)])
        ).pipe(
          Effect.zipRight(Effect.suspend(() => (outcome.some(isTerminal) ? Effect.void : Effect.asVoid(mailbox.offer(withdrawn(sessionId)))))),
          Effect.zipRight(mailbox.end),
          Effect.zipRight(Scope.close(followScope, Exit.void))
        )
      ),
      Effect.forkIn(parent)
    )
    return Mailbox.toStream(mailbox)
  })
