// The control API's way into the cluster: a session's messages sent to its entity, wherever the cluster placed it, with
// the bounds and retries @effect/cluster 0.60.2 needs from every caller (CLUSTER-NOTES):
// - every call has a timeout: a message to an entity type no runner registered, or under a sharding config that differs
//   from the runners', hangs forever otherwise (traps 4 and 5);
// - a send to a runner killed a moment ago dies with a defect (EPIPE on the cached socket), not a typed error, so
//   `Effect.either` misses it (trap 6): such a send is tried again, and the retry waits inside Sharding until the shard
//   has a new owner. A Turn is sent again with the same messageId, so the new owner replays its outcome or reports it
//   lost instead of running it twice (TurnLedger); a runner that is draining refuses new turns with `shutting_down`,
//   which is tried again the same way, since its shards are about to move.
// A Turn's stream is bounded twice: its first event (the entity says `session.selected` before anything else) within
// `firstEventTimeout`, then no silence longer than `idleTimeout`. A Turn's stream is also tried again when the runner
// interrupted it: @effect/cluster 0.60.2 stops taking a streamed reply's acknowledgements as soon as the shard leaves a
// runner (a rebalance when a runner joins), so the stream stalls until the entity is stopped; the turn itself has run on
// and recorded its outcome meanwhile, which the retry replays from the new owner.
import type { Sharding } from "@effect/cluster/Sharding"
import { Cause, Chunk, Context, Duration, Effect, Layer, Option, Schedule, Stream } from "effect"
import * as crypto from "node:crypto"
import { type ControlEvent, ControlFailure } from "../../schemas/control.js"
import { type CompactResult, Session, type Steer, type TurnPayload } from "./SessionEntity.js"

export interface ClusterClientOptions {
  /** how long a Turn may take to say anything (routing, a shard moving to another runner); default 60 s */
  readonly firstEventTimeout?: Duration.DurationInput | undefined
  /** how long a running Turn may go without an event; default 15 minutes */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /** the bound of Steer, Interrupt and Answer; default 30 s */
  readonly callTimeout?: Duration.DurationInput | undefined
  /** the bound of Compact; default 10 minutes */
  readonly compactTimeout?: Duration.DurationInput | undefined
  /** how long a send that died with its runner (or hit a draining one) is tried again, 500 ms apart; default 60 s */
  readonly retryFor?: Duration.DurationInput | undefined
  /** how long a running Turn's stream may be silent before its message is sent again beside it; default 20 s */
  readonly stallResend?: Duration.DurationInput | undefined
}

export interface StartTurnInput {
  readonly sessionId: string
  readonly prompt: string
  /** the idempotency key; default a fresh UUID (give one to make a caller's own retry safe) */
  readonly messageId?: string | undefined
  /** the session id was made up for this turn */
  readonly created?: boolean | undefined
  readonly model?: string | undefined
  readonly turn_kind?: TurnPayload["turn_kind"]
  readonly approvals?: TurnPayload["approvals"]
}

export interface AnswerInput {
  readonly decision?: "allow_once" | "allow_always" | "deny" | undefined
  readonly answers?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
  readonly decline?: boolean | undefined
  readonly by?: string | undefined
}

export interface ClusterClientService {
  /** StartTurn for one session: its entity's Turn stream (`session.selected` first, the terminal event last) */
  readonly startTurn: (input: StartTurnInput) => Stream.Stream<ControlEvent, ControlFailure>
  readonly steer: (sessionId: string, texts: ReadonlyArray<string>) => Effect.Effect<typeof Steer.successSchema.Type, ControlFailure>
  readonly interrupt: (sessionId: string) => Effect.Effect<{ readonly interrupted: boolean }, ControlFailure>
  readonly answer: (sessionId: string, id: string, input: AnswerInput) => Effect.Effect<void, ControlFailure>
  readonly compact: (sessionId: string) => Effect.Effect<typeof CompactResult.Type, ControlFailure>
  /** the session of an approval or question seen on a stream of this client and not yet closed (for `Answer` by id) */
  readonly sessionOfInteraction: (id: string) => string | undefined
  /**
   * The session's live events from whichever runner hosts it (its entity's Watch, polled): what waits for an answer
   * first, then what its runner publishes. Follows the session when it moves; fails after `retryFor` without an answer.
   */
  readonly watch: (sessionId: string) => Stream.Stream<ControlEvent, ControlFailure>
}

export class ClusterClient extends Context.Tag("codex-harness/cluster/ClusterClient")<ClusterClient, ClusterClientService>() {}

/** @effect/cluster's errors in a client's words: their own message is a dump of their fields (an envelope id, an
 * EntityAddress structure), which is no answer for a person */
const clusterErrors: Readonly<Record<string, string>> = {
  EntityNotAssignedToRunner: "the session is moving to another runner",
  RunnerUnavailable: "the runner hosting the session cannot be reached",
  RunnerNotRegistered: "the runner hosting the session has left the cluster",
  MailboxFull: "the session has too many messages waiting",
  AlreadyProcessingMessage: "the session is already processing this message",
  PersistenceError: "the cluster's database did not answer",
  MalformedMessage: "a message between runners could not be read"
}

/** one readable line for whatever a cluster call failed with */
export const describeClusterError = (e: unknown): string => {
  const tag = typeof e === "object" && e !== null && "_tag" in e ? String(e._tag) : undefined
  const known = tag === undefined ? undefined : clusterErrors[tag]
  if (known !== undefined) return known
  const text = e instanceof Error ? e.message || e.name : tag ?? String(e)
  // never a multi-line dump or a structure
  return (text.split("\n")[0] ?? "").slice(0, 300)
}
const message = describeClusterError

/** a cluster-side failure (MailboxFull, AlreadyProcessingMessage, PersistenceError) in the API's terms */
const asFailure = (error: unknown): ControlFailure =>
  error instanceof ControlFailure
    ? error
    : new ControlFailure({
      code: typeof error === "object" && error !== null && "_tag" in error && error._tag === "MailboxFull" ? "busy" : "failed",
      message: `cluster: ${message(error)}`
    })

/** a send worth trying again: it died with its runner (a defect), or hit a runner that is handing its shards off */
const retryable = (cause: Cause.Cause<unknown>): boolean => {
  if (Cause.isInterruptedOnly(cause)) return false
  const failure = Cause.failureOption(cause)
  if (Option.isNone(failure)) return Cause.isDie(cause)
  const error = failure.value
  return error instanceof ControlFailure
    ? error.code === "shutting_down"
    : typeof error === "object" && error !== null && "_tag" in error && (error._tag === "PersistenceError" || error._tag === "MailboxFull")
}

const failureOfCause = (cause: Cause.Cause<unknown>): Cause.Cause<ControlFailure> => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return Cause.fail(asFailure(failure.value))
  if (Cause.isInterruptedOnly(cause)) return cause as Cause.Cause<never>
  return Cause.fail(new ControlFailure({ code: "failed", message: `cluster: ${message(Cause.squash(cause))}` }))
}

/** a reply by what it says */
const replyKey = (event: Extract<ControlEvent, { type: "reply" }>) => `${event.source}\u0000${event.text ?? ""}\u0000${event.media.length}`

/**
 * A turn's events once each, however often its message is delivered: a retry of the client, or @effect/cluster sending
 * the message again to the shard's new owner within the same stream (delivery is at-least-once), makes the entity run it
 * again, and the ledger then replays its outcome ([replies..., terminal event]) after what the first delivery already
 * streamed; a client once got two turn.completed in one stream (seen in cluster-chaos.test.ts). Each delivery starts
 * with `session.selected`, which passes once; from the second delivery on, a reply already passed on is dropped (once
 * per time it passed); and nothing follows the first terminal event but replies not passed on yet. Pure; one per stream.
 */
export const onceEach = (): ((event: ControlEvent) => boolean) => {
  let selected = false
  let ended = false
  const passed = new Map<string, number>()
  let unmatched = new Map<string, number>()
  return (event) => {
    if (event.type === "session.selected") {
      if (!selected) return (selected = true)
      unmatched = new Map(passed)
      return false
    }
    if (event.type === "reply") {
      const key = replyKey(event)
      const pending = unmatched.get(key) ?? 0
      if (pending > 0) {
        unmatched.set(key, pending - 1)
        return false
      }
      passed.set(key, (passed.get(key) ?? 0) + 1)
      return true
    }
    if (ended) return false
    if (event.type === "turn.completed" || event.type === "turn.failed") ended = true
    return true
  }
}

export const make = (options: ClusterClientOptions = {}): Effect.Effect<ClusterClientService, never, Sharding> =>
  Effect.gen(function* () {
    const clientFor = yield* Session.client
    const firstEventTimeout = Duration.decode(options.firstEventTimeout ?? "60 seconds")
    const idleTimeout = Duration.decode(options.idleTimeout ?? "15 minutes")
    const callTimeout = Duration.decode(options.callTimeout ?? "30 seconds")
    const compactTimeout = Duration.decode(options.compactTimeout ?? "10 minutes")
    const retryFor = Duration.toMillis(options.retryFor ?? "60 seconds")
    const stallMs = Duration.toMillis(options.stallResend ?? "20 seconds")
    const interactions = new Map<string, string>()

    const timedOut = (what: string, after: Duration.Duration) =>
      new ControlFailure({ code: "failed", message: `cluster: ${what} got no answer within ${Duration.format(after)}` })

    /** a unary call with its bound, tried again while its runner is replaced */
    const call = <A>(what: string, effect: Effect.Effect<A, unknown>, bound: Duration.Duration) =>
      effect.pipe(
        Effect.sandbox,
        // the call's own bound ends the retries too
        Effect.retry({ schedule: Schedule.spaced("500 millis"), while: retryable }),
        Effect.unsandbox,
        Effect.catchAllCause((cause) => Effect.failCause(failureOfCause(cause))),
        Effect.timeoutFail({ duration: bound, onTimeout: () => timedOut(what, bound) })
      )

    const startTurn = (input: StartTurnInput): Stream.Stream<ControlEvent, ControlFailure> => {
      const payload: TurnPayload = {
        messageId: input.messageId ?? crypto.randomUUID(),
        prompt: input.prompt,
        ...(input.model !== undefined ? { model: input.model } : {}),
        ...(input.turn_kind !== undefined ? { turn_kind: input.turn_kind } : {}),
        ...(input.approvals !== undefined ? { approvals: input.approvals } : {}),
        ...(input.created !== undefined ? { created: input.created } : {})
      }
      let ended = false
      const what = `turn of session ${input.sessionId}`
      const once: Stream.Stream<ControlEvent, unknown> = Stream.unwrapScoped(Effect.gen(function* () {
        const pull = yield* Stream.toPull(clientFor(input.sessionId).Turn(payload))
        let first = true
        return Stream.repeatEffectChunkOption(
          Effect.suspend(() => {
            const bound = first ? firstEventTimeout : idleTimeout
            return pull.pipe(
              Effect.timeoutFail({ duration: bound, onTimeout: () => Option.some(timedOut(first ? what : `${what} (silent)`, bound)) }),
              Effect.tap(() => Effect.sync(() => void (first = false)))
            )
          })
        )
      }))
      const firstTime = onceEach()
      // replies passed on by the stream and by a send again beside it (below), by content: a reply one passed on is
      // dropped once from the other
      const fromStream = new Map<string, number>()
      const fromResend = new Map<string, number>()
      const takeOne = (counts: Map<string, number>, key: string) => {
        const n = counts.get(key) ?? 0
        if (n > 0) counts.set(key, n - 1)
        return n > 0
      }
      const addOne = (counts: Map<string, number>, key: string) => void counts.set(key, (counts.get(key) ?? 0) + 1)
      const terminalSeen = () => {
        ended = true
        // nothing of the turn waits any more
        for (const [id, session] of interactions) if (session === input.sessionId) interactions.delete(id)
      }
      const seen = (event: ControlEvent): boolean => {
        if (!firstTime(event)) return false
        // after `firstTime`, which then counts it as passed for a redelivery of this stream to match
        if (ended && (event.type === "turn.completed" || event.type === "turn.failed")) return false
        if (event.type === "reply") {
          const key = replyKey(event)
          if (takeOne(fromResend, key)) return false
          addOne(fromStream, key)
        }
        if (event.type === "turn.completed" || event.type === "turn.failed") terminalSeen()
        if (event.type === "approval.requested" || event.type === "question.asked") interactions.set(event.id, event.session_id)
        if (event.type === "interaction.closed") interactions.delete(event.id)
        return true
      }
      /** what a send again adds: its replies the stream did not pass on, and the turn's end if the stream has not */
      const seenResent = (event: ControlEvent): boolean => {
        if (event.type === "reply") {
          const key = replyKey(event)
          if (takeOne(fromStream, key)) return false
          addOne(fromResend, key)
          return true
        }
        if ((event.type !== "turn.completed" && event.type !== "turn.failed") || ended) return false
        terminalSeen()
        return true
      }
      // retried for `retryFor` from the first failure of a series; an attempt that got an event starts a new series
      let failingSince: number | undefined
      // when the stream last had an event, and when the message was last sent again beside it
      let heardAt = Date.now()
      let resentAt = 0
      const attempt = (filter: (event: ControlEvent) => boolean = seen): Stream.Stream<ControlEvent, ControlFailure> =>
        once.pipe(
          // per chunk (Stream.tap would split each chunk into chunks of one event)
          Stream.mapChunks((chunk) => {
            failingSince = undefined
            heardAt = Date.now()
            return chunk
          }),
          Stream.filter(filter),
          Stream.catchAllCause((cause) => {
            // once the turn's end was seen there is nothing to ask again for; the stream just ends
            if (ended) return Stream.empty
            failingSince ??= Date.now()
            // an interruption that reaches this handler came from the runner (this fiber's own would not run it): the
            // entity was stopped under the turn, on a shard moving to another runner past entityTerminationTimeout
            return Date.now() - failingSince < retryFor && (retryable(cause) || Cause.isInterruptedOnly(cause))
              ? Stream.concat(Stream.drain(Stream.fromEffect(Effect.sleep("500 millis"))), attempt(filter))
              : Stream.failCause(failureOfCause(cause))
          })
        )
      // The same message again, beside a stream silent for `stallMs` (and not waiting for an answer): @effect/cluster
      // 0.60.2 drops a streamed reply whose shard left its runner while the turn ran (a runner joining, PostgreSQL's
      // locks taken again after a restart), its end included, and the stream then waits for nothing. The chaos test saw
      // turns complete and their outcomes recorded while their clients heard nothing for 150 s. The message sent again
      // reaches the shard's owner now: one that runs the turn waits for it and replays its outcome, one that took the
      // shard over replays the recorded outcome (or reports the message lost once its runner is gone), and each event
      // still passes once (`seen`, `seenResent`). A stream that is only quiet (a long command) keeps its events: the
      // first of the two to end ends both, and a send again that fails is let go (the stream beside it may be fine).
      const waiting = () => [...interactions.values()].includes(input.sessionId)
      const resends: Stream.Stream<ControlEvent, ControlFailure> = Stream.unwrap(Effect.gen(function* () {
        while (!ended) {
          const quiet = Date.now() - Math.max(heardAt, resentAt)
          if (quiet >= stallMs && !waiting()) {
            resentAt = Date.now()
            yield* Effect.logDebug(`cluster client: the turn of message ${payload.messageId} (session ${input.sessionId}) was silent for ${Math.round(quiet / 1000)} s: sent again`)
            return Stream.concat(attempt(seenResent).pipe(Stream.catchAllCause(() => Stream.empty)), Stream.suspend(() => resends))
          }
          yield* Effect.sleep(Duration.millis(Math.max(1000, stallMs - quiet)))
        }
        return Stream.empty
      }))
      return Stream.merge(attempt(), resends, { haltStrategy: "either" })
    }

    const watch = (sessionId: string): Stream.Stream<ControlEvent, ControlFailure> => {
      let epoch: string | undefined
      let after: number | undefined
      let failingSince: number | undefined
      // approvals and questions already given (a new epoch replays what waits)
      const given = new Set<string>()
      const poll = () => call(`watch of session ${sessionId}`, clientFor(sessionId).Watch({ epoch, after }), callTimeout).pipe(
        Effect.map((page) => {
          failingSince = undefined
          epoch = page.epoch
          after = page.next
          return page.events.filter((event) => {
            if (event.type === "approval.requested" || event.type === "question.asked") {
              if (given.has(event.id)) return false
              given.add(event.id)
            }
            if (event.type === "interaction.closed") given.delete(event.id)
            return true
          })
        }),
        // a runner being replaced: asked again (the new owner starts a new epoch), within retryFor
        Effect.catchAll((error) => {
          failingSince ??= Date.now()
          return Date.now() - failingSince < retryFor ? Effect.as(Effect.sleep("500 millis"), []) : Effect.fail(error)
        })
      )
      return Stream.repeatEffect(Effect.suspend(poll)).pipe(Stream.flattenIterables)
    }

    const service: ClusterClientService = {
      startTurn,
      steer: (sessionId, texts) => call(`steer of session ${sessionId}`, clientFor(sessionId).Steer({ texts }), callTimeout),
      interrupt: (sessionId) => call(`interrupt of session ${sessionId}`, clientFor(sessionId).Interrupt(), callTimeout),
      answer: (sessionId, id, input) =>
        call(`answer ${id}`, clientFor(sessionId).Answer({
          id,
          ...(input.decision !== undefined ? { decision: input.decision } : {}),
          ...(input.answers !== undefined ? { answers: input.answers } : {}),
          ...(input.decline !== undefined ? { decline: input.decline } : {}),
          ...(input.by !== undefined ? { by: input.by } : {})
        }), callTimeout),
      compact: (sessionId) => call(`compaction of session ${sessionId}`, clientFor(sessionId).Compact(), compactTimeout),
      sessionOfInteraction: (id) => interactions.get(id),
      watch: (sessionId) => watch(sessionId)
    }
    return service
  })

export const layer = (options: ClusterClientOptions = {}): Layer.Layer<ClusterClient, never, Sharding> =>
  Layer.effect(ClusterClient, make(options))

/** every event of a turn's stream, collected (tests, `cluster` commands) */
export const collect = (stream: Stream.Stream<ControlEvent, ControlFailure>) => Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)
