// One turn of a session as a stream of control events, for whoever runs it: `serve`'s StartTurn (Handlers.ts) and a
// cluster runner's Session entity (src/cluster/SessionEntity.ts). The stream carries every event of the session as the
// EventHub has it (the turn's own events, its deltas, replies, approvals and questions) up to the turn's end, replies
// included. The turn runs in a fiber of the caller's scope: a caller that goes away interrupts it, as Ctrl-C does.
import { Cause, Deferred, Effect, Fiber, Mailbox, Queue, type Scope, type Stream } from "effect"
import * as crypto from "node:crypto"
import { type ControlEvent, ControlFailure } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import { CodexHarness, type SteerOutcome } from "../harness/CodexHarness.js"
import type { TurnKind } from "../../schemas/turnEvents.js"
import { ActiveTurns } from "./ActiveTurns.js"
import { EventHub } from "./EventHub.js"
import { failureOf } from "./failures.js"
import { Interactions } from "./Interactions.js"
import { turnEncoder } from "./jsonEvents.js"

export interface TurnStreamOptions {
  readonly sessionId: string
  readonly prompt: string
  readonly model?: string | undefined
  readonly kind?: TurnKind | undefined
  readonly approvals?: "ask" | "allow" | "deny" | undefined
  /** told when Codex starts the turn (the cluster's ledger records it) */
  readonly onStarted?: ((threadId: string | undefined, turnId: string) => Effect.Effect<void>) | undefined
  /** the turn's outcome (its replies and its one terminal event), before the stream ends, however the turn ended */
  readonly onFinished?: ((outcome: ReadonlyArray<ControlEvent>) => Effect.Effect<void>) | undefined
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

/**
 * Starts the turn (refused with ControlFailure `busy` while the session has one, `shutting_down` while draining) and
 * returns its events. The stream ends after the turn's terminal event and its replies.
 */
export const start = (
  options: TurnStreamOptions
): Effect.Effect<Stream.Stream<ControlEvent, ControlFailure>, ControlFailure, Scope.Scope | CodexHarness | EventHub | Interactions | ActiveTurns> =>
  Effect.gen(function* () {
    const { sessionId } = options
    const harness = yield* CodexHarness
    const hub = yield* EventHub
    const interactions = yield* Interactions
    const active = yield* ActiveTurns
    const claim = yield* active.claim(sessionId)
    if (claim === "draining") return yield* new ControlFailure({ code: "shutting_down", message: "shutting down: no new turns here" })
    if (claim === "busy") {
      return yield* new ControlFailure({ code: "busy", message: `a turn is running in session ${sessionId}: steer it, interrupt it or wait` })
    }
    yield* Effect.addFinalizer(() => active.release(sessionId).pipe(Effect.zipRight(interactions.releasePolicy(sessionId))))
    yield* interactions.setPolicy(sessionId, options.approvals ?? "ask")
    const mailbox = yield* Mailbox.make<ControlEvent, ControlFailure>({ capacity: 1024 })
    // subscribed before the turn starts, so nothing it publishes is missed
    const subscription = yield* hub.subscribe
    const forwarded = yield* Deferred.make<void>()
    const streamId = crypto.randomUUID()
    const outcome: Array<ControlEvent> = []
    yield* Effect.forkScoped(
      Effect.gen(function* () {
        while (true) {
          const published = yield* Queue.take(subscription)
          if (published.sessionId !== sessionId) continue
          if (published._tag === "End") {
            if (published.streamId === streamId) return
            continue
          }
          if (published.event.type === "reply" || isTerminal(published.event)) outcome.push(published.event)
          yield* mailbox.offer(published.event)
        }
      }).pipe(Effect.ensuring(Deferred.succeed(forwarded, undefined)))
    )
    const encoder = turnEncoder(sessionId)
    // one terminal event per turn: an interrupt landing after Codex's turn/completed (while the reply is being delivered)
    // must not add a turn.failed after the turn.completed a client already took as the outcome
    let ended = false
    const publish = (event: ControlEvent) =>
      Effect.suspend(() => {
        if (isTerminal(event)) {
          if (ended) return Effect.void
          ended = true
        }
        return hub.publish(sessionId, event)
      })
    let threadId: string | undefined
    const turn = harness.runTurn({
      sessionId,
      prompt: options.prompt,
      model: options.model,
      kind: options.kind,
      onEvent: (event) =>
        Effect.gen(function* () {
          if (event._tag === "ThreadOpened") threadId = event.thread.threadId
          if (event._tag === "TurnStarted") {
            yield* active.started(sessionId, event.turnId)
            if (options.onStarted !== undefined) yield* options.onStarted(threadId, event.turnId)
          }
          if (event._tag === "Notification" && event.notification._tag === "AgentMessageDelta") {
            const p = event.notification.params
            return yield* publish({ type: "item.delta", version: eventsVersion, session_id: sessionId, item_id: p.itemId, delta: p.delta })
          }
          yield* Effect.forEach(encoder.turnEvent(event), publish, { discard: true })
        })
    })
    const interrupted = (): ControlEvent => {
      const failed = encoder.failed("interrupted")
      return failed.type === "turn.failed" ? { ...failed, status: "interrupted" } : failed
    }
    const fiber = yield* turn.pipe(
      Effect.catchAllCause((cause) => publish(Cause.isInterruptedOnly(cause) ? interrupted() : encoder.failed(failureOf(cause).message))),
      // interrupted from outside (Interrupt, shutdown, the caller leaving): catchAllCause does not run then, and the
      // stream must still say how the turn ended
      Effect.onInterrupt(() => publish(interrupted())),
      // after the turn and its delivery: the forwarder stops at this mark, once everything before it is out; should the
      // hub have dropped it for a reader too far behind, the stream still ends within a bound
      Effect.ensuring(
        hub.end(sessionId, streamId).pipe(
          // `ensuring` runs uninterruptibly, and a timeout cannot cut an uninterruptible wait short: a reader that stopped
          // reading (the stream full, the forwarder blocked) and went away would hold the turn, the session and shutdown
          // forever. The wait is interruptible for its timeout, on a fiber of its own: as a child of this one, an
          // Interrupt arriving during the wait would cut it and skip what follows.
          Effect.zipRight(
            Deferred.await(forwarded).pipe(Effect.interruptible, Effect.timeoutOption("5 seconds"), Effect.forkDaemon, Effect.flatMap(Fiber.join))
          ),
          Effect.zipRight(
            Effect.suspend(() =>
              options.onFinished === undefined
                ? Effect.void
                : options.onFinished(outcome.some(isTerminal) ? outcome : [...outcome, encoder.failed("the turn ended without a terminal event")])
            )
          ),
          Effect.zipRight(mailbox.end)
        )
      ),
      Effect.forkScoped
    )
    yield* active.attach(sessionId, fiber)
    // an interrupt from another client interrupts `fiber`; its terminal event still reaches this stream
    yield* Effect.addFinalizer(() => Fiber.interrupt(fiber))
    return Mailbox.toStream(mailbox)
  })
