// Port (optional): who answers the questions Codex and MCP servers ask during a turn (request_user_input, MCP
// elicitations): buttons in a chat channel, a form in a UI, a terminal. The harness maps each request into prompts of up
// to three questions, queues them one at a time per turn (S33), and maps the answers back onto the wire after
// validating them (S30). Plain-text replies reach the same queue through `CodexHarness.answer`. Without one, every
// question is declined (the default).
import { Context, Effect, Schema } from "effect"
import * as HarnessLog from "../platform/HarnessLog.js"

export interface QuestionOption {
  /** what the person picks or types; also the button text */
  readonly label: string
  readonly description?: string | undefined
}

/**
 * - `text`: free text (bounded; `hint` names a format such as email or date)
 * - `number` / `integer`: typed as text, validated as a number
 * - `boolean`: the options are Yes and No
 * - `choice`: exactly one of `options` (buttons where the channel has them)
 * - `multi`: any number of `options` (within `hint`'s bounds)
 * - `continue`: a URL elicitation's Continue / Decline (`options`)
 */
export type QuestionKind = "text" | "number" | "integer" | "boolean" | "choice" | "multi" | "continue"

export interface Question {
  /** a safe id (letters, digits, `_`), unique within its request; answers are keyed by it */
  readonly id: string
  readonly header?: string | undefined
  readonly text: string
  readonly kind: QuestionKind
  readonly options: ReadonlyArray<QuestionOption>
  /** free text is accepted besides the options (request_user_input `isOther`) */
  readonly allowOther: boolean
  /** S34: answered through an ephemeral reply, never stored; always asked alone */
  readonly isSecret: boolean
  readonly required: boolean
  /** the answer used when the person gives none */
  readonly defaultAnswer?: ReadonlyArray<string> | undefined
  /** a human-readable constraint ("email", "1 to 10", "at most 2 choices") */
  readonly hint?: string | undefined
}

export type QuestionSource = "requestUserInput" | "elicitation" | "urlElicitation"

export interface QuestionPrompt {
  /** identifies the request and group this prompt belongs to; a reply for another key never resolves it */
  readonly key: string
  readonly sessionId: string
  readonly threadId: string
  readonly turnId?: string | undefined
  readonly source: QuestionSource
  /** the MCP server that asked (elicitations) */
  readonly serverName?: string | undefined
  /** the elicitation's message, shown above the questions */
  readonly message?: string | undefined
  /** a URL elicitation's URL, to be shown as literal text: never fetched or opened (S32) */
  readonly url?: string | undefined
  /** one to three questions; a secret question is always alone */
  readonly questions: ReadonlyArray<Question>
  /** this prompt's place among the request's sequential groups */
  readonly group: { readonly index: number; readonly count: number }
  /** why the previous answer to this group was not accepted, when it is asked again */
  readonly problem?: string | undefined
}

export type QuestionReply =
  /** answers by question id; each answer is the chosen option labels or the typed text */
  | { readonly _tag: "Answered"; readonly answers: Readonly<Record<string, ReadonlyArray<string>>> }
  | { readonly _tag: "Declined" }
  | { readonly _tag: "Cancelled" }

export const answered = (answers: Readonly<Record<string, ReadonlyArray<string>>>): QuestionReply => ({
  _tag: "Answered",
  answers
})
export const declined: QuestionReply = { _tag: "Declined" }
export const cancelled: QuestionReply = { _tag: "Cancelled" }

export class QuestionPromptFailed extends Schema.TaggedError<QuestionPromptFailed>()("QuestionPromptFailed", {
  message: Schema.String
}) {}

export interface QuestionsService {
  /**
   * Shows the prompt and waits for the person. Interrupted when the request is answered by a plain-text reply, resolved
   * by the app-server, cancelled or timed out: the implementation should then withdraw what it showed.
   */
  readonly ask: (prompt: QuestionPrompt) => Effect.Effect<QuestionReply, QuestionPromptFailed>
  /** a visible operator message (an unsupported form, an invalid URL, a decline made on the person's behalf) */
  readonly notify: (notice: { readonly sessionId: string; readonly text: string }) => Effect.Effect<void>
}

/** Nobody to ask: every question is declined, never left hanging. */
export const declineAll: QuestionsService = {
  ask: () => Effect.succeed(declined),
  notify: ({ text }) => HarnessLog.debug(text)
}

/**
 * Optional port: who answers the questions a turn asks (Codex's request_user_input in Plan mode, MCP elicitations).
 * The default declines every question.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Questions } from "codex-harness"
 *
 * // answers every question with its first option, or "yes" when it has none
 * const Answers = Layer.succeed(Questions.Questions, {
 *   ask: (prompt) =>
 *     Effect.succeed(Questions.answered(Object.fromEntries(prompt.questions.map((q) => [q.id, [q.options?.[0]?.label ?? "yes"]])))),
 *   notify: ({ text }) => Effect.log(text)
 * })
 * ```
 */
export class Questions extends Context.Reference<Questions>()("codex-harness/Questions", {
  defaultValue: (): QuestionsService => declineAll
}) {}
