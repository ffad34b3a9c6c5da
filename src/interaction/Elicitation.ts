// MCP elicitations (S30, S31, S34) as pure mappings: a `mcpServer/elicitation/request` becomes a plan (sequential groups
// of Questions, a URL to confirm, or a decline), and the person's answers become the wire response only after every
// field has been validated against its schema. Beyond any limit the whole request is declined: a form that is cut short
// would hand the server an answer to a question it did not ask. The field names are the server's and untrusted, so
// accepted content must never be built by assigning them to an object (`__proto__` would set a prototype).
import { Either } from "effect"
import type { Question } from "../ports/Questions.js"
import { limits } from "./ElicitationLimits.js"
import { continued, continueQuestion, groupQuestions, questionFor } from "./ElicitationQuestions.js"
import { decodeForm, decodeObject, decodeUrl, type Field, isRecord, parseField } from "./ElicitationSchema.js"
import { checkValue, parseAnswer } from "./FieldValidation.js"
import { safeIds, unmappableName } from "./SafeIds.js"
import { validateUrl } from "./UrlElicitation.js"

export { limits } from "./ElicitationLimits.js"
export { continued, continueQuestion, groupQuestions } from "./ElicitationQuestions.js"
export type { Field } from "./ElicitationSchema.js"
export { type Choice, checkValue, type Constraint, type StringFormat } from "./FieldValidation.js"
export { safeIds } from "./SafeIds.js"

/**
 * A form to ask. `groups` are asked in order; `fields` holds what each question id maps to. A form with no fields (a bare
 * confirmation) has a single group holding the `continue` question: `accept` gives `{}` only for an explicit Continue
 * and a Problem otherwise, so a caller that wants to decline at once checks `continued` first.
 */
export interface FormPlan {
  readonly _tag: "Form"
  readonly mode: "form" | "openai/form"
  readonly message: string
  readonly fields: ReadonlyArray<Field>
  /** safe question id → original field name */
  readonly fieldNames: Readonly<Record<string, string>>
  readonly groups: ReadonlyArray<ReadonlyArray<Question>>
}

/** A URL to show as literal text (never fetched or opened) with Continue / Decline; see `continued`. */
export interface UrlPlan {
  readonly _tag: "Url"
  readonly message: string
  readonly url: string
  readonly elicitationId: string
  readonly question: Question
}

/**
 * Answer `responses.decline` without asking. `visible` is true for every decline this module makes: each one is a
 * decision taken on the person's behalf (an unsupported form, an unknown extended field type, an invalid URL, an
 * unsupported mode), so the operator is told why rather than seeing the tool fail silently.
 */
export interface DeclinePlan {
  readonly _tag: "Decline"
  readonly reason: string
  readonly visible: boolean
}

export type ElicitationPlan = FormPlan | UrlPlan | DeclinePlan

/** why an answer was not accepted: the question to ask again and a one-line reason */
export interface Problem {
  readonly questionId: string
  readonly field: string
  readonly reason: string
  /** `<label>: <reason>`, one line, fit to show when the group is asked again */
  readonly message: string
}

/** The wire bodies for `mcpServer/elicitation/request`. */
export const responses = {
  /** `null` content for a URL elicitation's Continue: MCP's URL mode carries none */
  accept: (content: Readonly<Record<string, unknown>> | null) => ({ action: "accept" as const, content, _meta: null }),
  decline: { action: "decline", content: null, _meta: null },
  cancel: { action: "cancel", content: null, _meta: null }
} as const

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim()

const decline = (reason: string): DeclinePlan => ({ _tag: "Decline", reason: oneLine(reason), visible: true })

const planForm = (mode: "form" | "openai/form", message: string, requestedSchema: unknown): ElicitationPlan => {
  const schema = decodeObject(requestedSchema)
  if (schema === undefined || !isRecord(schema.properties)) {
    return decline(`the ${mode} elicitation's requestedSchema is not an object schema with properties`)
  }
  // Fields follow the object's own key order, integer-like names first: JSON.parse has already lost the wire's order,
  // and this one is the same every time for the same schema.
  const entries = Object.entries(schema.properties)
  if (entries.length > limits.maxFields) {
    return decline(`the form has ${entries.length} fields; at most ${limits.maxFields} are supported`)
  }
  const names = entries.map(([name]) => name)
  for (const name of names) {
    const problem = unmappableName(name)
    if (problem !== undefined) return decline(`the form cannot be mapped: ${problem}`)
  }
  const required = schema.required ?? []
  const missing = required.find((name) => !names.includes(name))
  if (missing !== undefined) return decline(`the form requires "${oneLine(missing).slice(0, 64)}", which it does not define`)
  const ids = safeIds(names)
  const fields: Array<Field> = []
  const questions: Array<Question> = []
  for (const [i, [name, property]] of entries.entries()) {
    const parsed = parseField(property, mode === "openai/form")
    if (Either.isLeft(parsed)) return decline(`field "${oneLine(name).slice(0, 64)}" ${parsed.left}`)
    const p = parsed.right
    const label = oneLine(p.title ?? "") || oneLine(name)
    const fallback = p.default ?? undefined
    const field: Field = {
      questionId: ids[i]!,
      name,
      label,
      required: required.includes(name),
      isSecret: p.isSecret === true,
      constraint: p.constraint,
      // A default that breaks its own field's constraints is ignored rather than sent.
      ...(fallback !== undefined && checkValue(p.constraint, fallback) === undefined ? { defaultValue: fallback } : {})
    }
    fields.push(field)
    questions.push(questionFor(field, label, p.description ?? p.title ?? name))
  }
  const fieldNames: Record<string, string> = Object.create(null)
  for (const f of fields) fieldNames[f.questionId] = f.name
  return {
    _tag: "Form",
    mode,
    message,
    fields,
    fieldNames,
    groups: fields.length === 0 ? [[continueQuestion]] : groupQuestions(questions)
  }
}

/** Maps `mcpServer/elicitation/request` params to what to ask, or to a decline. Pure. */
export const plan = (params: unknown): ElicitationPlan => {
  const mode = isRecord(params) ? params.mode : undefined
  if (mode === "form" || mode === "openai/form" || mode === "openaiForm") {
    const request = decodeForm(params)
    if (request === undefined) return decline(`the ${mode} elicitation is malformed (it needs a message and a requestedSchema)`)
    return planForm(mode === "form" ? "form" : "openai/form", request.message, request.requestedSchema)
  }
  if (mode === "url") {
    const request = decodeUrl(params)
    if (request === undefined) return decline("the url elicitation is malformed (it needs a message, url and elicitationId)")
    return Either.match(validateUrl(request.url), {
      onLeft: (reason) => decline(`the elicitation's URL was refused: ${reason}`),
      onRight: (url): ElicitationPlan => ({
        _tag: "Url",
        message: request.message,
        url,
        elicitationId: request.elicitationId,
        question: continueQuestion
      })
    })
  }
  return decline(
    typeof mode === "string" ? `elicitation mode "${oneLine(mode).slice(0, 64)}" is not supported` : "the elicitation has no mode"
  )
}

const problem = (field: Field, reason: string): Problem => ({
  questionId: field.questionId,
  field: field.name,
  reason,
  message: oneLine(`${field.label}: ${reason}`)
})

/** the field's wire value for an answer: `undefined` when it is to be left out of the content */
const readField = (field: Field, answer: ReadonlyArray<string> | undefined): Either.Either<unknown, Problem> => {
  const entries = (answer ?? []).filter((a) => a.trim() !== "")
  if (entries.length === 0) {
    if (field.defaultValue !== undefined) return Either.right(field.defaultValue)
    // A required multi-select that allows no choices is answered by choosing none.
    if (field.required && field.constraint._tag === "Multi" && field.constraint.minItems === 0) return Either.right([])
    return field.required ? Either.left(problem(field, "required")) : Either.right(undefined)
  }
  return Either.flatMap(
    Either.mapLeft(parseAnswer(field.constraint, entries), (reason) => problem(field, reason)),
    (value) => {
      const reason = checkValue(field.constraint, value)
      return reason === undefined ? Either.right(value) : Either.left(problem(field, reason))
    }
  )
}

/** a form with no fields is a bare confirmation: only an explicit Continue accepts it */
const confirmation = (answers: Readonly<Record<string, ReadonlyArray<string>>>): Either.Either<Record<string, unknown>, Problem> =>
  continued(answers)
    ? Either.right({})
    : Either.left({ questionId: continueQuestion.id, field: "", reason: "not confirmed", message: "Continue?: not confirmed" })

/**
 * The content object for `[field name, value]` pairs, in field order. Each key is defined, never assigned: assigning a
 * server's field named `__proto__` would replace the object's prototype instead of adding the field.
 */
const contentOf = (pairs: ReadonlyArray<readonly [string, unknown]>): Record<string, unknown> => {
  const content: Record<string, unknown> = {}
  for (const [name, value] of pairs) {
    Object.defineProperty(content, name, { value, enumerable: true, writable: true, configurable: true })
  }
  return content
}

const acceptFields = (
  fields: ReadonlyArray<Field>,
  answers: Readonly<Record<string, ReadonlyArray<string>>>
): Either.Either<Record<string, unknown>, Problem> => {
  const pairs: Array<readonly [string, unknown]> = []
  for (const field of fields) {
    // own answers only: a question id such as `constructor` must not find Object.prototype's
    const answer = Object.hasOwn(answers, field.questionId) ? answers[field.questionId] : undefined
    const read = readField(field, answer)
    if (Either.isLeft(read)) return Either.left(read.left)
    if (read.right !== undefined) pairs.push([field.name, read.right])
  }
  return Either.right(contentOf(pairs))
}

/**
 * Validates every field before anything is accepted; right is the content under the original field names (typed values,
 * choice values rather than labels, valid defaults for unanswered fields, unanswered optional fields left out).
 */
export const accept = (
  plan: FormPlan,
  answers: Readonly<Record<string, ReadonlyArray<string>>>
): Either.Either<Record<string, unknown>, Problem> =>
  plan.fields.length === 0 ? confirmation(answers) : acceptFields(plan.fields, answers)

/**
 * Validates one group's answers (the group by index in `plan.groups`, or its questions), so a caller can ask just that
 * group again; right is that group's part of the content.
 */
export const acceptGroup = (
  plan: FormPlan,
  group: number | ReadonlyArray<Question>,
  answers: Readonly<Record<string, ReadonlyArray<string>>>
): Either.Either<Record<string, unknown>, Problem> => {
  const questions = typeof group === "number" ? (plan.groups[group] ?? []) : group
  if (plan.fields.length === 0) return confirmation(answers)
  const ids = new Set(questions.map((q) => q.id))
  return acceptFields(
    plan.fields.filter((f) => ids.has(f.questionId)),
    answers
  )
}
