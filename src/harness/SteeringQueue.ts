// The per-session message queue in front of the harness (S35): a message for an idle session starts a turn; messages
// that arrive while the session's turn runs are steered into it (`steer`: batched over a quiet window into ONE turn/steer,
// in arrival order) or queued for after it (`followup`: a turn each; `collect`: one turn for all). A turn that refuses
// steering keeps its messages for ONE next turn; the refusal is remembered for that run only, never for later runs.
// It never drops a message silently: every message ends in a turn (its own, a later one, or the running one it was
// steered into) or, when explicitly cancelled or the layer closes, its waiters are interrupted. State exists only for
// sessions with a run or a queue; every fiber belongs to the layer's scope (FiberMaps for each session's driver, turn
// and quiet-window timer, a FiberSet for flushes), and every waiter is a Deferred completed through Effect.
import { Context, Deferred, Duration, Effect, Exit, Fiber, FiberMap, FiberSet, Layer, Schema } from "effect"
import type { QueueMode } from "../../schemas/config.js"
import type { EventSink } from "../turn/TurnEvent.js"
import { CodexHarness, type HarnessError, type SteerOutcome, type TurnResult } from "./CodexHarness.js"

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
  /** set as soon as the run's turn is forked */
  fiber: Fiber.RuntimeFiber<TurnResult, HarnessError> | undefined
}

interface SessionQueue {
  readonly sessionId: string
  /** waiting messages, in arrival (seq) order */
  pending: Array<Message>
  run: Run | undefined
  /** serializes steer flushes and the step from one run to the next */
  readonly lock: Effect.Semaphore
  /** done when the state is removed (the session went idle with nothing queued) */
  readonly idle: Deferred.Deferred<void>
}

const joinTexts = (messages: ReadonlyArray<Message>) => messages.map((m) => m.text).join("\n\n")

const bySeq = (a: Message, b: Message) => a.seq - b.seq

const interruptMessage = (message: Message) =>
  Deferred.interrupt(message.reply).pipe(Effect.zipRight(Deferred.interrupt(message.carried)), Effect.asVoid)

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

    // registered before the fibers' maps, so it runs after every fiber is gone: whoever still waits is interrupted
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const states = [...sessions.values()]
        sessions.clear()
        return Effect.forEach(
          states,
          (state) =>
            Effect.forEach([...state.pending, ...(state.run?.messages ?? [])], interruptMessage, { discard: true }).pipe(
              Effect.zipRight(Deferred.done(state.idle, Exit.void))
            ),
          { discard: true }
        )
      })
    )
    // per session: its driver (one run after the other), its running turn and its quiet-window timer; a new timer for
    // a session replaces (interrupts) the previous one. Flushes get fibers of their own.
    const drivers = yield* FiberMap.make<string>()
    const turns = yield* FiberMap.make<string, TurnResult, HarnessError>()
    const timers = yield* FiberMap.make<string>()
    const flushes = yield* FiberSet.make()

    const modeOf = (sessionId: string) => modes.get(sessionId) ?? defaultMode

    /** Takes the next group of waiting messages and starts its run; removes the state when nothing waits. Under the lock. */
    const startNext = (state: SessionQueue): Effect.Effect<void> =>
      Effect.gen(function* () {
        state.run = undefined
        const head = state.pending[0]
        if (head === undefined) {
          yield* FiberMap.remove(timers, state.sessionId)
          if (sessions.get(state.sessionId) === state) sessions.delete(state.sessionId)
          yield* Deferred.done(state.idle, Exit.void)
          return
        }
        // followup: one message; steer (batched or held) and collect: the consecutive messages of that mode
        let count = 1
        if (head.mode !== "followup") {
          while (count < state.pending.length && state.pending[count]!.mode === head.mode) count++
        }
        const group = state.pending.splice(0, count)
        const prompt = joinTexts(group)
        const started = yield* Deferred.make<void>()
        for (const message of group) yield* Deferred.succeed(message.carried, { _tag: "Turn", prompt } as Carried)
        const { collaboration, model, onEvent } = head.options
        const run: Run = { messages: group, started, turnId: undefined, steerable: true, fiber: undefined }
        state.run = run
        run.fiber = yield* FiberMap.run(
          turns,
          state.sessionId,
          harness
            .runTurn({
              sessionId: state.sessionId,
              prompt,
              ...(model !== undefined ? { model } : {}),
              ...(collaboration !== undefined ? { collaboration } : {}),
              onEvent: (event) => {
                const seen = event._tag === "TurnStarted"
                  ? Effect.sync(() => void (run.turnId = event.turnId)).pipe(Effect.zipRight(Deferred.succeed(started, undefined)))
                  : Effect.void
                return onEvent === undefined ? seen : Effect.zipRight(seen, onEvent(event))
              }
            })
            .pipe(
              Effect.ensuring(Deferred.succeed(started, undefined)),
              Effect.withSpan("SteeringQueue.run", { attributes: { sessionId: state.sessionId, messages: group.length } })
            )
        )
      })

    /** One session's runs, one after the other, until nothing waits. */
    const drive = (state: SessionQueue): Effect.Effect<void> =>
      Effect.gen(function* () {
        yield* state.lock.withPermits(1)(startNext(state))
        while (state.run !== undefined) {
          const run = state.run
          const exit = yield* run.fiber!.await
          yield* state.lock.withPermits(1)(
            Effect.forEach(run.messages, (message) => Deferred.done(message.reply, exit), { discard: true }).pipe(
              Effect.zipRight(startNext(state))
            )
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
              for (const message of batch) yield* Deferred.succeed(message.carried, { _tag: "Steered", turnId: outcome.turnId } as Carried)
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

    // the flush gets its own fiber: a later message restarting the window must not interrupt a turn/steer
    const restartWindow = (state: SessionQueue) =>
      FiberMap.run(timers, state.sessionId, Effect.sleep(quietWindow).pipe(Effect.zipRight(FiberSet.run(flushes, flush(state))))).pipe(
        Effect.asVoid
      )

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
      Effect.gen(function* () {
        // made first: what follows checks and changes the session's state in one synchronous step
        const reply = yield* Deferred.make<TurnResult, HarnessError>()
        const carried = yield* Deferred.make<Carried>()
        const idle = yield* Deferred.make<void>()
        const lock = yield* Effect.makeSemaphore(1)
        if (closed) return yield* Effect.interrupt
        const existing = sessions.get(sessionId)
        if (existing !== undefined && existing.pending.length >= maxQueued) {
          return yield* new QueueFull({ sessionId, limit: maxQueued })
        }
        const mode = modeOf(sessionId)
        const message: Message = { seq: nextSeq++, text, mode, options: submitOptions, reply, carried }
        let disposition: Submitted["disposition"]
        if (existing === undefined) {
          const state: SessionQueue = { sessionId, pending: [message], run: undefined, lock, idle }
          sessions.set(sessionId, state)
          yield* FiberMap.run(drivers, sessionId, drive(state))
          disposition = "start"
        } else {
          existing.pending.push(message)
          disposition = mode === "steer" ? "steer" : "queue"
          if (mode === "steer") yield* restartWindow(existing)
        }
        return {
          seq: message.seq,
          disposition,
          mode,
          carried: Deferred.await(carried),
          reply: Deferred.await(reply)
        } satisfies Submitted
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
          return fiber === undefined ? Effect.succeed(false) : Effect.as(Fiber.interruptFork(fiber), true)
        }),
      cancelQueued: (sessionId) =>
        Effect.suspend(() => {
          const state = sessions.get(sessionId)
          if (state === undefined) return Effect.succeed([])
          const withdrawn = state.pending
          state.pending = []
          return Effect.forEach(withdrawn, interruptMessage, { discard: true }).pipe(
            Effect.as(withdrawn.map(({ mode, seq, text }) => ({ seq, text, mode })))
          )
        }),
      sessions: Effect.sync(() => [...sessions.keys()])
    }
    return service
  })

/** The steering queue over the harness; closing the layer interrupts its turns and timers and every waiter. */
export const layer = (options: SteeringQueueOptions = {}): Layer.Layer<SteeringQueue, never, CodexHarness> =>
  Layer.scoped(SteeringQueue, make(options))
