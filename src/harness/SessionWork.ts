// The one registry of the sessions' live work in this process: per session, its message queue (S35) and its running
// turn or manual compaction. Every front end submits here (`run`, `chat`, serve's control API and the Control UI, the
// cluster's session entity), so a message that arrives while a turn runs is steered into it (`steer`: batched over a
// quiet window into ONE turn/steer), or queued for after it (`followup`: a turn each; `collect`: one turn for all),
// however it arrived. Steer, interrupt, the archive guard's owner check, `serve`'s drain and its health read it.
//
// It never drops a message silently: every message ends in a turn (its own, a later one, or the running one it was
// steered into) or, when explicitly cancelled, drained or the layer closes, its waiters are interrupted. A turn that
// refuses steering keeps its messages for ONE next turn. State exists only for sessions with a run or a queue; every
// fiber belongs to the layer's scope (FiberMaps for each session's driver, run and quiet-window timer, a FiberSet for
// flushes), and every waiter is a Deferred completed through Effect.
import { Deferred, Duration, Effect, Exit, Fiber, FiberId, FiberMap, FiberSet, Layer, Option } from "effect"
import type { QueueMode } from "../../schemas/config.js"
import { Compaction, type CompactionError, type CompactionResult, type CompactOptions } from "../compaction/Compaction.js"
import { NewThreadRefused } from "../session/errors.js"
import type { EventSink } from "../turn/TurnEvent.js"
import { CodexHarness, type HarnessError, type SteerOutcome, type TurnRequest, type TurnResult } from "./CodexHarness.js"
import {
  type Carried,
  defaultMaxQueued,
  defaultQuietWindow,
  QueueFull,
  type QueuedMessage,
  type RunOwner,
  SessionBusy,
  SessionWork,
  type SessionWorkOptions,
  type SessionWorkService,
  ShuttingDown,
  type Submitted,
  type SubmitOptions
} from "./SessionWorkApi.js"
import type { Message, Run, SessionState } from "./SessionWorkState.js"
import { none as noObserver, type RunStart, WorkObserver } from "./WorkObserver.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export * from "./SessionWorkApi.js"

const joinTexts = (messages: ReadonlyArray<Message>) => messages.map((m) => m.text).join("\n\n")
const bySeq = (a: Message, b: Message) => a.seq - b.seq
/** a message's end, told to its sender's `onEnded` on a fiber of its own (the registry never waits on a sender) */
type Ended = (message: Message, exit: Exit.Exit<TurnResult, HarnessError>) => Effect.Effect<void>

type FlushOutcome = SteerOutcome | { readonly _tag: "Failed" }

export const make = (options: SessionWorkOptions = {}) =>
  Effect.gen(function* () {
    const harness = yield* CodexHarness
    const compaction = yield* Compaction
    const observer = yield* WorkObserver
    const defaultMode: QueueMode = options.mode ?? "steer"
    const quietWindow = Duration.decode(options.quietWindow ?? defaultQuietWindow)
    const maxQueued = options.maxQueued ?? defaultMaxQueued

    const sessions = new Map<string, SessionState>()
    // only modes that differ from the default, so a session that never used `/queue` leaves nothing behind
    const modes = new Map<string, QueueMode>()
    let nextSeq = 0
    let nextRunId = 1
    let closed = false
    let draining = false
    // completed (and replaced) each time the last session goes idle, so a drain waits on a receipt
    let allIdle = yield* Deferred.make<void>()

    // registered before the fibers' maps, so it runs after every fiber is gone: whoever still waits is interrupted
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const states = [...sessions.values()]
        sessions.clear()
        return Effect.forEach(states, (state) => settle(state, [...state.pending, ...(state.run?.messages ?? [])]), { discard: true })
      })
    )
    const ended: Ended = (message, exit) =>
      message.options.onEnded === undefined
        ? Effect.void
        : FiberSet.run(flushes, message.options.onEnded(exit).pipe(Effect.catchAllCause((cause) => HarnessLog.warning("onEnded failed", cause)))).pipe(
          Effect.asVoid
        )
    const interruptMessage = (message: Message) =>
      Deferred.interrupt(message.reply).pipe(
        Effect.zipRight(Deferred.interrupt(message.carried)),
        Effect.zipRight(ended(message, Exit.interrupt(FiberId.none))),
        Effect.asVoid
      )
    const settle = (state: SessionState, messages: ReadonlyArray<Message>) =>
      Effect.forEach(messages, interruptMessage, { discard: true }).pipe(Effect.zipRight(Deferred.done(state.idle, Exit.void)))

    // per session: its driver (one run after the other), its running run and its quiet-window timer; a new timer for
    // a session replaces (interrupts) the previous one. Flushes get fibers of their own.
    const drivers = yield* FiberMap.make<string>()
    const runs = yield* FiberMap.make<string, unknown, unknown>()
    const timers = yield* FiberMap.make<string>()
    const flushes = yield* FiberSet.make()

    const modeOf = (sessionId: string) => modes.get(sessionId) ?? defaultMode

    const forget = (state: SessionState) =>
      Effect.gen(function* () {
        yield* FiberMap.remove(timers, state.sessionId)
        if (sessions.get(state.sessionId) === state) sessions.delete(state.sessionId)
        yield* Deferred.done(state.idle, Exit.void)
        if (sessions.size === 0) {
          yield* Deferred.succeed(allIdle, undefined)
          allIdle = yield* Deferred.make<void>()
        }
      })

    /** a run's effect, watched: the observer sees its start, each event, its recorded end and its end (nothing is wrapped without one) */
    const observed = <A, E>(start: RunStart, run: (watch: EventSink | undefined, recorded: Effect.Effect<void>) => Effect.Effect<A, E>) =>
      observer === noObserver
        ? run(undefined, Effect.void)
        : observer.runStarted(start).pipe(
          Effect.zipRight(run((event) => observer.event(start.sessionId, start.runId, event), observer.runRecorded(start))),
          Effect.onExit((exit) => observer.runEnded(start, exit))
        )

    /** the run's messages that asked to hear of its recorded end, told together on the run's fiber (each bounds its wait) */
    const tellRecorded = (run: Run, result: TurnResult) =>
      Effect.forEach(run.messages, (m) => m.options.onRecorded?.(result) ?? Effect.void, { concurrency: "unbounded", discard: true })

    /** Takes the next group of waiting messages and starts its run; forgets the state when nothing waits. Under the lock. */
    const startNext = (state: SessionState): Effect.Effect<void> =>
      Effect.gen(function* () {
        state.run = undefined
        const head = state.pending[0]
        if (head === undefined) return yield* forget(state)
        // followup: one message; steer (batched or held) and collect: the consecutive messages of that mode
        let count = 1
        if (head.mode !== "followup") {
          while (count < state.pending.length && state.pending[count]!.mode === head.mode) count++
        }
        const group = state.pending.splice(0, count)
        const prompt = joinTexts(group)
        const started = yield* Deferred.make<void>()
        const { approvals, collaboration, kind, model, onEvent } = head.options
        const start: RunStart = { sessionId: state.sessionId, runId: nextRunId++, kind: "turn", turnKind: kind, approvals }
        for (const message of group) yield* Deferred.succeed(message.carried, { _tag: "Turn", prompt, runId: start.runId } as Carried)
        const run: Run = { start, messages: group, started, live: undefined, steerable: true, fiber: undefined, over: false }
        state.run = run
        const turn = observed(start, (watch, recorded) =>
          harness.runTurn({
            sessionId: state.sessionId,
            prompt,
            ...(model !== undefined ? { model } : {}),
            ...(collaboration !== undefined ? { collaboration } : {}),
            ...(kind !== undefined ? { kind } : {}),
            onLive: (live) => Effect.sync(() => void (run.live = live)),
            onRecorded: (result) => Effect.zipRight(recorded, tellRecorded(run, result)),
            onEvent: (event) => {
              const seen = event._tag === "TurnStarted" ? Deferred.succeed(started, undefined) : Effect.void
              const watched = watch === undefined ? seen : Effect.zipRight(seen, watch(event))
              return onEvent === undefined ? watched : Effect.zipRight(watched, onEvent(event))
            }
          }))
        run.fiber = yield* FiberMap.run(
          runs,
          state.sessionId,
          turn.pipe(
            Effect.ensuring(Deferred.succeed(started, undefined)),
            Effect.withSpan("SessionWork.run", { attributes: { sessionId: state.sessionId, messages: group.length } })
          )
        )
      })

    /** One session's runs, one after the other, until nothing waits. */
    const drive = (state: SessionState, first: boolean): Effect.Effect<void> =>
      Effect.gen(function* () {
        if (first) yield* state.lock.withPermits(1)(startNext(state))
        while (state.run !== undefined) {
          const run = state.run
          const exit = yield* run.fiber!.await
          run.over = true
          yield* state.lock.withPermits(1)(
            Effect.forEach(run.messages, (message) => {
              const result = exit as Exit.Exit<TurnResult, HarnessError>
              return Deferred.done(message.reply, result).pipe(Effect.zipRight(ended(message, result)))
            }, { discard: true }).pipe(Effect.zipRight(startNext(state)))
          )
        }
      }).pipe(Effect.annotateLogs({ sessionId: state.sessionId }))

    /** Sends the session's waiting steer messages into the running turn as one turn/steer, once that turn has started. */
    const flush = (state: SessionState): Effect.Effect<void> =>
      state.lock.withPermits(1)(
        Effect.gen(function* () {
          const run = state.run
          if (run === undefined) return
          // the run cannot change while the lock is held; a run that ends without a turn completes `started` too
          yield* Deferred.await(run.started)
          if (!run.steerable || run.live === undefined) return
          const batch = state.pending.filter((m) => m.mode === "steer")
          if (batch.length === 0) return
          state.pending = state.pending.filter((m) => m.mode !== "steer")
          const keep = () => {
            state.pending = [...state.pending, ...batch].sort(bySeq)
          }
          const live = run.live
          const outcome = yield* harness.steer(state.sessionId, live, batch.map((m) => m.text)).pipe(
            Effect.catchAll((error): Effect.Effect<FlushOutcome> =>
              error._tag === "SessionStoreError" || error._tag === "InvalidSessionId"
                ? // the steer went through; only its transcript record failed
                  HarnessLog.warning(`steered, but not recorded: ${error.message}`).pipe(
                    Effect.as({ _tag: "Steered" as const, turnId: live.turnId })
                  )
                : HarnessLog.warning(`turn/steer failed, the messages wait for the next turn: ${error.message}`).pipe(
                  Effect.as({ _tag: "Failed" as const })
                )
            )
          )
          switch (outcome._tag) {
            case "Steered":
              for (const message of batch) {
                yield* Deferred.succeed(message.carried, { _tag: "Steered", turnId: outcome.turnId, runId: run.start.runId } as Carried)
              }
              run.messages.push(...batch)
              return
            case "NotSteerable":
              yield* HarnessLog.debug(`the running turn refuses steering (${outcome.reason}); the messages wait for it to end`)
              run.steerable = false
              return keep()
            case "NoActiveTurn":
            case "Failed":
              // the turn just ended (or the steer did not land): the driver starts the next turn with them
              return keep()
          }
        })
      ).pipe(Effect.annotateLogs({ sessionId: state.sessionId }), Effect.withSpan("SessionWork.flush"))

    // the flush gets its own fiber: a later message restarting the window must not interrupt a turn/steer
    const restartWindow = (state: SessionState) =>
      FiberMap.run(timers, state.sessionId, Effect.sleep(quietWindow).pipe(Effect.zipRight(FiberSet.run(flushes, flush(state))))).pipe(
        Effect.asVoid
      )

    /** a message that answered the running turn's question: carried at once, its reply is that turn's */
    const answered = (run: Run, mode: QueueMode): Submitted => ({
      seq: nextSeq++,
      disposition: "answer",
      mode,
      carried: Effect.succeed({ _tag: "Answered", runId: run.start.runId }),
      reply: run.messages[0] === undefined ? Effect.interrupt : Deferred.await(run.messages[0].reply)
    })

    /** a fresh state for a session that has none, with its driver started (or not, for a compaction run) */
    const newState = (sessionId: string) =>
      Effect.gen(function* () {
        const idle = yield* Deferred.make<void>()
        const lock = yield* Effect.makeSemaphore(1)
        return { sessionId, pending: [], run: undefined, lock, idle } as SessionState
      })

    // during a turn, a pending question takes the message first (S33); when nothing took it, it is queued as usual
    const submit = (sessionId: string, text: string, submitOptions: SubmitOptions = {}) =>
      Effect.suspend((): Effect.Effect<Submitted, QueueFull | ShuttingDown> => {
        if (draining) return Effect.fail(new ShuttingDown({ sessionId }))
        const run = sessions.get(sessionId)?.run
        if (run === undefined || run.start.kind !== "turn" || closed) return enqueue(sessionId, text, submitOptions)
        return Effect.flatMap(harness.answer(sessionId, text), (taken) =>
          taken ? Effect.succeed(answered(run, modeOf(sessionId))) : enqueue(sessionId, text, submitOptions))
      }).pipe(Effect.withSpan("SessionWork.submit", { attributes: { sessionId } }))

    const enqueue = (sessionId: string, text: string, submitOptions: SubmitOptions) =>
      Effect.gen(function* () {
        // made first: what follows checks and changes the session's state in one synchronous step
        const reply = yield* Deferred.make<TurnResult, HarnessError>()
        const carried = yield* Deferred.make<Carried>()
        const fresh = yield* newState(sessionId)
        if (closed) return yield* Effect.interrupt
        if (draining) return yield* new ShuttingDown({ sessionId })
        const existing = sessions.get(sessionId)
        if (existing !== undefined && existing.pending.length >= maxQueued) {
          return yield* new QueueFull({ sessionId, limit: maxQueued })
        }
        const mode = modeOf(sessionId)
        const message: Message = { seq: nextSeq++, text, mode, options: submitOptions, reply, carried }
        let disposition: Submitted["disposition"]
        if (existing === undefined) {
          fresh.pending.push(message)
          sessions.set(sessionId, fresh)
          yield* FiberMap.run(drivers, sessionId, drive(fresh, true))
          disposition = "start"
        } else {
          existing.pending.push(message)
          disposition = mode === "steer" && existing.run?.start.kind === "turn" ? "steer" : "queue"
          if (disposition === "steer") yield* restartWindow(existing)
        }
        return {
          seq: message.seq,
          disposition,
          mode,
          carried: Deferred.await(carried),
          reply: Deferred.await(reply)
        } satisfies Submitted
      }).pipe(
        // nothing here waits; a caller interrupted half-way must not leave a message queued that it was never told of
        Effect.uninterruptible
      )

    /**
     * `work` as the session's run once it has none: when it runs or queues anything, `busy` answers (or, with "wait",
     * it waits until the session is idle). The caller going away (Ctrl-C at `/compact`, an interrupted `runTurn`)
     * stops the run, as when it ran in the caller's fiber; `interrupt` stops it too, and then the caller is interrupted.
     */
    const exclusive = <A, E, B>(
      sessionId: string,
      kind: RunStart["kind"],
      busy: Effect.Effect<never, B> | "wait",
      work: (run: Run, watch: EventSink | undefined) => Effect.Effect<A, E>
    ): Effect.Effect<A, E | B | ShuttingDown> =>
      Effect.gen(function* () {
        const result = yield* Deferred.make<A, E>()
        const fresh = yield* newState(sessionId)
        if (closed) return yield* Effect.interrupt
        if (draining) return yield* new ShuttingDown({ sessionId })
        const existing = sessions.get(sessionId)
        if (existing !== undefined) {
          // a run that has just ended (its sender already has the reply) and nothing queued: the state is about to go
          const ending = existing.pending.length === 0 && (existing.run === undefined || existing.run.over)
          if (!ending && busy !== "wait") return yield* busy
          return yield* Deferred.await(existing.idle).pipe(Effect.zipRight(exclusive(sessionId, kind, busy, work)))
        }
        const started = yield* Deferred.make<void>()
        const start: RunStart = { sessionId, runId: nextRunId++, kind }
        const run: Run = { start, messages: [], started, live: undefined, steerable: kind === "turn", fiber: undefined, over: false }
        fresh.run = run
        sessions.set(sessionId, fresh)
        const body = observed(start, (watch) => work(run, watch)).pipe(
          // over before the caller hears: an `interrupt` that follows finds nothing running
          Effect.onExit((exit) => Effect.zipRight(Effect.sync(() => void (run.over = true)), Deferred.done(result, exit))),
          Effect.ensuring(Deferred.succeed(started, undefined))
        )
        run.fiber = yield* FiberMap.run(runs, sessionId, body)
        yield* FiberMap.run(drivers, sessionId, drive(fresh, false))
        return yield* Deferred.await(result).pipe(Effect.onInterrupt(() => Fiber.interrupt(run.fiber!)))
      })

    /** a manual compaction (S37) as the session's run: refused while the session runs or queues anything */
    const compact = (sessionId: string, compactOptions: CompactOptions = {}): Effect.Effect<CompactionResult, CompactionError | SessionBusy | ShuttingDown> =>
      exclusive(sessionId, "compaction", Effect.fail(new SessionBusy({ sessionId, what: "compact it" })), (run) =>
        compaction.compact(sessionId, {
          ...compactOptions,
          onStarted: (live) =>
            Effect.sync(() => void (run.live = live)).pipe(
              Effect.zipRight(Deferred.succeed(run.started, undefined)),
              Effect.zipRight(compactOptions.onStarted?.(live) ?? Effect.void)
            )
        })).pipe(Effect.withSpan("SessionWork.compact", { attributes: { sessionId } }))

    /** one turn as the session's run, after whatever the session runs or queues now; `interrupt` stops it */
    const runTurn = (request: TurnRequest): Effect.Effect<TurnResult, HarnessError | ShuttingDown> =>
      exclusive<TurnResult, HarnessError, never>(request.sessionId, "turn", "wait", (run, watch) =>
        harness.runTurn({
          ...request,
          onLive: (live) => Effect.sync(() => void (run.live = live)),
          onEvent: (event) => {
            const seen = event._tag === "TurnStarted" ? Deferred.succeed(run.started, undefined) : Effect.void
            const watched = watch === undefined ? seen : Effect.zipRight(seen, watch(event))
            return request.onEvent === undefined ? watched : Effect.zipRight(watched, request.onEvent(event))
          }
        })).pipe(Effect.withSpan("SessionWork.runTurn", { attributes: { sessionId: request.sessionId } }))

    const steer = (sessionId: string, texts: ReadonlyArray<string>) =>
      Effect.suspend(() => {
        const run = sessions.get(sessionId)?.run
        if (run === undefined || run.live === undefined) return Effect.succeed<SteerOutcome>({ _tag: "NoActiveTurn" })
        if (run.start.kind === "compaction") {
          return Effect.succeed<SteerOutcome>({ _tag: "NotSteerable", reason: "a manual compaction is running" })
        }
        return harness.steer(sessionId, run.live, texts)
      })

    const interrupt = (sessionId: string) =>
      Effect.suspend(() => {
        const run = sessions.get(sessionId)?.run
        return run?.fiber === undefined || run.over ? Effect.succeed(false) : Effect.as(Fiber.interruptFork(run.fiber), true)
      })

    const service: SessionWorkService = {
      submit,
      runTurn,
      compact,
      steer,
      interrupt,
      idle: (sessionId) =>
        Effect.suspend(() => {
          const state = sessions.get(sessionId)
          return state === undefined ? Effect.void : Deferred.await(state.idle)
        }),
      setMode: (sessionId, mode) =>
        Effect.sync(() => {
          if (mode === defaultMode) modes.delete(sessionId)
          else modes.set(sessionId, mode)
        }),
      mode: (sessionId) => Effect.sync(() => modeOf(sessionId)),
      status: (sessionId) =>
        Effect.sync(() => {
          const state = sessions.get(sessionId)
          return {
            mode: modeOf(sessionId),
            running: state?.run?.start.kind === "turn",
            compacting: state?.run?.start.kind === "compaction",
            turnId: state?.run?.live?.turnId,
            queued: (state?.pending ?? []).map(({ mode, seq, text }): QueuedMessage => ({ seq, text, mode }))
          }
        }),
      cancelQueued: (sessionId) =>
        Effect.suspend(() => {
          const state = sessions.get(sessionId)
          if (state === undefined) return Effect.succeed([])
          const withdrawn = state.pending
          state.pending = []
          return Effect.forEach(withdrawn, interruptMessage, { discard: true }).pipe(
            Effect.as(withdrawn.map(({ mode, seq, text }): QueuedMessage => ({ seq, text, mode })))
          )
        }),
      running: Effect.sync(() =>
        [...sessions.values()].flatMap((state) =>
          state.run === undefined
            ? []
            : [{ sessionId: state.sessionId, kind: state.run.start.kind, threadId: state.run.live?.threadId, turnId: state.run.live?.turnId }]
        )
      ),
      owners: (threadIds) =>
        Effect.sync(() =>
          [...sessions.values()].flatMap((state): Array<RunOwner> => {
            const live = state.run?.live
            return live !== undefined && threadIds.has(live.threadId)
              ? [{ sessionId: state.sessionId, threadId: live.threadId, turnId: live.turnId }]
              : []
          })
        ),
      newThread: (sessionId, newThreadOptions) =>
        Effect.suspend(() => {
          const existing = sessions.get(sessionId)
          if (existing === undefined) return harness.newThread(sessionId, newThreadOptions)
          // a turn that has just ended, nothing queued: asked again once its state is gone
          return existing.pending.length === 0 && (existing.run === undefined || existing.run.over)
            ? Effect.zipRight(Deferred.await(existing.idle), service.newThread(sessionId, newThreadOptions))
            : Effect.fail(new NewThreadRefused({ sessionId, reason: "a turn is running; ask again once it has ended" }))
        }),
      release: (sessionId) => (sessions.has(sessionId) ? Effect.void : harness.release(sessionId)),
      sessions: Effect.sync(() => [...sessions.keys()]),
      draining: Effect.sync(() => draining),
      drain: (grace, bound) =>
        Effect.gen(function* () {
          draining = true
          if (sessions.size === 0) return { interrupted: 0 }
          // Fix: a drain runs in a finalizer, which runs uninterruptibly, and a timeout cannot interrupt an
          // uninterruptible wait: each timed wait is made interruptible inside its timeout (only the wait is abandoned)
          const finished = yield* Deferred.await(allIdle).pipe(Effect.interruptible, Effect.timeoutOption(grace))
          if (Option.isSome(finished)) return { interrupted: 0 }
          const states = [...sessions.values()]
          // what waits will not run now: its senders hear so (interrupted) rather than waiting for good
          for (const state of states) yield* Effect.forEach(state.pending.splice(0), interruptMessage, { discard: true })
          const fibers = states.flatMap((state) => (state.run?.fiber === undefined ? [] : [state.run.fiber]))
          yield* Effect.forEach(fibers, (fiber) => Fiber.interrupt(fiber), { concurrency: "unbounded", discard: true }).pipe(
            Effect.interruptible,
            Effect.timeoutOption(bound)
          )
          return { interrupted: fibers.length }
        })
    }
    return service
  })

/** The session work registry over the harness; closing the layer interrupts its runs and timers and every waiter. */
export const layer = (options: SessionWorkOptions = {}): Layer.Layer<SessionWork, never, CodexHarness | Compaction> =>
  Layer.scoped(SessionWork, make(options))
