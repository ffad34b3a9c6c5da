// The control API's handlers: each call is the harness's own operation (the same services the CLI commands use), and
// every failure becomes one ControlFailure with a code and the line the CLI would print.
//
// A message's stream: `session.selected`, `message.accepted` (it starts a turn, is steered into the running one or
// queued for after it, as chat does), then the events of the run that carries it (TurnStream.ts). The run belongs to
// the session work registry: a client that goes away leaves it running; `Interrupt` stops it.
import { Effect, Mailbox, Stream } from "effect"
import * as crypto from "node:crypto"
import { type ControlEvent, ControlFailure, ControlRpcs } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import { SessionWork } from "../harness/SessionWork.js"
import { mostRecentIn, type NoSessions, resolveIn, type SessionRefError } from "../session/SessionRef.js"
import { checkSessionId, SessionStore } from "../session/SessionStore.js"
import { rowOf } from "../session/SessionTable.js"
import { ArchiveGuard } from "../supervision/ArchiveGuard.js"
import { Branching } from "../supervision/Branching.js"
import { Catalog } from "../supervision/Catalog.js"
import { EventHub, type Published } from "./EventHub.js"
import { Interactions } from "./Interactions.js"
import { failureOf, reported } from "./failures.js"
import { SessionRouter } from "./SessionRouter.js"
import * as TurnStream from "./TurnStream.js"

/** how many events of a cluster turn a serve keeps for its client (the entity waits while they are all here) */
const clusterTurnBuffer = 1024

export { failureOf }

export interface ServeInfo {
  readonly version: string
  readonly stateDir: string
  readonly startedAt: Date
  /** how many clients are connected now */
  readonly clients: () => number
}

export const layer = (info: ServeInfo) =>
  ControlRpcs.toLayer(Effect.gen(function* () {
    const work = yield* SessionWork
    const store = yield* SessionStore
    const catalog = yield* Catalog
    const branching = yield* Branching
    const archiveGuard = yield* ArchiveGuard
    const hub = yield* EventHub
    const interactions = yield* Interactions
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

    /** the message's events, in the mailbox the RPC server reads them from (TurnStream.open), counted while read */
    const turnEvents = (payload: StartTurnPayload) =>
      Effect.gen(function* () {
        yield* hub.reading
        const { sessionId, created } = yield* reported(sessionForTurn(payload))
        return yield* TurnStream.open({
          sessionId,
          prompt: payload.prompt,
          model: payload.model,
          kind: payload.turn_kind,
          approvals: payload.approvals,
          announce: { type: "session.selected", version: eventsVersion, session_id: sessionId, created }
        })
      })

    return {
      Health: () =>
        Effect.gen(function* () {
          return {
            version: info.version,
            pid: process.pid,
            state_dir: info.stateDir,
            started_at: info.startedAt.toISOString(),
            active_turns: (yield* work.running).flatMap((run) =>
              run.kind !== "turn" ? [] : [run.turnId === undefined ? { session_id: run.sessionId } : { session_id: run.sessionId, turn_id: run.turnId }]
            ),
            pending: (yield* interactions.pending).length,
            clients: info.clients()
          }
        }),
      StartTurn: (payload) =>
        router === undefined
          ? payload.message_id === undefined
            ? turnEvents(payload)
            // a single serve keeps no ledger: a message sent again would run again, so no key is taken as a promise
            : Effect.fail(new ControlFailure({ code: "usage", message: "message_id needs a cluster serve (serve --cluster): a single serve keeps no record of message ids" }))
          // the cluster's stream run into a mailbox, as the single serve hands its turn's mailbox to the RPC server:
          // each batch is taken from it as it comes instead of pulled through the stream's channel layers, and the
          // session's entity gets its acknowledgement once a batch is here, not once this client has taken it too
          : Effect.gen(function* () {
            yield* hub.reading
            const { created, sessionId } = yield* reported(sessionForTurn(payload))
            return yield* Mailbox.fromStream(router.startTurn({
              sessionId,
              created,
              prompt: payload.prompt,
              model: payload.model,
              turn_kind: payload.turn_kind,
              approvals: payload.approvals,
              messageId: payload.message_id
            }), { capacity: clusterTurnBuffer })
          }),
      Steer: ({ session, texts }) =>
        reported(Effect.gen(function* () {
          const sessionId = yield* existing({ session })
          if (router !== undefined) return yield* router.steer(sessionId, texts)
          return TurnStream.steerResult(yield* work.steer(sessionId, texts))
        })),
      Interrupt: ({ session }) =>
        reported(Effect.flatMap(existing({ session }), (id) =>
          router === undefined ? Effect.map(work.interrupt(id), (interrupted) => ({ interrupted })) : router.interrupt(id))),
      Answer: (payload, { clientId }) =>
        interactions.answer(payload.id, payload, `client ${clientId}`).pipe(
          // waiting on another runner of the cluster
          Effect.catchIf(
            (e) => e.code === "not_found" && router !== undefined,
            (e) => router === undefined ? Effect.fail(e) : router.answer(payload.id, payload, `client ${clientId}`)
          )
        ),
      // in a cluster: every runner's (mirrored in the database; this runner's own at once, its mirror may lag a moment)
      Pending: () =>
        router?.pending === undefined ? interactions.pending : Effect.map(Effect.all([interactions.pending, router.pending]), ([here, all]) => {
          const ids = new Set(here.map((p) => p.id))
          return [...here, ...all.filter((p) => !ids.has(p.id))]
        }),
      Watch: ({ session }) =>
        Stream.unwrapScoped(Effect.gen(function* () {
          const sessionId = session === undefined ? undefined : yield* reported(existing({ session }))
          // in a cluster, one session's events come from the runner that hosts it; all sessions': this runner's
          if (sessionId !== undefined && router?.watch !== undefined) return router.watch(sessionId)
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
          // the session's run: refused while a turn runs (SessionBusy), refused and waited for by a drain
          const r = yield* work.compact(sessionId)
          return { session_id: r.sessionId, thread_id: r.threadId, turn_id: r.turnId, duration_ms: r.durationMs }
        })),
      Branch: ({ session, thread }) =>
        reported(Effect.map(branching.branch(thread, session === undefined ? {} : { sessionId: session }), (b) => ({
          session_id: b.sessionId,
          source_thread_id: b.sourceThreadId,
          last_turn_id: b.lastTurnId ?? null,
          messages: b.history.messages.length,
          truncated: b.history.truncated
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
