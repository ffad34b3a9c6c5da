// The control API's handlers: each call is the harness's own operation (the same services the CLI commands use), and
// every failure becomes one ControlFailure with a code and the line the CLI would print.
//
// A turn's stream: `session.selected`, then every event of that session as the EventHub carries it (the turn's own
// events, its deltas, replies, approvals and questions), until the turn's terminal event. The turn runs in a fiber of
// the stream's scope, so a client that goes away interrupts its turn, as Ctrl-C does at a terminal.
import { Cause, Deferred, Effect, Fiber, Mailbox, Option, Queue, Stream } from "effect"
import * as crypto from "node:crypto"
import { type ControlEvent, ControlFailure, ControlRpcs } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import { Compaction } from "../compaction/Compaction.js"
import { CodexHarness } from "../harness/CodexHarness.js"
import { mostRecentIn, type NoSessions, resolveIn, type SessionRefError } from "../session/SessionRef.js"
import { checkSessionId, SessionStore } from "../session/SessionStore.js"
import { rowOf } from "../session/SessionTable.js"
import { ArchiveGuard } from "../supervision/ArchiveGuard.js"
import { Branching } from "../supervision/Branching.js"
import { Catalog } from "../supervision/Catalog.js"
import { ActiveTurns } from "./ActiveTurns.js"
import { EventHub, type Published } from "./EventHub.js"
import { Interactions } from "./Interactions.js"
import { turnEncoder } from "./jsonEvents.js"
import { SessionRouter } from "./SessionRouter.js"

export interface ServeInfo {
  readonly version: string
  readonly stateDir: string
  readonly startedAt: Date
  /** how many clients are connected now */
  readonly clients: () => number
}

const usageTags = new Set(["InvalidSessionId", "AmbiguousSessionRef", "ModelLocked"])
const notFoundTags = new Set(["SessionNotFound", "NoSessions", "ThreadNotFound"])
const refusedTags = new Set(["ArchiveBlocked", "BranchRefused", "SupervisionDisabled", "NewThreadRefused", "RuntimeRefusal", "SessionLocked"])

/** one failure as the API reports it; a defect is an internal error, never a stack trace on the wire */
export const failureOf = (cause: Cause.Cause<unknown>): ControlFailure => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof ControlFailure) return error
    const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : ""
    const message = oneLine(error instanceof Error ? error.message || error.name : String(error))
    const code = usageTags.has(tag) ? "usage" : notFoundTags.has(tag) ? "not_found" : refusedTags.has(tag) ? "refused" : "failed"
    return new ControlFailure({ code, message })
  }
  if (Cause.isInterruptedOnly(cause)) return new ControlFailure({ code: "failed", message: "interrupted" })
  const defect = Cause.squash(cause)
  return new ControlFailure({ code: "failed", message: `internal error: ${oneLine(defect instanceof Error ? defect.message : String(defect))}` })
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 2000)

const reported = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ControlFailure, R> =>
  Effect.catchAllCause(effect, (cause) => Effect.fail(failureOf(cause)))

export const layer = (info: ServeInfo) =>
  ControlRpcs.toLayer(Effect.gen(function* () {
    const harness = yield* CodexHarness
    const store = yield* SessionStore
    const compaction = yield* Compaction
    const catalog = yield* Catalog
    const branching = yield* Branching
    const archiveGuard = yield* ArchiveGuard
    const hub = yield* EventHub
    const interactions = yield* Interactions
    const active = yield* ActiveTurns
    const router = yield* SessionRouter
    const where = info.stateDir

    const existing = (
      ref: { readonly session?: string | undefined; readonly last?: boolean | undefined }
    ): Effect.Effect<string, SessionRefError | NoSessions | ControlFailure> =>
      ref.last === true
        ? ref.session !== undefined
          ? Effect.fail(new ControlFailure({ code: "usage", message: "last and session both name the session: give one" }))
          : mostRecentIn(store, where)
        : ref.session === undefined
        ? Effect.fail(new ControlFailure({ code: "usage", message: "name the session (session or last)" }))
        : resolveIn(store, ref.session, where)

    /** the session a turn runs in: an existing one, else a new one (with the given id, or a fresh UUID) */
    const sessionForTurn = (ref: { readonly session?: string | undefined; readonly last?: boolean | undefined }) =>
      ref.last !== true && ref.session === undefined
        ? Effect.map(checkSessionId(crypto.randomUUID()), (id) => ({ sessionId: id, created: true }))
        : existing(ref).pipe(
          Effect.map((id) => ({ sessionId: id, created: false })),
          Effect.catchTag("SessionNotFound", () => Effect.map(checkSessionId(ref.session!), (id) => ({ sessionId: id, created: true })))
        )

    const turnStream = (payload: StartTurnPayload) =>
      Stream.unwrapScoped(
        Effect.gen(function* () {
          const { sessionId, created } = yield* reported(sessionForTurn(payload))
          const claim = yield* active.claim(sessionId)
          if (claim === "draining") return yield* new ControlFailure({ code: "shutting_down", message: "the service is shutting down; no new turns" })
          if (claim === "busy") {
            return yield* new ControlFailure({ code: "busy", message: `a turn is running in session ${sessionId}: steer it, interrupt it or wait` })
          }
          yield* Effect.addFinalizer(() => active.release(sessionId).pipe(Effect.zipRight(interactions.releasePolicy(sessionId))))
          yield* interactions.setPolicy(sessionId, payload.approvals ?? "ask")
          const mailbox = yield* Mailbox.make<ControlEvent, ControlFailure>({ capacity: 1024 })
          yield* mailbox.offer({ type: "session.selected", version: eventsVersion, session_id: sessionId, created })
          // subscribed before the turn starts, so nothing it publishes is missed
          const subscription = yield* hub.subscribe
          const forwarded = yield* Deferred.make<void>()
          const streamId = crypto.randomUUID()
          yield* Effect.forkScoped(
            Effect.gen(function* () {
              while (true) {
                const published = yield* Queue.take(subscription)
                if (published.sessionId !== sessionId) continue
                if (published._tag === "End") {
                  if (published.streamId === streamId) return
                  continue
                }
                yield* mailbox.offer(published.event)
              }
            }).pipe(Effect.ensuring(Deferred.succeed(forwarded, undefined)))
          )
          const encoder = turnEncoder(sessionId)
          // one terminal event per turn: an interrupt landing after Codex's turn/completed (while the reply is being
          // delivered) must not add a turn.failed after the turn.completed a client already took as the outcome
          let ended = false
          const publish = (event: ControlEvent) =>
            Effect.suspend(() => {
              if (event.type === "turn.completed" || event.type === "turn.failed") {
                if (ended) return Effect.void
                ended = true
              }
              return hub.publish(sessionId, event)
            })
          const turn = harness.runTurn({
            sessionId,
            prompt: payload.prompt,
            model: payload.model,
            kind: payload.turn_kind,
            onEvent: (event) =>
              Effect.gen(function* () {
                if (event._tag === "TurnStarted") yield* active.started(sessionId, event.turnId)
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
            Effect.catchAllCause((cause) =>
              publish(Cause.isInterruptedOnly(cause) ? interrupted() : encoder.failed(failureOf(cause).message))),
            // interrupted from outside (Interrupt, shutdown, the client leaving): catchAllCause does not run then, and
            // the stream must still say how the turn ended
            Effect.onInterrupt(() => publish(interrupted())),
            // after the turn and its delivery: the forwarder stops at this mark, once everything before it is out;
            // should the hub have dropped it for a client too far behind, the stream still ends within a bound
            Effect.ensuring(
              hub.end(sessionId, streamId).pipe(
                // Fix: `ensuring` runs uninterruptibly, and a timeout cannot cut an uninterruptible wait short: a client
                // that stopped reading (its stream full, the forwarder blocked) and went away held the turn, and with it
                // the session (busy) and shutdown, forever. The wait is interruptible for its timeout, on a fiber of its
                // own: as a child of this one, an Interrupt arriving during the wait would cut it and skip mailbox.end.
                Effect.zipRight(
                  Deferred.await(forwarded).pipe(Effect.interruptible, Effect.timeoutOption("5 seconds"), Effect.forkDaemon, Effect.flatMap(Fiber.join))
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
      )

    return {
      Health: () =>
        Effect.gen(function* () {
          return {
            version: info.version,
            pid: process.pid,
            state_dir: info.stateDir,
            started_at: info.startedAt.toISOString(),
            active_turns: yield* active.list,
            pending: (yield* interactions.pending).length,
            clients: info.clients()
          }
        }),
      StartTurn: (payload) =>
        router === undefined
          ? turnStream(payload)
          : Stream.unwrap(Effect.map(reported(sessionForTurn(payload)), ({ created, sessionId }) =>
            router.startTurn({
              sessionId,
              created,
              prompt: payload.prompt,
              model: payload.model,
              turn_kind: payload.turn_kind,
              approvals: payload.approvals
            }))),
      Steer: ({ session, texts }) =>
        reported(Effect.gen(function* () {
          const sessionId = yield* existing({ session })
          if (router !== undefined) return yield* router.steer(sessionId, texts)
          const outcome = yield* harness.steer(sessionId, texts)
          switch (outcome._tag) {
            case "Steered":
              return { outcome: "steered" as const, turn_id: outcome.turnId }
            case "NotSteerable":
              return { outcome: "not_steerable" as const, reason: outcome.reason }
            case "NoActiveTurn":
              return { outcome: "no_active_turn" as const }
          }
        })),
      Interrupt: ({ session }) =>
        reported(Effect.flatMap(existing({ session }), (id) =>
          router === undefined ? Effect.map(active.interrupt(id), (interrupted) => ({ interrupted })) : router.interrupt(id))),
      Answer: (payload, { clientId }) =>
        interactions.answer(payload.id, payload, `client ${clientId}`).pipe(
          // waiting on another runner of the cluster
          Effect.catchIf(
            (e) => e.code === "not_found" && router !== undefined,
            (e) => router === undefined ? Effect.fail(e) : router.answer(payload.id, payload, `client ${clientId}`)
          )
        ),
      Pending: () => interactions.pending,
      Watch: ({ session }) =>
        Stream.unwrapScoped(Effect.gen(function* () {
          const sessionId = session === undefined ? undefined : yield* reported(existing({ session }))
          const subscription = yield* hub.subscribe
          // what waits now comes first, so a client that connects late can still answer it; one published between the
          // subscription and this read would come twice, so the live stream skips the ids already replayed
          const waiting = (yield* interactions.pending).filter((p) => sessionId === undefined || p.session_id === sessionId)
          const replayed = new Set(waiting.map((p) => p.id))
          return Stream.concat(
            Stream.fromIterable<ControlEvent>(waiting),
            Stream.fromQueue(subscription).pipe(
              Stream.filter((p): p is Extract<Published, { _tag: "Event" }> =>
                p._tag === "Event" && (sessionId === undefined || p.sessionId === sessionId) &&
                !((p.event.type === "approval.requested" || p.event.type === "question.asked") && replayed.has(p.event.id))),
              Stream.map((p): ControlEvent => p.event)
            )
          )
        })),
      ListSessions: () =>
        reported(Effect.gen(function* () {
          const sessions = yield* store.list
          const rows = yield* Effect.forEach(sessions, (s) =>
            store.read(s.sessionId).pipe(
              Effect.map(({ records }) => [rowOf(s.sessionId, s.updatedAt, records)]),
              Effect.catchAll(() => Effect.succeed([]))
            ))
          return rows.flat().map((row) => ({ ...row, updatedAt: row.updatedAt.toISOString() }))
        })),
      ShowSession: (ref) =>
        reported(Effect.gen(function* () {
          const sessionId = yield* existing(ref)
          const { records } = yield* store.read(sessionId)
          return { session_id: sessionId, records }
        })),
      ListThreads: () => reported(catalog.list),
      ShowThread: ({ thread }) => reported(catalog.show(thread)),
      Compact: ({ session }) =>
        reported(Effect.gen(function* () {
          const sessionId = yield* existing({ session })
          if (router !== undefined) return yield* router.compact(sessionId)
          const r = yield* compaction.compact(sessionId)
          return { session_id: r.sessionId, thread_id: r.threadId, turn_id: r.turnId, duration_ms: r.durationMs }
        })),
      Branch: ({ session, thread }) =>
        reported(Effect.map(branching.branch(thread, session === undefined ? {} : { sessionId: session }), (b) => ({
          session_id: b.sessionId,
          source_thread_id: b.sourceThreadId,
          thread_id: b.threadId,
          model: b.model,
          model_provider: b.modelProvider,
          probe: b.probe
        }))),
      Archive: ({ confirm_no_other_runner, thread }) =>
        reported(Effect.map(archiveGuard.archive(thread, { confirmNoOtherRunner: confirm_no_other_runner }), (a) => ({
          thread_id: a.threadId,
          detached_sessions: a.detachedSessions
        })))
    }
  }))

interface StartTurnPayload {
  readonly session?: string | undefined
  readonly last?: boolean | undefined
  readonly prompt: string
  readonly model?: string | undefined
  readonly turn_kind?: "user" | "heartbeat" | "lightweight" | "ringZero" | "messageOnly" | "toolDisabled" | undefined
  readonly approvals?: "ask" | "allow" | "deny" | undefined
}
