// Manual native compaction (S37): `thread/compact/start` on the session's bound thread, over the same shared client its
// turns use, holding that lease and the thread's compaction fence until Codex reports the compaction turn terminal or
// confirms an interrupt. Past the timeout it interrupts; without confirmation within the grace period it retires the
// client before the fence opens (and, on a remote connection, detaches the binding). It never compacts anything itself:
// no preflight, no fallback summary, and the transcript gets the start and terminal status only (S39).
import { Clock, Context, Deferred, Duration, Effect, Layer, Option, Schema, Stream } from "effect"
import type { NotificationMessage } from "../../schemas/jsonrpc.js"
import type { SessionRecord } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import { ClientPool, type LeaseError } from "../appserver/ClientPool.js"
import { AppServerExited, type ConnectionClosed, ConnectionRetired, type RequestError, RpcError } from "../appserver/errors.js"
import { CodexHarness, clientSpec, Settings, threadSettingsFor } from "../harness/CodexHarness.js"
import { type InvalidSessionId, SessionStore, type SessionStoreError } from "../session/SessionStore.js"
import { sessionState } from "../session/SessionState.js"
import * as TurnRunner from "../turn/TurnRunner.js"
import { CompactionFence } from "./CompactionFence.js"

// ---- failures ----

export class NothingToCompact extends Schema.TaggedError<NothingToCompact>()("NothingToCompact", {
  sessionId: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} has no Codex thread yet: nothing to compact`
  }
}

export class CompactionThreadGone extends Schema.TaggedError<CompactionThreadGone>()("CompactionThreadGone", {
  sessionId: Schema.String,
  threadId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the Codex thread ${this.threadId} of session ${this.sessionId} no longer exists (${this.reason}): nothing to compact`
  }
}

/** Codex refused the compaction, or its turn ended failed/interrupted (or without a compaction item) before it completed. */
export class CompactionFailed extends Schema.TaggedError<CompactionFailed>()("CompactionFailed", {
  threadId: Schema.String,
  turnId: Schema.optional(Schema.String),
  /** the compaction turn's status, or "rejected" when thread/compact/start itself failed */
  status: Schema.String,
  message: Schema.String
}) {}

export class CompactionTimedOut extends Schema.TaggedError<CompactionTimedOut>()("CompactionTimedOut", {
  threadId: Schema.String,
  turnId: Schema.optional(Schema.String),
  timeoutMs: Schema.Number,
  /** the interrupt was not confirmed within the grace period: the shared client was retired */
  retired: Schema.Boolean,
  /** on a remote connection: the session's binding to the thread was dropped as well */
  detached: Schema.Boolean
}) {
  override get message() {
    const after = `the compaction of thread ${this.threadId} did not finish within ${Math.round(this.timeoutMs / 1000)} s`
    if (!this.retired) return `${after}; it was interrupted`
    return `${after} and its interrupt was not confirmed: the app-server client was retired${
      this.detached ? " and the session's thread binding detached" : ""
    }`
  }
}

/** The app-server connection ended (process exit, crash, retirement) before the compaction turn was terminal. */
export class CompactionClientClosed extends Schema.TaggedError<CompactionClientClosed>()("CompactionClientClosed", {
  threadId: Schema.String,
  cause: Schema.Union(AppServerExited, ConnectionRetired),
  detached: Schema.Boolean
}) {
  override get message() {
    return `the app-server client closed during the compaction of thread ${this.threadId}: ${this.cause.message}`
  }
}

export type CompactionError =
  | NothingToCompact
  | CompactionThreadGone
  | CompactionFailed
  | CompactionTimedOut
  | CompactionClientClosed
  | LeaseError
  | RequestError
  | SessionStoreError
  | InvalidSessionId

// ---- the service ----

export interface CompactOptions {
  /** how long to wait for the compaction turn before interrupting it (default 180 s) */
  readonly timeout?: Duration.DurationInput | undefined
  /** how long an interrupt may take to be confirmed before the client is retired (default 30 s) */
  readonly interruptGrace?: Duration.DurationInput | undefined
}

export interface CompactionLayerOptions extends CompactOptions {
  /** the app-server connection is remote: an unconfirmed stop also detaches the session's thread binding */
  readonly remote?: boolean | undefined
}

export const defaults = { timeout: Duration.seconds(180), interruptGrace: Duration.seconds(30) } as const

export interface CompactionResult {
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string
  /** on the Effect Clock, from thread/compact/start to the terminal state */
  readonly durationMs: number
  /** the compaction item completed, but the turn ended only after the timeout's interrupt */
  readonly afterTimeout: boolean
}

export interface CompactionService {
  readonly compact: (sessionId: string, options?: CompactOptions) => Effect.Effect<CompactionResult, CompactionError>
}

export class Compaction extends Context.Tag("codex-harness/Compaction")<Compaction, CompactionService>() {}

const isClosed = (error: unknown): error is ConnectionClosed => error instanceof AppServerExited || error instanceof ConnectionRetired

/** Codex's answer to an interrupt of a turn that has already ended. */
const isNoActiveTurn = (error: unknown): boolean => error instanceof RpcError && /no active turn/i.test(error.rpcMessage)

interface Terminal {
  readonly status: string
  readonly error: string | undefined
}

/** How the stop after a timeout or a cancellation ended. */
type Stopped = "terminal" | "confirmed" | "noActiveTurn" | "closed" | "unconfirmed"

type Waited =
  | { readonly _tag: "Done"; readonly terminal: Terminal }
  | { readonly _tag: "TimedOut" }
  | { readonly _tag: "Closed"; readonly cause: ConnectionClosed }

interface Loose {
  readonly turnId?: unknown
  readonly turn?: { readonly id?: unknown; readonly status?: unknown; readonly error?: { readonly message?: unknown } | null }
  readonly item?: { readonly type?: unknown }
}

const now = () => new Date().toISOString()

export const make = (options: CompactionLayerOptions = {}) =>
  Effect.gen(function* () {
    const pool = yield* ClientPool
    const store = yield* SessionStore
    const fence = yield* CompactionFence
    const settings = yield* Settings
    const harness = yield* CodexHarness
    const spec = clientSpec(settings)
    const poolKey = "default"
    const remote = options.remote ?? false

    const compact = (sessionId: string, callOptions: CompactOptions = {}) =>
      Effect.gen(function* () {
        const timeout = Duration.decode(callOptions.timeout ?? options.timeout ?? defaults.timeout)
        const grace = Duration.decode(callOptions.interruptGrace ?? options.interruptGrace ?? defaults.interruptGrace)
        const session = yield* store.read(sessionId)
        const state = sessionState(session.records)
        const binding = state.binding
        if (binding === undefined) return yield* new NothingToCompact({ sessionId })
        const threadId = binding.threadId
        const locked = binding.locked === true
        yield* Effect.annotateCurrentSpan({ threadId })

        // the very client the session's turns use; a second client could not see (or stop) the live thread
        const connection: AppServerConnection = yield* pool.lease(poolKey, spec)
        const threadSettings = threadSettingsFor(settings, state)
        yield* connection
          .request("thread/resume", { ...TurnRunner.threadParams(threadSettings, {}, locked), threadId, excludeTurns: true })
          .pipe(
            Effect.catchIf(TurnRunner.isThreadGone, (error) =>
              Effect.fail(new CompactionThreadGone({ sessionId, threadId, reason: error.rpcMessage }))
            )
          )
        yield* fence.hold(threadId)
        // subscribed before the request: the compaction turn's first notifications can beat its answer
        const events = yield* connection.subscribe({ threadId })

        // ---- what Codex reports about the compaction turn ----
        let requested = false
        let accepted: boolean | undefined
        let turnId: string | undefined
        let fromItem = false
        let itemCompleted = false
        let ended: Terminal | undefined
        const known = yield* Deferred.make<void>()
        const done = yield* Deferred.make<Terminal>()
        const identify = (id: string, byItem: boolean) =>
          Effect.suspend(() => {
            if (turnId !== undefined && (fromItem || !byItem)) return Effect.void
            // the turn carrying the contextCompaction item wins over the first turn/started seen
            turnId = id
            fromItem = byItem
            return Deferred.succeed(known, undefined)
          })
        const absorb = (n: NotificationMessage): Effect.Effect<void> =>
          Effect.suspend(() => {
            if (!requested) return Effect.void
            const p = (n.params ?? {}) as Loose
            switch (n.method) {
              case "turn/started":
                return typeof p.turn?.id === "string" ? identify(p.turn.id, false) : Effect.void
              case "item/started":
              case "item/completed": {
                if (p.item?.type !== "contextCompaction" || typeof p.turnId !== "string") return Effect.void
                const id = p.turnId
                return identify(id, true).pipe(
                  Effect.tap(() => {
                    if (n.method === "item/completed" && id === turnId) itemCompleted = true
                  })
                )
              }
              case "turn/completed": {
                if (turnId === undefined || p.turn?.id !== turnId) return Effect.void
                const message = p.turn.error?.message
                ended = {
                  status: typeof p.turn.status === "string" ? p.turn.status : "failed",
                  error: typeof message === "string" ? message : undefined
                }
                return Deferred.succeed(done, ended)
              }
              default:
                return Effect.void
            }
          })
        yield* events.pipe(Stream.runForEach(absorb), Effect.forkScoped)

        // ---- the transcript: started once the turn is known, a terminal status only after a start ----
        let startedRecorded = false
        let terminalRecorded = false
        const append = (record: SessionRecord) =>
          store.append(sessionId, record).pipe(
            Effect.catchAll((error) => Effect.logWarning(`compaction record not written: ${error.message}`)),
            Effect.uninterruptible
          )
        const recordTerminal = (status: "completed" | "failed" | "interrupted") =>
          Effect.suspend(() => {
            if (!startedRecorded || terminalRecorded || turnId === undefined) return Effect.void
            terminalRecorded = true
            return append({ _tag: "compaction", at: now(), threadId, turnId, status }).pipe(
              Effect.zipRight(harness.observe({ type: "after_compaction", sessionId, threadId, turnId, status }))
            )
          })
        /** the transcript status of a compaction turn stopped before its item completed */
        const stoppedStatus = () => (ended?.status === "failed" ? "failed" : "interrupted")
        const detach = (reason: string) =>
          remote
            ? append({ _tag: "detached", at: now(), threadId, reason }).pipe(Effect.as(true))
            : Effect.succeed(false)

        // ---- stopping the compaction turn: interrupt, then a terminal state or a confirmed interrupt within the grace ----
        const retireClient = (reason: string) =>
          // only our client: if it has already ended, the pool replaces it on the next lease by itself, and retiring
          // the key then would kill somebody else's fresh client
          Effect.flatMap(connection.terminationCause, (cause) => (Option.isNone(cause) ? pool.retire(poolKey, reason) : Effect.void))

        const interruptTurn = Effect.gen(function* () {
          yield* Deferred.await(known)
          return yield* connection
            .requestRaw("turn/interrupt", { threadId, turnId }, { timeout: grace })
            .pipe(
              Effect.as<Stopped>("confirmed"),
              Effect.catchAll((error): Effect.Effect<Stopped> =>
                isNoActiveTurn(error)
                  ? Effect.succeed("noActiveTurn")
                  : isClosed(error)
                  ? Effect.succeed("closed")
                  : // not a confirmation: keep waiting for a terminal state until the grace runs out
                    Effect.logWarning(`turn/interrupt of the compaction of ${threadId} failed: ${error.message}`).pipe(
                      Effect.zipRight(Effect.never)
                    )
              )
            )
        })

        const stop = (why: string): Effect.Effect<Stopped> =>
          Effect.gen(function* () {
            if (accepted === false) return "terminal" as const
            const stopped = yield* Effect.raceFirst(
              interruptTurn,
              Effect.raceFirst(Deferred.await(done).pipe(Effect.as<Stopped>("terminal")), connection.terminated.pipe(Effect.as<Stopped>("closed")))
            ).pipe(
              // this may run while the caller is being interrupted (uninterruptible): the grace must still cut it short
              Effect.interruptible,
              Effect.timeoutTo({ duration: grace, onTimeout: (): Stopped => "unconfirmed", onSuccess: (s) => s })
            )
            if (stopped === "noActiveTurn" && !itemCompleted) {
              // the turn is over; its last notifications may still be on their way to us
              yield* Deferred.await(done).pipe(Effect.interruptible, Effect.timeoutOption(grace))
            }
            if (stopped === "unconfirmed") {
              const reason = `the compaction of thread ${threadId} was not confirmed stopped within ${Duration.format(grace)} of turn/interrupt (${why})`
              yield* Effect.logWarning(reason)
              // before the fence opens (the scope's finalizers): turns queued behind it must not reach this client
              yield* retireClient(reason)
            }
            return stopped
          })

        // ---- the operation ----
        const startedAt = yield* Clock.currentTimeMillis
        const run = Effect.gen(function* () {
          const waited = yield* Effect.gen(function* () {
            requested = true
            const answer = yield* connection.request("thread/compact/start", { threadId }).pipe(Effect.either)
            if (answer._tag === "Left") {
              const error = answer.left
              if (isClosed(error)) return { _tag: "Closed", cause: error } as Waited
              if (error instanceof RpcError) {
                accepted = false
                return yield* new CompactionFailed({ threadId, status: "rejected", message: error.rpcMessage })
              }
              // no answer: Codex may be compacting all the same, so this is stopped like a timeout
              yield* Effect.logWarning(`thread/compact/start of ${threadId}: ${error.message}`)
              return { _tag: "TimedOut" } as Waited
            }
            accepted = true
            yield* Deferred.await(known)
            yield* append({ _tag: "compaction", at: now(), threadId, turnId: turnId!, status: "started" })
            yield* harness.observe({ type: "before_compaction", sessionId, threadId, turnId: turnId! })
            startedRecorded = true
            yield* harness.trackTurn(sessionId, { connection, threadId, turnId: turnId! })
            return { _tag: "Done", terminal: yield* Deferred.await(done) } as Waited
          }).pipe(
            Effect.raceFirst(connection.terminated.pipe(Effect.map((cause): Waited => ({ _tag: "Closed", cause })))),
            Effect.timeoutTo({ duration: timeout, onTimeout: (): Waited => ({ _tag: "TimedOut" }), onSuccess: (w) => w })
          )

          const finish = (afterTimeout: boolean) =>
            Effect.gen(function* () {
              yield* recordTerminal("completed")
              const durationMs = (yield* Clock.currentTimeMillis) - startedAt
              return { sessionId, threadId, turnId: turnId!, durationMs, afterTimeout } satisfies CompactionResult
            })

          switch (waited._tag) {
            case "Done": {
              const { error, status } = waited.terminal
              if (itemCompleted) return yield* finish(false)
              yield* recordTerminal(status === "interrupted" ? "interrupted" : "failed")
              return yield* new CompactionFailed({
                threadId,
                turnId,
                status,
                message:
                  error ??
                  (status === "completed"
                    ? `the compaction turn of thread ${threadId} ended without a contextCompaction item`
                    : `the compaction turn of thread ${threadId} ended ${status}`)
              })
            }
            case "Closed": {
              yield* recordTerminal("failed")
              const detached = yield* detach(`the app-server connection closed during compaction: ${waited.cause.message}`)
              return yield* new CompactionClientClosed({ threadId, cause: waited.cause, detached })
            }
            case "TimedOut": {
              const stopped = yield* stop("timeout")
              if (stopped === "closed") {
                const cause = Option.getOrElse(yield* connection.terminationCause, () => new ConnectionRetired({ reason: "closed" }))
                yield* recordTerminal("failed")
                const detached = yield* detach(`the app-server connection closed during compaction: ${cause.message}`)
                return yield* new CompactionClientClosed({ threadId, cause, detached })
              }
              if (itemCompleted && stopped !== "unconfirmed") return yield* finish(true)
              const retired = stopped === "unconfirmed"
              yield* recordTerminal(retired ? "failed" : stoppedStatus())
              const detached = retired ? yield* detach("the compaction's interrupt was not confirmed") : false
              return yield* new CompactionTimedOut({ threadId, turnId, timeoutMs: Duration.toMillis(timeout), retired, detached })
            }
          }
        })

        return yield* run.pipe(
          // the caller gave up: stop the turn (best effort, bounded by the grace), then the finalizers release the
          // subscription, the fence and the lease
          Effect.onInterrupt(() =>
            requested
              ? stop("cancelled").pipe(
                Effect.flatMap((stopped) =>
                  stopped === "unconfirmed"
                    ? recordTerminal("failed").pipe(Effect.zipRight(detach("a cancelled compaction's interrupt was not confirmed")))
                    : recordTerminal(itemCompleted && stopped !== "closed" ? "completed" : stopped === "closed" ? "failed" : stoppedStatus())
                )
              )
              : Effect.void
          )
        )
      }).pipe(
        Effect.scoped,
        Effect.annotateLogs({ sessionId }),
        Effect.withSpan("Compaction.compact", { attributes: { sessionId } })
      )

    return { compact } satisfies CompactionService
  })

export const layer = (
  options: CompactionLayerOptions = {}
): Layer.Layer<Compaction, never, ClientPool | SessionStore | CompactionFence | Settings | CodexHarness> =>
  Layer.effect(Compaction, make(options))
