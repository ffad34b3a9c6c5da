// `item/tool/requestUserInput` (the model's request_user_input tool) as pure mappings: the request's questions become
// Questions under safe ids, and the answers go back under the original ids. The tool has no decline: a request that
// cannot be asked is answered with empty answers, which the model sees.
import { Either, Schema } from "effect"
import type { Question } from "../ports/Questions.js"
import { groupQuestions, type Problem, safeIds } from "./Elicitation.js"

export const limits = {
  /** questions per request; a request with more is not asked and every question gets an empty answer */
  maxQuestions: 12,
  /** longest typed answer, in code points */
  maxAnswerLength: 4096
} as const

export interface UserInputResponse {
  readonly answers: Readonly<Record<string, { readonly answers: ReadonlyArray<string> }>>
}

export interface Entry {
  /** the request's own id, restored in the response */
  readonly id: string
  readonly question: Question
}

export interface AskPlan {
  readonly _tag: "Ask"
  readonly entries: ReadonlyArray<Entry>
  readonly groups: ReadonlyArray<ReadonlyArray<Question>>
}

/**
 * Not asked: answer `response` (an empty answer for every question id that could be read). `visible` is always true:
 * the person should learn that Codex asked something that could not be shown.
 */
export interface DeclinePlan {
  readonly _tag: "Decline"
  readonly reason: string
  readonly visible: boolean
  readonly response: UserInputResponse
}

export type UserInputPlan = AskPlan | DeclinePlan

const AnswerOption = Schema.Struct({ label: Schema.String, description: Schema.optional(Schema.NullOr(Schema.String)) })
const RequestQuestion = Schema.Struct({
  id: Schema.String,
  header: Schema.optional(Schema.NullOr(Schema.String)),
  question: Schema.String,
  isOther: Schema.optional(Schema.NullOr(Schema.Boolean)),
  isSecret: Schema.optional(Schema.NullOr(Schema.Boolean)),
  options: Schema.optional(Schema.NullOr(Schema.Array(AnswerOption)))
})
const Request = Schema.Struct({ questions: Schema.Array(RequestQuestion) })
const decodeRequest = Schema.decodeUnknownEither(Request)

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** builds the wire answers under the original ids; defined, not assigned, so an id such as `__proto__` stays a key */
const build = (pairs: ReadonlyArray<readonly [string, ReadonlyArray<string>]>): UserInputResponse => {
  const answers: Record<string, { readonly answers: ReadonlyArray<string> }> = {}
  for (const [id, list] of pairs) {
    Object.defineProperty(answers, id, { value: { answers: list }, enumerable: true, writable: true, configurable: true })
  }
  return { answers }
}

const unanswerable = (reason: string, params: unknown): DeclinePlan => {
  // Best effort: empty answers for whatever ids can be read, so the model learns nothing was chosen.
  const raw = isRecord(params) && Array.isArray(params.questions) ? params.questions : []
  const ids = [...new Set(raw.flatMap((q) => (isRecord(q) && typeof q.id === "string" ? [q.id] : [])))]
  return { _tag: "Decline", reason, visible: true, response: build(ids.map((id) => [id, []])) }
}

/** Maps request_user_input params to questions (secret ones alone, groups of up to three), or to an empty answer. Pure. */
export const plan = (params: unknown): UserInputPlan => {
  const decoded = decodeRequest(params)
  if (Either.isLeft(decoded)) return unanswerable("the request_user_input request is malformed", params)
  const questions = decoded.right.questions
  if (questions.length === 0) return unanswerable("the request_user_input request has no questions", params)
  if (questions.length > limits.maxQuestions) {
    return unanswerable(`the request asks ${questions.length} questions; at most ${limits.maxQuestions} are supported`, params)
  }
  if (new Set(questions.map((q) => q.id)).size !== questions.length) {
    return unanswerable("the request repeats a question id", params)
  }
  const ids = safeIds(questions.map((q) => q.id))
  const entries = questions.map((q, i): Entry => {
    const options = (q.options ?? []).map((o) => ({ label: o.label, description: o.description ?? undefined }))
    return {
      id: q.id,
      question: {
        id: ids[i]!,
        header: q.header ?? undefined,
        text: q.question,
        kind: options.length > 0 ? "choice" : "text",
        options,
        allowOther: q.isOther === true,
        isSecret: q.isSecret === true,
        // the tool accepts an empty answer, so nothing is required
        required: false
      }
    }
  })
  return { _tag: "Ask", entries, groups: groupQuestions(entries.map((e) => e.question)) }
}

const problem = (q: Question, id: string, reason: string): Problem => ({
  questionId: q.id,
  field: id,
  reason,
  message: `${(q.header ?? q.text).replace(/\s+/g, " ").trim()}: ${reason}`
})

const readEntry = (entry: Entry, answer: ReadonlyArray<string> | undefined): Either.Either<ReadonlyArray<string>, Problem> => {
  const q = entry.question
  const given = (answer ?? []).filter((a) => a.trim() !== "")
  const out: Array<string> = []
  for (const a of given) {
    if ([...a].length > limits.maxAnswerLength) {
      return Either.left(problem(q, entry.id, `must be at most ${limits.maxAnswerLength} characters`))
    }
    if (q.kind === "choice") {
      const t = a.trim()
      const folded = q.options.filter((o) => o.label.toLowerCase() === t.toLowerCase())
      const label = q.options.find((o) => o.label === t)?.label ?? (folded.length === 1 ? folded[0]!.label : undefined)
      if (label !== undefined) out.push(label)
      else if (q.allowOther) out.push(a)
      else return Either.left(problem(q, entry.id, `must be one of: ${q.options.map((o) => o.label).join(", ")}`))
    } else {
      out.push(a)
    }
  }
  return Either.right(out)
}

type Answers = Readonly<Record<string, ReadonlyArray<string>>>

const answerOf = (answers: Answers, entry: Entry) =>
  Object.hasOwn(answers, entry.question.id) ? answers[entry.question.id] : undefined

const checkEntries = (entries: ReadonlyArray<Entry>, answers: Answers): Either.Either<Record<string, ReadonlyArray<string>>, Problem> => {
  const checked: Record<string, ReadonlyArray<string>> = {}
  for (const entry of entries) {
    const read = readEntry(entry, answerOf(answers, entry))
    if (Either.isLeft(read)) return Either.left(read.left)
    checked[entry.question.id] = read.right
  }
  return Either.right(checked)
}

/**
 * Checks answers keyed by safe question id; right is the same answers normalised (blank entries dropped, choices spelled
 * as their labels), still keyed by question id. A choice answer must be one of the labels unless the question allows
 * other text; an empty answer is fine (the model sees it).
 */
export const check = (plan: AskPlan, answers: Answers): Either.Either<Record<string, ReadonlyArray<string>>, Problem> =>
  checkEntries(plan.entries, answers)

/** `check` for one group (by index in `plan.groups`, or its questions), so a caller can ask just that group again. */
export const checkGroup = (
  plan: AskPlan,
  group: number | ReadonlyArray<Question>,
  answers: Answers
): Either.Either<Record<string, ReadonlyArray<string>>, Problem> => {
  const questions = typeof group === "number" ? (plan.groups[group] ?? []) : group
  const ids = new Set(questions.map((q) => q.id))
  return checkEntries(
    plan.entries.filter((e) => ids.has(e.question.id)),
    answers
  )
}

/**
 * The wire response, every question under its original id. Total: an unanswered question gets `[]`, and an entry that
 * `check` would refuse (a choice that is not a label, an over-long text) is left out rather than sent, so call `check`
 * first to tell the person.
 */
export const response = (plan: AskPlan, answers: Answers): UserInputResponse =>
  build(
    plan.entries.map((entry) => {
      const kept = (answerOf(answers, entry) ?? []).flatMap((a) => Either.getOrElse(readEntry(entry, [a]), () => []))
      return [entry.id, kept] as const
    })
  )

/** no answers at all: for a request that could not even be read */
export const emptyResponse: UserInputResponse = { answers: {} }

/** every question answered with nothing: for a declined, cancelled or timed-out prompt */
export const emptyAnswers = (plan: AskPlan): UserInputResponse => build(plan.entries.map((e) => [e.id, []]))
