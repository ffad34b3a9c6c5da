// The per-session message queue in front of the harness (S35): a message for an idle session starts a turn; messages
// that arrive while the session's turn runs are steered into it (`steer`: batched over a quiet window into ONE turn/steer,
// in arrival order) or queued for after it (`followup`: a turn each; `collect`: one turn for all). A turn that refuses
// steering keeps its messages for ONE next turn; the refusal is remembered for that run only, never for later runs.
// It never drops a message silently: every message ends in a turn (its own, a later one, or the running one it was
// steered into) or, when explicitly cancelled or the layer closes, its waiters are interrupted. State exists only for
// sessions with a run or a queue; every fiber belongs to the layer's scope.
import { Context, Deferred, Duration, Effect, Exit, type Fiber, FiberId, FiberSet, Layer, Schema } from "effect"
import type { QueueMode } from "../../schemas/config.js"
import { CodexHarness, type HarnessError, type SteerOutcome, type TurnResult } from "../harness/CodexHarness.js"
import type { EventSink } from "./TurnRunner.js"

export type { QueueMode } from "../../schemas/config.js"

/** At most this many messages wait per session (not counting those already carried by the running turn). */
export const defaultMaxQueued = 64
/** Steer mode: a batch is sent once no message arrived for this long (restarted by each message). */
export const defaultQuietWindow: Duration.DurationInput = "500 millis"

/** The session already has `limit` messages waiting: the message was refused, nothing was dropped. */
export class QueueFull extends Schema.TaggedError<QueueFull>()("QueueFull", {
  sessionId: Schema.String,
  limit: Schema.Number
}) {
  override get message() {
    return `session ${this.sessionId} already has ${this.limit} messages waiting; wait for the running turn before sending more`
  }
}

export interface SubmitOptions {
  /** an explicit model choice, as in `runTurn` (used when this message starts or heads a turn) */
  readonly model?: string | undefined
  /** "plan": the turn this message starts or heads runs in Codex's Plan mode (as in `runTurn`) */
  readonly collaboration?: "default" | "plan" | undefined
  /** events of the turn this message starts or heads (a steered message joins a turn that already has its sink) */
  readonly onEvent?: EventSink | undefined
}

/** How a message left the queue. */
export type Carried =
  /** sent into the running turn with turn/steer */
  | { readonly _tag: "Steered"; readonly turnId: string }
  /** a turn of its own, or one shared with the messages it was batched or collected with (joined by blank lines) */
  | { readonly _tag: "Turn"; readonly prompt: string }
  /** taken as the answer to a question the running turn was waiting on (S33) */
  | { readonly _tag: "Answered" }

export interface Submitted {
  /** arrival number within the service, increasing */
  readonly seq: number
  /** what happens next: "start" a turn now; "steer" into the running turn after the quiet window; "queue" for after it;
   * "answer": it already answered the question the running turn asked */
  readonly disposition: "start" | "steer" | "queue" | "answer"
  /** the mode the message was taken in (later `setMode` calls do not change it) */
  readonly mode: QueueMode
  /** completes when the message leaves the queue; interrupted if it is cancelled or the service closes first */
  readonly carried: Effect.Effect<Carried>
  /** the result of the turn that carried the message (for a steered one: the turn it was steered into); fails as
   * `runTurn` fails; interrupted when that turn is interrupted, the message is cancelled or the service closes */
  readonly reply: Effect.Effect<TurnResult, HarnessError>
}

export interface QueuedMessage {
  readonly seq: number
  readonly text: string
  readonly mode: QueueMode
}

export interface SessionQueueStatus {
  readonly mode: QueueMode
  /** a turn of this service runs for the session (it may still be opening its thread) */
  readonly running: boolean
  /** the running turn's id, once the app-server has started it */
  readonly turnId: string | undefined
  /** messages waiting, in arrival order */
  readonly queued: ReadonlyArray<QueuedMessage>
}

export interface SteeringQueueService {
  /** takes a message at once; wait on `reply` for the turn that carries it. Fails only when the session's queue is full */
  readonly submit: (sessionId: string, text: string, options?: SubmitOptions) => Effect.Effect<Submitted, QueueFull>
  /** waits until the session has no running turn and nothing queued */
  readonly drain: (sessionId: string) => Effect.Effect<void>
  /** the mode for the session's later messages (`/queue steer|followup|collect`) */
  readonly setMode: (sessionId: string, mode: QueueMode) => Effect.Effect<void>
  readonly mode: (sessionId: string) => Effect.Effect<QueueMode>
  readonly status: (sessionId: string) => Effect.Effect<SessionQueueStatus>
  /** interrupts the session's running turn (its messages' replies are interrupted); queued messages still run after it.
   * false when nothing ran */
  readonly interrupt: (sessionId: string) => Effect.Effect<boolean>
  /** withdraws the session's waiting messages (their waiters are interrupted) and yields them; the running turn goes on */
  readonly cancelQueued: (sessionId: string) => Effect.Effect<ReadonlyArray<QueuedMessage>>
  /** sessions with a running turn or a queue right now */
  readonly sessions: Effect.Effect<ReadonlyArray<string>>
}

export class SteeringQueue extends Context.Tag("codex-harness/SteeringQueue")<SteeringQueue, SteeringQueueService>() {}

export interface SteeringQueueOptions {
  /** default mode of every session (config `messages.queue.mode`); default "steer" */
  readonly mode?: QueueMode | undefined
  /** config `messages.queue.quietWindowMs`; default 500 ms */
  readonly quietWindow?: Duration.DurationInput | undefined
  /** per-session bound on waiting messages; default 64 */
  readonly maxQueued?: number | undefined
}

/** The options from the config file's `messages.queue` section (`HarnessConfig.merge(...).messages.queue`). */
export const optionsFromConfig = (queue: { readonly mode: QueueMode; readonly quietWindowMs: number }): SteeringQueueOptions => ({
  mode: queue.mode,
  quietWindow: Duration.millis(queue.quietWindowMs)
})

// ---- internals ----

interface Message {
  readonly seq: number
  readonly text: string
  readonly mode: QueueMode
  readonly options: SubmitOptions
  readonly reply: Deferred.Deferred<TurnResult, HarnessError>
  readonly carried: Deferred.Deferred<Carried>
}

interface Run {
  /** every message this run carries: the ones it started with and the ones steered into it */
  readonly messages: Array<Message>
  /** done when the app-server started the turn, or when the run ended without one */
  readonly started: Deferred.Deferred<void>
  turnId: string | undefined
  /** false once this run's turn refused steering: its later steer messages wait for the next run */
  steerable: boolean
  fiber: Fiber.RuntimeFiber<TurnResult, HarnessError> | undefined
}

interface SessionQueue {
  readonly sessionId: string
  /** waiting messages, in arrival (seq) order */
  pending: Array<Message>
  run: Run | undefined
  /** the quiet-window timer of steer messages */
  timer: Fiber.RuntimeFiber<void> | undefined
  /** serializes steer flushes and the step from one run to the next */
  readonly lock: Effect.Semaphore
  /** done when the state is removed (the session went idle with nothing queued) */
  readonly idle: Deferred.Deferred<void>
}

const joinTexts = (messages: ReadonlyArray<Message>) => messages.map((m) => m.text).join("\n\n")

const bySeq = (a: Message, b: Message) => a.seq - b.seq

const interruptMessage = (message: Message) => {
  Deferred.unsafeDone(message.reply, Exit.interrupt(FiberId.none))
  Deferred.unsafeDone(message.carried, Exit.interrupt(FiberId.none))
}

type FlushOutcome = SteerOutcome | { readonly _tag: "Failed" }

export const make = (options: SteeringQueueOptions = {}) =>
  Effect.gen(function* () {
    const harness = yield* CodexHarness
    const defaultMode: QueueMode = options.mode ?? "steer"
    const quietWindow = Duration.decode(options.quietWindow ?? defaultQuietWindow)
    const maxQueued = options.maxQueued ?? defaultMaxQueued

    const sessions = new Map<string, SessionQueue>()
    // only modes that differ from the default, so a session that never used `/queue` leaves nothing behind
    const modes = new Map<string, QueueMode>()
    let nextSeq = 0
    let closed = false

    // registered before the FiberSet, so it runs after every fiber is gone: whoever still waits is interrupted
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        for (const state of sessions.values()) {
          for (const message of state.pending) interruptMessage(message)
          for (const message of state.run?.messages ?? []) interruptMessage(message)
          Deferred.unsafeDone(state.idle, Exit.void)
        }
        sessions.clear()
      })
    )
    const fork = yield* FiberSet.makeRuntime<never>()

    const modeOf = (sessionId: string) => modes.get(sessionId) ?? defaultMode

    /** Takes the next group of waiting messages and starts its run; removes the state when nothing waits. Sync, under the lock. */
    const startNext = (state: SessionQueue): void => {
      state.run = undefined
      const head = state.pending[0]
      if (head === undefined) {
        if (state.timer !== undefined) fork(Effect.asVoid(state.timer.interruptAsFork(FiberId.none)))
        state.timer = undefined
        if (sessions.get(state.sessionId) === state) sessions.delete(state.sessionId)
        Deferred.unsafeDone(state.idle, Exit.void)
        return
      }
      // followup: one message; steer (batched or held) and collect: the consecutive messages of that mode
      let count = 1
      if (head.mode !== "followup") {
        while (count < state.pending.length && state.pending[count]!.mode === head.mode) count++
      }
      const group = state.pending.splice(0, count)
      const prompt = joinTexts(group)
      const run: Run = {
        messages: group,
        started: Deferred.unsafeMake<void>(FiberId.none),
        turnId: undefined,
        steerable: true,
        fiber: undefined
      }
      state.run = run
      for (const message of group) Deferred.unsafeDone(message.carried, Exit.succeed<Carried>({ _tag: "Turn", prompt }))
      const onEvent = head.options.onEvent
      const model = head.options.model
      const collaboration = head.options.collaboration
      run.fiber = fork(
        harness
          .runTurn({
            sessionId: state.sessionId,
            prompt,
            ...(model !== undefined ? { model } : {}),
            ...(collaboration !== undefined ? { collaboration } : {}),
            onEvent: (event) => {
              if (event.type === "turn.started") {
                run.turnId = event.turnId
                Deferred.unsafeDone(run.started, Exit.void)
              }
              return onEvent === undefined ? Effect.void : onEvent(event)
            }
          })
          .pipe(
            Effect.ensuring(Deferred.succeed(run.started, undefined)),
            Effect.withSpan("SteeringQueue.run", { attributes: { sessionId: state.sessionId, messages: group.length } })
          )
      )
    }

    /** One session's runs, one after the other, until nothing waits. */
    const drive = (state: SessionQueue): Effect.Effect<void> =>
      Effect.gen(function* () {
        yield* state.lock.withPermits(1)(Effect.sync(() => startNext(state)))
        while (state.run !== undefined) {
          const run = state.run
          const exit = yield* run.fiber!.await
          yield* state.lock.withPermits(1)(
            Effect.sync(() => {
              for (const message of run.messages) Deferred.unsafeDone(message.reply, exit)
              startNext(state)
            })
          )
        }
      }).pipe(Effect.annotateLogs({ sessionId: state.sessionId }))

    /** Sends the session's waiting steer messages into the running turn as one turn/steer, once that turn has started. */
    const flush = (state: SessionQueue): Effect.Effect<void> =>
      state.lock.withPermits(1)(
        Effect.gen(function* () {
          const run = state.run
          if (run === undefined) return
          // the run cannot change while the lock is held; a run that ends without a turn completes `started` too
          yield* Deferred.await(run.started)
          if (!run.steerable) return
          const batch = state.pending.filter((m) => m.mode === "steer")
          if (batch.length === 0) return
          state.pending = state.pending.filter((m) => m.mode !== "steer")
          const keep = () => {
            state.pending = [...state.pending, ...batch].sort(bySeq)
          }
          const texts = batch.map((m) => m.text)
          const outcome = yield* harness.steer(state.sessionId, texts).pipe(
            Effect.catchAll((error): Effect.Effect<FlushOutcome> =>
              error._tag === "SessionStoreError" || error._tag === "InvalidSessionId"
                ? // the steer went through; only its transcript record failed
                  Effect.logWarning(`steered, but not recorded: ${error.message}`).pipe(
                    Effect.as({ _tag: "Steered" as const, turnId: run.turnId ?? "" })
                  )
                : Effect.logWarning(`turn/steer failed, the messages wait for the next turn: ${error.message}`).pipe(
                    Effect.as({ _tag: "Failed" as const })
                  )
            )
          )
          switch (outcome._tag) {
            case "Steered":
              for (const message of batch) {
                Deferred.unsafeDone(message.carried, Exit.succeed<Carried>({ _tag: "Steered", turnId: outcome.turnId }))
              }
              run.messages.push(...batch)
              return
            case "NotSteerable":
              yield* Effect.logInfo(`the running turn refuses steering (${outcome.reason}); the messages wait for it to end`)
              run.steerable = false
              return keep()
            case "NoActiveTurn":
            case "Failed":
              // the turn just ended (or the steer did not land): the driver starts the next turn with them
              return keep()
          }
        })
      ).pipe(Effect.annotateLogs({ sessionId: state.sessionId }), Effect.withSpan("SteeringQueue.flush"))

    const restartWindow = (state: SessionQueue) => {
      const previous = state.timer
      const timer: Fiber.RuntimeFiber<void> = fork(
        Effect.sleep(quietWindow).pipe(
          Effect.zipRight(
            Effect.sync(() => {
              if (state.timer === timer) state.timer = undefined
              // the flush gets its own fiber: a later message restarting the window must not interrupt a turn/steer
              fork(flush(state))
            })
          )
        )
      )
      state.timer = timer
      if (previous !== undefined) fork(Effect.asVoid(previous.interruptAsFork(FiberId.none)))
    }

    /** a message that answered the running turn's question: carried at once, its reply is that turn's */
    const answered = (run: Run, mode: QueueMode): Submitted => ({
      seq: nextSeq++,
      disposition: "answer",
      mode,
      carried: Effect.succeed({ _tag: "Answered" }),
      reply: Deferred.await(run.messages[0]!.reply)
    })

    // during a run, a pending question takes the message first (S33); when nothing took it, it is queued as usual
    const submit = (sessionId: string, text: string, submitOptions: SubmitOptions = {}) =>
      Effect.suspend((): Effect.Effect<Submitted, QueueFull> => {
        const run = sessions.get(sessionId)?.run
        if (run === undefined || closed) return enqueue(sessionId, text, submitOptions)
        return Effect.flatMap(harness.answer(sessionId, text), (taken) =>
          taken ? Effect.succeed(answered(run, modeOf(sessionId))) : enqueue(sessionId, text, submitOptions))
      }).pipe(Effect.withSpan("SteeringQueue.submit", { attributes: { sessionId } }))

    const enqueue = (sessionId: string, text: string, submitOptions: SubmitOptions) =>
      Effect.suspend((): Effect.Effect<Submitted, QueueFull> => {
        if (closed) return Effect.interrupt
        const existing = sessions.get(sessionId)
        if (existing !== undefined && existing.pending.length >= maxQueued) {
          return Effect.fail(new QueueFull({ sessionId, limit: maxQueued }))
        }
        const mode = modeOf(sessionId)
        const message: Message = {
          seq: nextSeq++,
          text,
          mode,
          options: submitOptions,
          reply: Deferred.unsafeMake<TurnResult, HarnessError>(FiberId.none),
          carried: Deferred.unsafeMake<Carried>(FiberId.none)
        }
        let disposition: Submitted["disposition"]
        if (existing === undefined) {
          const state: SessionQueue = {
            sessionId,
            pending: [message],
            run: undefined,
            timer: undefined,
            lock: Effect.unsafeMakeSemaphore(1),
            idle: Deferred.unsafeMake<void>(FiberId.none)
          }
          sessions.set(sessionId, state)
          fork(drive(state))
          disposition = "start"
        } else {
          existing.pending.push(message)
          disposition = mode === "steer" ? "steer" : "queue"
          if (mode === "steer") restartWindow(existing)
        }
        return Effect.succeed({
          seq: message.seq,
          disposition,
          mode,
          carried: Deferred.await(message.carried),
          reply: Deferred.await(message.reply)
        })
      })

    const drain = (sessionId: string) =>
      Effect.suspend(() => {
        const state = sessions.get(sessionId)
        return state === undefined ? Effect.void : Deferred.await(state.idle)
      })

    const service: SteeringQueueService = {
      submit,
      drain,
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
            running: state?.run !== undefined,
            turnId: state?.run?.turnId,
            queued: (state?.pending ?? []).map(({ mode, seq, text }) => ({ seq, text, mode }))
          }
        }),
      interrupt: (sessionId) =>
        Effect.suspend(() => {
          const fiber = sessions.get(sessionId)?.run?.fiber
          return fiber === undefined ? Effect.succeed(false) : Effect.as(fiber.interruptAsFork(FiberId.none), true)
        }),
      cancelQueued: (sessionId) =>
        Effect.sync(() => {
          const state = sessions.get(sessionId)
          if (state === undefined) return []
          const withdrawn = state.pending
          state.pending = []
          for (const message of withdrawn) interruptMessage(message)
          return withdrawn.map(({ mode, seq, text }) => ({ seq, text, mode }))
        }),
      sessions: Effect.sync(() => [...sessions.keys()])
    }
    return service
  })

/** The steering queue over the harness; closing the layer interrupts its turns and timers and every waiter. */
export const layer = (options: SteeringQueueOptions = {}): Layer.Layer<SteeringQueue, never, CodexHarness> =>
  Layer.scoped(SteeringQueue, make(options))
