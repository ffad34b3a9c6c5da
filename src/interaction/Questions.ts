// The questions of a turn (S30-S34): request_user_input and MCP elicitations (not MCP tool approvals: those belong to
// the approvals room, S29) are mapped into prompts, put through the turn's QuestionQueue, validated, and answered on the
// wire. A request that cannot be mapped is an explicit decline, told to the operator when the reason matters to them.
// Plain-text replies reach the queue through the extension's `answer` hook (CodexHarness.answer). Nothing here writes
// an answer to a log or a durable record: answers can be secrets (S34).
import { Duration, Effect, Either, Layer, Option } from "effect"
import type { RequestId } from "../../schemas/jsonrpc.js"
import type { ElicitationRequestParams, UserInputRequestParams } from "../../schemas/protocol.js"
import { isMcpToolApproval } from "../approvals/Approvals.js"
import { type Question, type QuestionPrompt, type QuestionReply, Questions } from "../ports/Questions.js"
import { type InstalledTurn, type TurnExtension, TurnExtensions } from "../turn/TurnExtension.js"
import * as Elicitation from "./Elicitation.js"
import * as QuestionQueue from "./QuestionQueue.js"
import * as UserInput from "./UserInput.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export interface QuestionsOptions {
  /** a prompt nobody answers is cancelled after this long; default 10 minutes */
  readonly promptTimeout?: Duration.DurationInput | undefined
  /** how often one group is asked again after an answer that does not validate; default 3 */
  readonly maxAttempts?: number | undefined
}

export { declineAll } from "../ports/Questions.js"

type Ask = (prompt: Omit<QuestionPrompt, "key">) => Effect.Effect<QuestionQueue.PromptOutcome>

/** the request's identity and place, shared by all of its prompts */
interface Origin {
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string | undefined
  readonly serverName: string | undefined
}

const originOf = (
  turn: InstalledTurn,
  params: { readonly turnId?: string | null | undefined; readonly serverName?: string | undefined }
): Origin => ({
  sessionId: turn.sessionId,
  threadId: turn.threadId,
  turnId: params.turnId ?? undefined,
  // elicitations name their MCP server; request_user_input has none
  serverName: params.serverName
})

const promptOf = (
  origin: Origin,
  source: QuestionPrompt["source"],
  questions: ReadonlyArray<Question>,
  group: QuestionPrompt["group"],
  extra: { readonly message?: string | undefined; readonly url?: string | undefined; readonly problem?: string | undefined }
): Omit<QuestionPrompt, "key"> => ({
  sessionId: origin.sessionId,
  threadId: origin.threadId,
  turnId: origin.turnId,
  source,
  serverName: origin.serverName,
  message: extra.message,
  url: extra.url,
  questions,
  group,
  problem: extra.problem
})

/** What one group's asking came to: its answers, or how the request ends without them. */
type GroupResult =
  | { readonly _tag: "Answers"; readonly answers: Readonly<Record<string, ReadonlyArray<string>>> }
  | { readonly _tag: "Declined" }
  | { readonly _tag: "Cancelled" }

const groupResult = (outcome: QuestionQueue.PromptOutcome): GroupResult => {
  if (outcome._tag === "TimedOut") return { _tag: "Cancelled" }
  const reply: QuestionReply = outcome.reply
  return reply._tag === "Answered" ? { _tag: "Answers", answers: reply.answers } : reply
}

export const makeExtension = (
  options: QuestionsOptions = {}
): Effect.Effect<TurnExtension> =>
  Effect.gen(function* () {
    const port = yield* Questions
    const maxAttempts = options.maxAttempts ?? 3
    // the running turn's queue of each session, for plain-text replies
    const queues = new Map<string, QuestionQueue.QuestionQueue>()

    const tell = (sessionId: string, message: string) =>
      port.notify({ sessionId, text: message }).pipe(Effect.catchAllCause(() => Effect.void))

    /** asks a form's groups in order, each again (with the reason) while its answers do not validate */
    const askForm = (ask: Ask, origin: Origin, plan: Elicitation.FormPlan) =>
      Effect.gen(function* () {
        const answers: Record<string, ReadonlyArray<string>> = {}
        for (let index = 0; index < plan.groups.length; index++) {
          const questions = plan.groups[index]!
          let problem: string | undefined
          let accepted = false
          for (let attempt = 0; attempt < maxAttempts && !accepted; attempt++) {
            const result = groupResult(
              yield* ask(promptOf(origin, "elicitation", questions, { index, count: plan.groups.length }, { message: plan.message, problem }))
            )
            if (result._tag !== "Answers") return result
            // a form without fields is one Continue / Decline question: Decline is an answer, not a mistake
            if (plan.fields.length === 0 && !Elicitation.continued(result.answers)) return { _tag: "Declined" } as const
            const checked = Elicitation.acceptGroup(plan, questions, result.answers)
            if (Either.isLeft(checked)) problem = checked.left.message
            else {
              // own answers only: an unanswered question id `constructor` must not pick up Object.prototype's
              for (const question of questions) {
                answers[question.id] = (Object.hasOwn(result.answers, question.id) ? result.answers[question.id] : undefined) ?? []
              }
              accepted = true
            }
          }
          if (!accepted) {
            yield* tell(origin.sessionId, `Declined the form from ${origin.serverName ?? "an MCP server"}: ${problem ?? "no valid answer"}`)
            return { _tag: "Declined" } as const
          }
        }
        return { _tag: "Answers", answers } as const
      })

    const elicitation = (turn: InstalledTurn, id: RequestId, params: ElicitationRequestParams, queue: QuestionQueue.QuestionQueue) =>
      Effect.gen(function* () {
        const origin = originOf(turn, params)
        const plan = Elicitation.plan(params)
        if (plan._tag === "Decline") {
          yield* HarnessLog.debug(`question: declined an elicitation from ${origin.serverName ?? "an MCP server"}: ${plan.reason}`)
          if (plan.visible) {
            yield* tell(origin.sessionId, `Declined a request from ${origin.serverName ?? "an MCP server"}: ${plan.reason}`)
          }
          return Elicitation.responses.decline
        }
        const served = yield* queue.serve(id, (ask) =>
          Effect.gen(function* () {
            if (plan._tag === "Url") {
              const result = groupResult(
                yield* ask(promptOf(origin, "urlElicitation", [plan.question], { index: 0, count: 1 }, { message: plan.message, url: plan.url }))
              )
              if (result._tag !== "Answers") return result._tag === "Declined" ? Elicitation.responses.decline : Elicitation.responses.cancel
              return Elicitation.continued(result.answers) ? Elicitation.responses.accept(null) : Elicitation.responses.decline
            }
            const result = yield* askForm(ask, origin, plan)
            if (result._tag === "Declined") return Elicitation.responses.decline
            if (result._tag === "Cancelled") return Elicitation.responses.cancel
            const content = Elicitation.accept(plan, result.answers)
            if (Either.isLeft(content)) {
              yield* tell(origin.sessionId, `Declined the form from ${origin.serverName ?? "an MCP server"}: ${content.left.message}`)
              return Elicitation.responses.decline
            }
            return Elicitation.responses.accept(content.right)
          })
        )
        // resolved by the app-server first: the answer is ignored there; cancel says nobody answered here
        return Option.getOrElse(served, () => Elicitation.responses.cancel)
      })

    const requestUserInput = (turn: InstalledTurn, id: RequestId, params: UserInputRequestParams, queue: QuestionQueue.QuestionQueue) =>
      Effect.gen(function* () {
        const origin = originOf(turn, params)
        const plan = UserInput.plan(params)
        if (plan._tag === "Decline") {
          yield* tell(origin.sessionId, `Could not ask Codex's question: ${plan.reason}`)
          return plan.response
        }
        const served = yield* queue.serve(id, (ask) =>
          Effect.gen(function* () {
            const answers: Record<string, ReadonlyArray<string>> = {}
            for (let index = 0; index < plan.groups.length; index++) {
              const questions = plan.groups[index]!
              let problem: string | undefined
              for (let attempt = 0; attempt < maxAttempts; attempt++) {
                const result = groupResult(
                  yield* ask(promptOf(origin, "requestUserInput", questions, { index, count: plan.groups.length }, { problem }))
                )
                // declined or cancelled: Codex gets the answers given so far (the model sees what is missing)
                if (result._tag !== "Answers") return UserInput.response(plan, answers)
                const checked = UserInput.checkGroup(plan, questions, result.answers)
                if (Either.isRight(checked)) {
                  Object.assign(answers, checked.right)
                  problem = undefined
                  break
                }
                problem = checked.left.message
              }
              if (problem !== undefined) {
                yield* tell(origin.sessionId, `Gave up asking Codex's question: ${problem}`)
                break
              }
            }
            return UserInput.response(plan, answers)
          })
        )
        return Option.getOrElse(served, () => UserInput.emptyAnswers(plan))
      })

    const install = (turn: InstalledTurn) =>
      Effect.gen(function* () {
        const queue = yield* QuestionQueue.make(port, { promptTimeout: options.promptTimeout })
        yield* Effect.acquireRelease(
          Effect.sync(() => void queues.set(turn.sessionId, queue)),
          () => Effect.sync(() => void (queues.get(turn.sessionId) === queue && queues.delete(turn.sessionId)))
        )
        yield* turn.connection.forEachNotification({ threadId: turn.threadId }, (n) =>
          n._tag === "ServerRequestResolved" ? queue.resolved(n.params.requestId) : Effect.void
        )

        yield* turn.connection.handle("item/tool/requestUserInput", {
          threadId: turn.threadId,
          handle: (params, request) =>
            requestUserInput(turn, request.id, params, queue).pipe(Effect.withSpan("Questions.requestUserInput")),
          // unreadable questions: an empty answer for every id that could be read, and the person is told
          invalid: (raw, problem) => {
            const plan = UserInput.plan(raw)
            return plan._tag === "Decline"
              ? tell(turn.sessionId, `Could not ask Codex's question: ${plan.reason}`).pipe(Effect.as(plan.response))
              : tell(turn.sessionId, `Could not ask Codex's question: ${problem}`).pipe(Effect.as(UserInput.emptyAnswers(plan)))
          }
        })
        yield* turn.connection.handle("mcpServer/elicitation/request", {
          threadId: turn.threadId,
          when: (params) => !isMcpToolApproval(params),
          handle: (params, request) => elicitation(turn, request.id, params, queue).pipe(Effect.withSpan("Questions.elicitation"))
        })
      })

    return {
      name: "questions",
      install,
      answer: (sessionId: string, reply: string) =>
        Effect.suspend(() => {
          const queue = queues.get(sessionId)
          return queue === undefined ? Effect.succeed(false) : queue.offerText(reply)
        })
    } satisfies TurnExtension
  })

/** TurnExtensions holding just the questions extension (the port is optional: without it every question is declined). */
export const layer = (options: QuestionsOptions = {}): Layer.Layer<TurnExtensions> =>
  Layer.effect(
    TurnExtensions,
    Effect.map(makeExtension(options), (extension) => [extension])
  )
