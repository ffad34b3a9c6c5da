// How mapped form fields are put to a person: one Question per field (kind, options, hint, default shown as an answer),
// prompts of a few questions with secrets alone (S34), and the Continue / Decline question of a bare confirmation or
// a URL. It only shapes what is asked; it must never decide what an answer means for the wire (that is `accept`).
import type { Question, QuestionOption } from "../ports/Questions.js"
import { limits } from "./ElicitationLimits.js"
import type { Field } from "./ElicitationSchema.js"
import { answerFor, type Constraint } from "./FieldValidation.js"

const hintFor = (c: Constraint): string | undefined => {
  const range = (lo: number | undefined, hi: number | undefined, unit: string) =>
    lo !== undefined && hi !== undefined
      ? lo === hi
        ? `exactly ${lo}${unit}`
        : `${lo} to ${hi}${unit}`
      : lo !== undefined
        ? `at least ${lo}${unit}`
        : hi !== undefined
          ? `at most ${hi}${unit}`
          : undefined
  const join = (parts: ReadonlyArray<string | undefined>) => {
    const kept = parts.filter((p): p is string => p !== undefined)
    return kept.length === 0 ? undefined : kept.join(", ")
  }
  switch (c._tag) {
    case "Text": {
      const format =
        c.format === "email"
          ? "email address"
          : c.format === "uri"
            ? "URI such as https://..."
            : c.format === "date"
              ? "date as YYYY-MM-DD"
              : c.format === "date-time"
                ? "date and time (RFC 3339)"
                : undefined
      const lo = c.minLength > 0 ? c.minLength : undefined
      const hi = c.maxLength < limits.maxStringLength || lo !== undefined ? c.maxLength : undefined
      return join([format, range(lo, hi, " characters")])
    }
    case "Number":
      return join([c.integer ? "whole number" : undefined, range(c.minimum, c.maximum, "")])
    case "Multi":
      return range(c.minItems > 0 ? c.minItems : undefined, c.maxItems < c.choices.length || c.minItems > 0 ? c.maxItems : undefined, " choices")
    case "Boolean":
    case "Choice":
      return undefined
  }
}

export const questionFor = (field: Field, header: string, text: string): Question => {
  const c = field.constraint
  const options: ReadonlyArray<QuestionOption> =
    c._tag === "Boolean"
      ? [{ label: "Yes" }, { label: "No" }]
      : c._tag === "Choice" || c._tag === "Multi"
        ? c.choices.map((choice) => ({ label: choice.label }))
        : []
  const kind =
    c._tag === "Text"
      ? "text"
      : c._tag === "Number"
        ? c.integer
          ? "integer"
          : "number"
        : c._tag === "Boolean"
          ? "boolean"
          : c._tag === "Choice"
            ? "choice"
            : "multi"
  return {
    id: field.questionId,
    header,
    text,
    kind,
    options,
    allowOther: false,
    isSecret: field.isSecret,
    required: field.required,
    defaultAnswer: field.defaultValue === undefined ? undefined : answerFor(c, field.defaultValue),
    hint: hintFor(c)
  }
}

/** Splits questions into prompts of up to `groupSize`, in order; a secret question always stands alone (S34). */
export const groupQuestions = (questions: ReadonlyArray<Question>): ReadonlyArray<ReadonlyArray<Question>> => {
  const groups: Array<ReadonlyArray<Question>> = []
  let current: Array<Question> = []
  const flush = () => {
    if (current.length > 0) groups.push(current)
    current = []
  }
  for (const q of questions) {
    if (q.isSecret) {
      flush()
      groups.push([q])
    } else {
      current.push(q)
      if (current.length === limits.groupSize) flush()
    }
  }
  flush()
  return groups
}

/** the question of a URL elicitation and of a form with no fields */
export const continueQuestion: Question = {
  id: "continue",
  text: "Continue?",
  kind: "continue",
  options: [{ label: "Continue" }, { label: "Decline" }],
  allowOther: false,
  isSecret: false,
  required: true
}

/** true only when the `continue` question was answered Continue (any case); anything else is a decline */
export const continued = (answers: Readonly<Record<string, ReadonlyArray<string>>>): boolean => {
  const answer = Object.hasOwn(answers, continueQuestion.id) ? answers[continueQuestion.id] : undefined
  const first = answer?.find((a) => a.trim() !== "")
  return first !== undefined && first.trim().toLowerCase() === "continue"
}
