// A session as a cluster entity (issue 19, item 1): its id is the session id, its messages (Turn, Steer, Interrupt,
// Answer, Compact) are Rpcs with schemas, and its handlers run on the runner that owns the session's shard, with that
// runner's own harness (its app-server pool, the PostgreSQL session store, the control layers' Delivery and
// Interactions). A session's work therefore runs on one runner at a time, and the cluster hands it to another when that
// runner dies or drains.
//
// Turn is the control API's StartTurn for one session, in the same shape as src/control/Handlers.ts (copied, not
// shared: the control API keeps its own): `session.selected`, then the session's events from the runner's EventHub until
// the turn's end mark. What cluster mode adds is the idempotency key: the message id is claimed in the TurnLedger before
// the turn starts, and the turn's terminal events are recorded as its outcome when it ends, so a redelivered message
// replays or reports instead of running twice.
//
// The entity runs its messages concurrently (a Steer, Interrupt or Answer must reach a running Turn); a second Turn while
// one runs is steered into it or queued for after it by the runner's session work registry, as in `serve` and `chat`.
// A caller that goes away (a stream the cluster stopped under a moving shard) leaves the turn running, and the registry
// tells the ledger its outcome when it ends, which a retry of the message then replays.
import * as Entity from "@effect/cluster/Entity"
import { Rpc } from "@effect/rpc"
import { Chunk, Deferred, Duration, Effect, Schedule, Schema, Stream } from "effect"
import {
  ApprovalAnswer,
  ControlEvent,
  ControlFailure,
  maxPromptChars,
  SteerResult,
  TurnKind
} from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import { reported } from "../control/failures.js"
import { EventHub } from "../control/EventHub.js"
import * as TurnStream from "../control/TurnStream.js"
import { Interactions } from "../control/Interactions.js"
import { SessionWork } from "../harness/SessionWork.js"
import { SessionStore } from "../session/SessionStore.js"
import { TranscriptMirror } from "../session/TranscriptMirror.js"
import { recordOwner, releaseOwner } from "./ClusterDatabase.js"
import { Deliveries } from "./Deliveries.js"
import * as SessionWatch from "./SessionWatch.js"
import { finishBound, TurnLedger } from "./TurnLedger.js"

const Id = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
const Text = (max: number) => Schema.String.pipe(Schema.maxLength(max))

export const Turn = Rpc.make("Turn", {
  payload: {
    /** the idempotency key: the same id sent again never runs a second turn */
    messageId: Id,
    prompt: Text(maxPromptChars),
    model: Schema.optional(Id),
    turn_kind: Schema.optional(TurnKind),
    approvals: Schema.optional(Schema.Literal("ask", "allow", "deny")),
    /** the caller made this session id up for this turn (echoed in `session.selected`) */
    created: Schema.optional(Schema.Boolean)
  },
  success: ControlEvent,
  error: ControlFailure,
  stream: true
})

export const Steer = Rpc.make("Steer", {
  payload: { texts: Schema.Array(Text(maxPromptChars)) },
  success: SteerResult,
  error: ControlFailure
})

export const Interrupt = Rpc.make("Interrupt", { success: Schema.Struct({ interrupted: Schema.Boolean }), error: ControlFailure })

export const Answer = Rpc.make("Answer", {
  payload: {
    /** the approval's or question's id, as its `approval.requested` / `question.asked` event gave it */
    id: Id,
    decision: Schema.optional(ApprovalAnswer),
    answers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Array(Text(64 * 1024)) })),
    decline: Schema.optional(Schema.Boolean),
    /** who answered, for `interaction.closed` */
    by: Schema.optional(Schema.String.pipe(Schema.maxLength(200)))
  },
  success: Schema.Void,
  error: ControlFailure
})

export const CompactResult = Schema.Struct({
  session_id: Schema.String,
  thread_id: Schema.String,
  turn_id: Schema.String,
  duration_ms: Schema.Number
})

export const Compact = Rpc.make("Compact", { success: CompactResult, error: ControlFailure })

/** the session's live events after a cursor, as a long poll (SessionWatch.ts): Watch from any runner's serve */
export const Watch = Rpc.make("Watch", {
  payload: { epoch: Schema.optional(Schema.String), after: Schema.optional(Schema.Number) },
  success: SessionWatch.WatchPage,
  error: ControlFailure
})

export const Session = Entity.make("Session", [Turn, Steer, Interrupt, Answer, Compact, Watch])

export type TurnPayload = typeof Turn.payloadSchema.Type

/** how long a session's entity stays on its runner without a message */
export const entityIdleTime = Duration.minutes(10)

/** The Session entity's handlers, for a runner: needs the runner's harness, control layers and TurnLedger. */
export const layer = Session.toLayer(
  Effect.gen(function* () {
    const address = yield* Entity.CurrentAddress
    const self = yield* Entity.CurrentRunnerAddress
    const sessionId: string = address.entityId
    const runnerAddress = `${self.host}:${self.port}`
    const work = yield* SessionWork
    const store = yield* SessionStore
    const mirror = yield* TranscriptMirror
    const interactions = yield* Interactions
    const ledger = yield* TurnLedger
    const deliveries = yield* Deliveries
    // a turn's outcome is followed in the runner's scope, past the caller's stream and this entity: the cluster cuts
    // both when the shard moves or its locks lapse under load, while the turn runs on in the session work registry, and
    // the ledger must still record every reply the turn made for the retry to replay
    const followIn = yield* TurnStream.FollowScope
    const watch = yield* SessionWatch.make(sessionId, yield* EventHub, interactions.pending)

    // `cluster status` counts the sessions each runner hosts; the row goes when this instance stops (idle, handed off)
    yield* recordOwner(sessionId, runnerAddress).pipe(Effect.catchAll((e) => Effect.logWarning(`session owner not recorded: ${e.message}`)))
    yield* Effect.addFinalizer(() => Effect.ignore(releaseOwner(sessionId, runnerAddress)))
    // the session leaves this runner (idle, its shard moved, a drain): let go of its thread and its lock at once, so the
    // runner that takes it can resume the thread (Codex lets one process write a thread) instead of failing its turn
    yield* Effect.addFinalizer(() => work.release(sessionId))

    /** says once, in the session's own transcript, that a message was lost with its runner */
    const noteLost = (events: ReadonlyArray<ControlEvent>) =>
      Effect.forEach(events, (event) =>
        event.type === "reply" && event.source === "notice" && event.text !== undefined
          ? Effect.scoped(Effect.zipRight(store.hold(sessionId), mirror.notice(sessionId, event.text)))
          : Effect.void, { discard: true }).pipe(
          Effect.catchAll((error) => Effect.logWarning(`session ${sessionId}: the failover notice was not recorded: ${error.message}`))
        )

    // `session.selected` comes first, before the ledger is asked: a redelivery that waits for its turn still answers at once
    const turnStream = (payload: TurnPayload, ended: Deferred.Deferred<void>) =>
      Stream.concat(
        Stream.make<Array<ControlEvent>>({ type: "session.selected", version: eventsVersion, session_id: sessionId, created: payload.created ?? false }),
        claimedTurn(payload, ended)
      )

    /** `ended` is done once the turn's outcome is recorded, or at once when the message runs no turn here */
    const claimedTurn = (payload: TurnPayload, ended: Deferred.Deferred<void>) =>
      Stream.unwrapScoped(
        Effect.gen(function* () {
          // the key is ours when Fresh: from here the message ends in `finish` (its turn ran) or `release` (it never
          // started: refused here, or the caller left before the turn was forked). Claimed and its release registered
          // in one uninterruptible step: an interrupt between the two left the key `started` by a runner that was not
          // running it, and its retry was reported lost (seen once in bench/cluster.ts)
          let handedOver = false
          const claimed = yield* Effect.acquireRelease(
            reported(ledger.claim(payload.messageId, sessionId)),
            (claim) => claim._tag === "Fresh" && !handedOver ? ledger.release(payload.messageId) : Effect.void
          )
          if (claimed._tag === "Lost") yield* noteLost(claimed.events)
          if (claimed._tag !== "Fresh") {
            yield* Deferred.succeed(ended, undefined)
            return Stream.fromIterable<ControlEvent>(claimed.events)
          }

          // a session that just moved here may still be held by the runner it left, for as long as that one takes to
          // let go (its finalizer unloads the thread, then releases the lock): taken here first, within a bound
          yield* store.hold(sessionId).pipe(
            Effect.retry({ schedule: Schedule.spaced("250 millis"), times: 60, while: (e) => e._tag === "SessionLocked" }),
            reported
          )
          const recorded = yield* Deferred.make<void>()
          const events = yield* TurnStream.start({
            sessionId,
            prompt: payload.prompt,
            model: payload.model,
            kind: payload.turn_kind,
            approvals: payload.approvals,
            // the registry has the message: its turn's fiber records its outcome, however this stream fares from here
            onSubmitted: Effect.sync(() => void (handedOver = true)),
            onStarted: (threadId, turnId) => ledger.started(payload.messageId, threadId, turnId),
            // recorded before the stream ends, so a redelivery after this stream replays it
            onFinished: (outcome) =>
              ledger.finish(payload.messageId, outcome).pipe(Effect.ensuring(Effect.zipRight(Deferred.succeed(recorded, undefined), Deferred.succeed(ended, undefined)))),
            followIn
          })
          // the client is told how the turn ended once the ledger says the same (or its bound passed): a runner that dies
          // in between leaves a message its client retries, never one it was told completed and the ledger lost. Per
          // chunk, not per event (Stream.mapEffect sends each event in a chunk of its own, and each chunk waits for its
          // client's acknowledgement, through the serve it came from, before the next goes)
          return events.pipe(Stream.mapChunksEffect((chunk) =>
            Chunk.some(chunk, (event) => event.type === "turn.completed" || event.type === "turn.failed")
              ? Deferred.await(recorded).pipe(Effect.timeout(Duration.sum(finishBound, Duration.seconds(5))), Effect.ignore, Effect.as(chunk))
              : Effect.succeed(chunk)
          ))
        })
      )

    return Session.of({
      Turn: (envelope) =>
        Stream.unwrap(Effect.map(Deferred.make<void>(), (ended) => deliveries.track(turnStream(envelope.payload, ended), ended))),
      Steer: (envelope) =>
        reported(Effect.gen(function* () {
          return TurnStream.steerResult(yield* work.steer(sessionId, envelope.payload.texts))
        })),
      Interrupt: () => Effect.map(work.interrupt(sessionId), (interrupted) => ({ interrupted })),
      Answer: (envelope) => {
        const { by, id, ...input } = envelope.payload
        return interactions.answer(id, input, by ?? "a cluster client")
      },
      Watch: (envelope) => watch(envelope.payload),
      Compact: () =>
        reported(Effect.map(work.compact(sessionId), (r) => ({
          session_id: r.sessionId,
          thread_id: r.threadId,
          turn_id: r.turnId,
          duration_ms: r.durationMs
        })))
    })
  }),
  // Steer, Interrupt and Answer reach a running Turn; the session work registry steers or queues a second Turn. Kept
  // for minutes without a message (not @effect/cluster's default minute): a session a person talks to every minute or
  // two keeps its owner row, and its hold and working set (the runner's store keeps a session held as long), instead of
  // taking them again at each turn (issue 33)
  { concurrency: "unbounded", maxIdleTime: entityIdleTime }
)
