// The per-turn question queue (S33): request_user_input and MCP elicitations wait here, one request at a time in
// arrival order, and each prompt of the request in front has exactly one owner. The owner is resolved by whichever comes
// first: the Questions port (a button or a UI answer), the next plain-text reply (`offerText`), or an answer carrying
// the owner's key (`answer`). `serverRequest/resolved` (matched by the JSON-RPC id, string and integer kept apart),
// a timeout, or the turn's end cancel the current owner; a late answer finds a different key and resolves nothing.
// A plain-text reply reports whether it was taken, so the caller can send it on elsewhere rather than lose it.
import { Deferred, Duration, Effect, Option, type Scope } from "effect"
import type { RequestId } from "../../schemas/jsonrpc.js"
import { cancelled, type QuestionPrompt, type QuestionReply, type QuestionsService } from "../ports/Questions.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** A prompt nobody answers is cancelled after this long. */
export const defaultPromptTimeout: Duration.DurationInput = Duration.minutes(10)

/** `serverRequest/resolved` ids are matched exactly: the string "7" and the integer 7 are different requests. */
export const requestKey = (id: RequestId): string => (typeof id === "string" ? `s:${id}` : `n:${id}`)

/** How one prompt ended. */
export type PromptOutcome =
  | { readonly _tag: "Reply"; readonly reply: QuestionReply; readonly via: "port" | "text" | "answer" }
  /** nobody answered within the prompt timeout */
  | { readonly _tag: "TimedOut" }

export interface QuestionQueueOptions {
  readonly promptTimeout?: Duration.DurationInput | undefined
}

export interface QuestionQueue {
  /**
   * Runs `use` once every earlier request of the turn is done, with `ask` to put prompts in front of the person. None
   * when the app-server resolved the request first (then `use` is interrupted and its prompt withdrawn).
   */
  readonly serve: <A>(
    id: RequestId,
    use: (ask: (prompt: Omit<QuestionPrompt, "key">) => Effect.Effect<PromptOutcome>) => Effect.Effect<A>
  ) => Effect.Effect<Option.Option<A>>
  /**
   * The next plain-text reply: it answers the prompt in front (one line per question when it has several). true once
   * that prompt's request took it; false when nothing was asked, or the request was resolved before it could take it.
   */
  readonly offerText: (text: string) => Effect.Effect<boolean>
  /** answers the prompt with this key, if it is still the one in front; false otherwise (a late answer) */
  readonly answer: (key: string, reply: QuestionReply) => Effect.Effect<boolean>
  /** the app-server resolved this request (answered elsewhere, interrupted, timed out): its owner is cancelled */
  readonly resolved: (id: RequestId) => Effect.Effect<void>
  /** the prompt in front, if any */
  readonly current: Effect.Effect<QuestionPrompt | undefined>
}

interface Owner {
  readonly prompt: QuestionPrompt
  readonly outcome: Deferred.Deferred<PromptOutcome>
  /** whether a plain-text reply that completed this owner was taken by its request */
  readonly textTaken: Deferred.Deferred<boolean>
}

/** The lines of a plain-text reply as answers, one per question in order (the whole text for a single question). Pure. */
export const textAnswers = (prompt: QuestionPrompt, text: string): Readonly<Record<string, ReadonlyArray<string>>> => {
  const questions = prompt.questions
  if (questions.length === 1) return { [questions[0]!.id]: [text.trim()] }
  const lines = text.split(/\r?\n/)
  const answers: Record<string, ReadonlyArray<string>> = {}
  questions.forEach((question, index) => {
    const line = (lines[index] ?? "").trim()
    answers[question.id] = line === "" ? [] : question.kind === "multi" ? line.split(",").map((s) => s.trim()).filter((s) => s !== "") : [line]
  })
  return answers
}

/** A queue for one turn; closing its scope cancels the owner in front and every request still waiting. */
export const make = (
  port: QuestionsService,
  options: QuestionQueueOptions = {}
): Effect.Effect<QuestionQueue, never, Scope.Scope> =>
  Effect.gen(function* () {
    const promptTimeout = options.promptTimeout ?? defaultPromptTimeout
    const slot = yield* Effect.makeSemaphore(1)
    // one signal per request being served or waiting, completed by serverRequest/resolved or the turn's end
    const resolvedSignals = new Map<string, Deferred.Deferred<void>>()
    let front: Owner | undefined
    let prompts = 0
    let closed = false

    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        return Effect.forEach(resolvedSignals.values(), (signal) => Deferred.succeed(signal, undefined), { discard: true })
      })
    )

    // the Deferred is made first; finding or registering it is then one synchronous step
    const signalFor = (key: string) =>
      Effect.flatMap(Deferred.make<void>(), (fresh) =>
        Effect.suspend(() => {
          const known = resolvedSignals.get(key)
          if (known !== undefined) return Effect.succeed(known)
          resolvedSignals.set(key, fresh)
          return closed ? Effect.as(Deferred.succeed(fresh, undefined), fresh) : Effect.succeed(fresh)
        }))

    const ask = (key: string, signal: Deferred.Deferred<void>) => (prompt: Omit<QuestionPrompt, "key">) => {
      let mine: Owner | undefined
      return Effect.gen(function* () {
        const owner: Owner = {
          prompt: { ...prompt, key: `${key}#${++prompts}` },
          outcome: yield* Deferred.make<PromptOutcome>(),
          textTaken: yield* Deferred.make<boolean>()
        }
        mine = owner
        front = owner
        // the port's prompt lives in this scope: it is withdrawn (interrupted) however the owner ends
        yield* port.ask(owner.prompt).pipe(
          Effect.catchAllCause((cause) =>
            Effect.as(HarnessLog.warning("a question prompt failed; cancelling it", cause), cancelled)
          ),
          Effect.flatMap((reply) => Deferred.succeed(owner.outcome, { _tag: "Reply", reply, via: "port" })),
          Effect.forkScoped
        )
        const outcome = yield* Deferred.await(owner.outcome).pipe(
          Effect.timeoutTo({
            duration: promptTimeout,
            onSuccess: (o): PromptOutcome => o,
            onTimeout: (): PromptOutcome => ({ _tag: "TimedOut" })
          })
        )
        // a text that won the race is taken unless the request was resolved meanwhile
        yield* Deferred.succeed(owner.textTaken, !(yield* Deferred.isDone(signal)))
        // what happened, never what was answered (answers can be secrets, S34)
        yield* HarnessLog.debug(
          `question ${owner.prompt.key} (${prompt.source}, ${prompt.questions.length} question(s)): ${
            outcome._tag === "TimedOut" ? "timed out" : `${outcome.reply._tag.toLowerCase()} via ${outcome.via}`
          }`
        )
        return outcome
      }).pipe(
        Effect.scoped,
        Effect.ensuring(
          Effect.suspend(() => {
            if (mine === undefined) return Effect.void
            if (front === mine) front = undefined
            return Effect.asVoid(Deferred.succeed(mine.textTaken, false))
          })
        )
      )
    }

    const serve = <A>(
      id: RequestId,
      use: (ask: (prompt: Omit<QuestionPrompt, "key">) => Effect.Effect<PromptOutcome>) => Effect.Effect<A>
    ): Effect.Effect<Option.Option<A>> => {
      const key = requestKey(id)
      return Effect.flatMap(signalFor(key), (signal) =>
        Effect.raceFirst(
          Effect.map(slot.withPermits(1)(Effect.suspend(() => use(ask(key, signal)))), Option.some),
          Effect.as(Deferred.await(signal), Option.none<A>())
        )
      ).pipe(Effect.ensuring(Effect.sync(() => resolvedSignals.delete(key))))
    }

    const settle = (owner: Owner, outcome: PromptOutcome) => Deferred.succeed(owner.outcome, outcome)

    return {
      serve,
      offerText: (text) =>
        Effect.suspend(() => {
          const owner = front
          if (owner === undefined) return Effect.succeed(false)
          const reply: QuestionReply = { _tag: "Answered", answers: textAnswers(owner.prompt, text) }
          return Effect.flatMap(settle(owner, { _tag: "Reply", reply, via: "text" }), (won) =>
            won ? Deferred.await(owner.textTaken) : Effect.succeed(false)
          )
        }),
      answer: (key, reply) =>
        Effect.suspend(() => {
          const owner = front
          if (owner === undefined || owner.prompt.key !== key) return Effect.succeed(false)
          return settle(owner, { _tag: "Reply", reply, via: "answer" })
        }),
      resolved: (id) =>
        Effect.suspend(() => {
          const signal = resolvedSignals.get(requestKey(id))
          return signal === undefined ? Effect.void : Effect.asVoid(Deferred.succeed(signal, undefined))
        }),
      current: Effect.sync(() => front?.prompt)
    } satisfies QuestionQueue
  })
