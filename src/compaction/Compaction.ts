// Manual native compaction (S37): `thread/compact/start` on the session's bound thread, over the connection its
// recorded runtime leases (the shared client its turns use; a supervised chat's private one), holding that lease and the thread's compaction fence until Codex reports the compaction turn terminal or
// confirms an interrupt. Past the timeout it interrupts; without confirmation within the grace period it retires the
// client before the fence opens (and, on a remote connection, detaches the binding). It never compacts anything itself:
// no preflight, no fallback summary, and the transcript gets the start and terminal status only (S39).
import { Clock, Context, Data, Duration, Effect, Layer, Option, Ref, Stream, SubscriptionRef } from "effect"
import { AppServerExited, type ConnectionClosed, ConnectionRetired, RpcError } from "../appserver/errors.js"
import { SessionRuntime } from "../session/SessionRuntime.js"
import { SessionStore } from "../session/SessionStore.js"
import { TranscriptMirror } from "../session/TranscriptMirror.js"
import { SupervisedThreadGone } from "../session/errors.js"
import { ThreadOpener } from "../threads/ThreadOpener.js"
import { LifecycleBus } from "../turn/LifecycleBus.js"
import type { LiveTurn } from "../turn/TurnEvent.js"
import * as TurnRunner from "../turn/TurnRunner.js"
import { CompactionFence } from "./CompactionFence.js"
import * as CompactionProgress from "./CompactionProgress.js"
import {
  CompactionClientClosed,
  type CompactionError,
  CompactionFailed,
  CompactionThreadGone,
  CompactionTimedOut,
  NothingToCompact
} from "./errors.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export * from "./errors.js"

export interface CompactOptions {
  /** how long to wait for the compaction turn before interrupting it (default 180 s) */
  readonly timeout?: Duration.DurationInput | undefined
  /** how long an interrupt may take to be confirmed before the client is retired (default 30 s) */
  readonly interruptGrace?: Duration.DurationInput | undefined
  /** told once Codex has started the compaction turn: the session's work registry keeps it as the session's live turn */
  readonly onStarted?: ((turn: LiveTurn) => Effect.Effect<void>) | undefined
}

export interface CompactionLayerOptions extends CompactOptions {
  /** treat the connection as remote (an unconfirmed stop also detaches the session's thread binding); default: from
   * the session's recorded runtime (stdio is local) */
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

/** The thread was taken as loaded on the connection and Codex says it is not: the compaction is attempted once more. */
class StaleThread extends Data.TaggedError("StaleThread")<{ readonly threadId: string; readonly reason: string }> {}

const isClosed = (error: unknown): error is ConnectionClosed => error instanceof AppServerExited || error instanceof ConnectionRetired

/** Codex's answer to an interrupt of a turn that has already ended. */
const isNoActiveTurn = (error: unknown): boolean => error instanceof RpcError && /no active turn/i.test(error.rpcMessage)

/** How the stop after a timeout or a cancellation ended. */
type Stopped = "terminal" | "confirmed" | "noActiveTurn" | "closed" | "unconfirmed"

type Waited =
  | { readonly _tag: "Done"; readonly terminal: CompactionProgress.Terminal }
  | { readonly _tag: "TimedOut" }
  | { readonly _tag: "Closed"; readonly cause: ConnectionClosed }

export const make = (options: CompactionLayerOptions = {}) =>
  Effect.gen(function* () {
    const runtimes = yield* SessionRuntime
    const store = yield* SessionStore
    const mirror = yield* TranscriptMirror
    const fence = yield* CompactionFence
    const bus = yield* LifecycleBus
    const opener = yield* ThreadOpener

    const attempt = (sessionId: string, callOptions: CompactOptions) =>
      Effect.gen(function* () {
        const timeout = Duration.decode(callOptions.timeout ?? options.timeout ?? defaults.timeout)
        const grace = Duration.decode(callOptions.interruptGrace ?? options.interruptGrace ?? defaults.interruptGrace)
        yield* store.hold(sessionId)
        const { contents, state } = yield* mirror.read(sessionId)
        const binding = state.binding
        if (binding === undefined) return yield* new NothingToCompact({ sessionId })
        const threadId = binding.threadId
        yield* Effect.annotateCurrentSpan({ threadId })

        // the very client the session's turns use (its recorded runtime), and the thread opened as a turn opens it: a
        // compaction that is the first to load the thread would otherwise fix it without the harness's instructions,
        // hooks and tools, and Codex rebuilds the compacted context from what loaded it
        const opened = yield* opener.open({ sessionId, state, records: contents.records, kind: "user", mayStartFresh: false }).pipe(
          Effect.catchIf(
            (error): error is RpcError | SupervisedThreadGone =>
              error._tag === "SupervisedThreadGone" || (error instanceof RpcError && TurnRunner.isThreadGone(error)),
            (error) =>
              Effect.fail(new CompactionThreadGone({ sessionId, threadId, reason: error instanceof RpcError ? error.rpcMessage : error.reason }))
          )
        )
        const { connection, runtime } = opened
        const remote = options.remote ?? runtime.transport !== "stdio"
        yield* fence.hold(threadId)
        // ---- what Codex reports about the compaction turn: a fold of the thread's notifications from the request on ----
        const phase = yield* Ref.make<"before" | "requested" | "accepted" | "rejected">("before")
        const progress = yield* SubscriptionRef.make(CompactionProgress.initial)
        // watching before the request: the compaction turn's first notifications can beat its answer
        yield* connection.forEachNotification({ threadId }, (n) =>
          Effect.flatMap(Ref.get(phase), (now) =>
            now === "before" ? Effect.void : SubscriptionRef.update(progress, (p) => CompactionProgress.absorb(p, n))))
        const awaitProgress = <A>(pick: (p: CompactionProgress.CompactionProgress) => A | undefined): Effect.Effect<A> =>
          progress.changes.pipe(
            Stream.filterMap((p) => Option.fromNullable(pick(p))),
            Stream.runHead,
            Effect.flatMap(Option.match({ onNone: () => Effect.never, onSome: Effect.succeed }))
          )
        const known = awaitProgress((p) => p.turnId)
        const done = awaitProgress((p) => p.ended)
        const current = SubscriptionRef.get(progress)

        // ---- the transcript: started once the turn is known, a terminal status only after a start, each once ----
        const recorded = yield* Ref.make<"nothing" | "started" | "terminal">("nothing")
        const written = (what: Effect.Effect<void, unknown>) =>
          what.pipe(
            Effect.catchAll((error) => HarnessLog.warning(`compaction record not written: ${error instanceof Error ? error.message : String(error)}`)),
            Effect.uninterruptible
          )
        const recordStarted = (turnId: string) =>
          // marked first: should the connection close while the record is written, its terminal status still follows
          Ref.set(recorded, "started").pipe(Effect.zipRight(written(mirror.compaction(sessionId, { threadId, turnId }, "started"))))
        const recordTerminal = (status: "completed" | "failed" | "interrupted") =>
          Effect.gen(function* () {
            const { turnId } = yield* current
            const first = yield* Ref.modify(recorded, (r) => [r === "started", r === "started" ? "terminal" as const : r])
            if (!first || turnId === undefined) return
            yield* written(mirror.compaction(sessionId, { threadId, turnId }, status))
            yield* bus.observe({ type: "after_compaction", sessionId, threadId, turnId, status })
          })
        /** the transcript status of a compaction turn stopped before its item completed */
        const stoppedStatus = Effect.map(current, (p) => (p.ended?.status === "failed" ? "failed" as const : "interrupted" as const))
        const detach = (reason: string) =>
          remote
            ? written(mirror.detached(sessionId, threadId, reason)).pipe(Effect.as(true))
            : Effect.succeed(false)

        // ---- stopping the compaction turn: interrupt, then a terminal state or a confirmed interrupt within the grace ----
        const retireClient = (reason: string) =>
          // only our client: if it has already ended, the pool replaces it on the next lease by itself, and retiring
          // the key then would kill somebody else's fresh client
          Effect.flatMap(connection.terminationCause, (cause) => (Option.isNone(cause) ? runtimes.retire(runtime, reason) : Effect.void))

        const interruptTurn = Effect.gen(function* () {
          const turnId = yield* known
          return yield* connection
            .request("turn/interrupt", { threadId, turnId }, { timeout: grace })
            .pipe(
              Effect.as<Stopped>("confirmed"),
              Effect.catchAll((error): Effect.Effect<Stopped> =>
                isNoActiveTurn(error)
                  ? Effect.succeed("noActiveTurn")
                  : isClosed(error)
                  ? Effect.succeed("closed")
                  : // not a confirmation: keep waiting for a terminal state until the grace runs out
                    HarnessLog.warning(`turn/interrupt of the compaction of ${threadId} failed: ${error.message}`).pipe(
                      Effect.zipRight(Effect.never)
                    )
              )
            )
        })

        const stop = (why: string): Effect.Effect<Stopped> =>
          Effect.gen(function* () {
            if ((yield* Ref.get(phase)) === "rejected") return "terminal" as const
            const stopped = yield* Effect.raceFirst(
              interruptTurn,
              Effect.raceFirst(done.pipe(Effect.as<Stopped>("terminal")), connection.terminated.pipe(Effect.as<Stopped>("closed")))
            ).pipe(
              // this may run while the caller is being interrupted (uninterruptible): the grace must still cut it short
              Effect.interruptible,
              Effect.timeoutTo({ duration: grace, onTimeout: (): Stopped => "unconfirmed", onSuccess: (s) => s })
            )
            if (stopped === "noActiveTurn" && !(yield* current).itemCompleted) {
              // the turn is over; its last notifications may still be on their way to us
              yield* done.pipe(Effect.interruptible, Effect.timeoutOption(grace))
            }
            if (stopped === "unconfirmed") {
              const reason = `the compaction of thread ${threadId} was not confirmed stopped within ${Duration.format(grace)} of turn/interrupt (${why})`
              yield* HarnessLog.warning(reason)
              // before the fence opens (the scope's finalizers): turns queued behind it must not reach this client
              yield* retireClient(reason)
            }
            return stopped
          })

        // ---- the operation ----
        const startedAt = yield* Clock.currentTimeMillis
        const run = Effect.gen(function* () {
          const waited = yield* Effect.gen(function* () {
            yield* Ref.set(phase, "requested")
            const answer = yield* connection.request("thread/compact/start", { threadId }).pipe(Effect.either)
            if (answer._tag === "Left") {
              const error = answer.left
              if (isClosed(error)) return { _tag: "Closed", cause: error } as Waited
              if (error instanceof RpcError) {
                yield* Ref.set(phase, "rejected")
                if (opened.thread.reused === true && TurnRunner.isThreadGone(error)) {
                  // taken as loaded, but Codex has let it go meanwhile: opened again, once, by the next attempt
                  return yield* Effect.zipRight(opened.forget, Effect.fail(new StaleThread({ threadId, reason: error.rpcMessage })))
                }
                return yield* new CompactionFailed({ threadId, status: "rejected", message: error.rpcMessage })
              }
              // no answer: Codex may be compacting all the same, so this is stopped like a timeout
              yield* HarnessLog.warning(`thread/compact/start of ${threadId}: ${error.message}`)
              return { _tag: "TimedOut" } as Waited
            }
            yield* Ref.set(phase, "accepted")
            const turnId = yield* known
            yield* recordStarted(turnId)
            yield* bus.observe({ type: "before_compaction", sessionId, threadId, turnId })
            if (callOptions.onStarted !== undefined) yield* callOptions.onStarted({ connection, threadId, turnId })
            return { _tag: "Done", terminal: yield* done } as Waited
          }).pipe(
            Effect.raceFirst(connection.terminated.pipe(Effect.map((cause): Waited => ({ _tag: "Closed", cause })))),
            Effect.timeoutTo({ duration: timeout, onTimeout: (): Waited => ({ _tag: "TimedOut" }), onSuccess: (w) => w })
          )

          const finish = (afterTimeout: boolean) =>
            Effect.gen(function* () {
              yield* recordTerminal("completed")
              const durationMs = (yield* Clock.currentTimeMillis) - startedAt
              const { turnId } = yield* current
              // finished only once the compaction item completed, so its turn is known
              return { sessionId, threadId, turnId: turnId!, durationMs, afterTimeout } satisfies CompactionResult
            })

          switch (waited._tag) {
            case "Done": {
              const { error, status } = waited.terminal
              const { itemCompleted, turnId } = yield* current
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
              const { itemCompleted, turnId } = yield* current
              if (itemCompleted && stopped !== "unconfirmed") return yield* finish(true)
              const retired = stopped === "unconfirmed"
              yield* recordTerminal(retired ? "failed" : yield* stoppedStatus)
              const detached = retired ? yield* detach("the compaction's interrupt was not confirmed") : false
              return yield* new CompactionTimedOut({ threadId, turnId, timeoutMs: Duration.toMillis(timeout), retired, detached })
            }
          }
        })

        return yield* run.pipe(
          // the caller gave up: stop the turn (best effort, bounded by the grace), then the finalizers release the
          // subscription, the fence and the lease
          Effect.onInterrupt(() =>
            Effect.flatMap(Ref.get(phase), (now) =>
              now === "before"
                ? Effect.void
                : stop("cancelled").pipe(
                  Effect.flatMap((stopped) =>
                    stopped === "unconfirmed"
                      ? recordTerminal("failed").pipe(Effect.zipRight(detach("a cancelled compaction's interrupt was not confirmed")))
                      : Effect.flatMap(current, ({ itemCompleted }) =>
                        stopped === "closed"
                          ? recordTerminal("failed")
                          : itemCompleted
                          ? recordTerminal("completed")
                          : Effect.flatMap(stoppedStatus, recordTerminal))
                  )
                ))
          )
        )
      }).pipe(Effect.scoped)

    const compact = (sessionId: string, callOptions: CompactOptions = {}) =>
      attempt(sessionId, callOptions).pipe(
        // the second attempt resumes the thread (nothing is taken as loaded any more), so it cannot be stale again
        Effect.catchTag("StaleThread", () => attempt(sessionId, callOptions)),
        Effect.catchTag("StaleThread", (stale) =>
          Effect.fail(new CompactionThreadGone({ sessionId, threadId: stale.threadId, reason: stale.reason }))),
        Effect.annotateLogs({ sessionId }),
        Effect.withSpan("Compaction.compact", { attributes: { sessionId } })
      )

    return { compact } satisfies CompactionService
  })

export const layer = (
  options: CompactionLayerOptions = {}
): Layer.Layer<
  Compaction,
  never,
  SessionRuntime | SessionStore | TranscriptMirror | CompactionFence | LifecycleBus | ThreadOpener
> =>
  Layer.effect(Compaction, make(options))
