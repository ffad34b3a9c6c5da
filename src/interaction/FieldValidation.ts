// One form field's constraint and the answers checked against it: a typed reply becomes a wire value, and one checker
// judges both answers and schema defaults, so a default is offered only when an answer equal to it would pass. Knows
// nothing of forms, groups or the wire request; it must never accept a value that `checkValue` would refuse.
import { Either } from "effect"

export type StringFormat = "email" | "uri" | "date" | "date-time"

/** one selectable answer: `label` is shown (title, enumName, image title), `value` goes on the wire (const, id) */
export interface Choice {
  readonly label: string
  readonly value: string
}

/** a field's parsed constraints; `maxLength` / `maxItems` are already capped by the limits and the choice count */
export type Constraint =
  | {
      readonly _tag: "Text"
      readonly minLength: number
      readonly maxLength: number
      readonly format?: StringFormat | undefined
    }
  | {
      readonly _tag: "Number"
      readonly integer: boolean
      readonly minimum?: number | undefined
      readonly maximum?: number | undefined
    }
  | { readonly _tag: "Boolean" }
  | { readonly _tag: "Choice"; readonly choices: ReadonlyArray<Choice> }
  | {
      readonly _tag: "Multi"
      readonly choices: ReadonlyArray<Choice>
      readonly minItems: number
      readonly maxItems: number
    }

const codePoints = (s: string) => [...s].length

const isRealDate = (y: number, m: number, d: number) => {
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
  return days !== undefined && d >= 1 && d <= days
}
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))$/
const EMAIL = /^[^\s@<>()[\]\\,;:"]{1,64}@(?:[^\s@<>()[\]\\,;:".]+\.)+[^\s@<>()[\]\\,;:".]+$/u
const URI_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/

const isDate = (s: string) => {
  const m = DATE.exec(s)
  return m !== null && isRealDate(Number(m[1]), Number(m[2]), Number(m[3]))
}
const isDateTime = (s: string) => {
  const m = DATE_TIME.exec(s)
  if (m === null || !isRealDate(Number(m[1]), Number(m[2]), Number(m[3]))) return false
  const [h, min, sec] = [Number(m[4]), Number(m[5]), Number(m[6])]
  const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59)
  return h <= 23 && min <= 59 && sec <= 60 && offsetOk
}
const isUri = (s: string) => {
  if (!URI_SCHEME.test(s) || /[\s\u0000-\u001f\u007f-\u009f]/.test(s)) return false
  try {
    new URL(s)
    return true
  } catch {
    return false
  }
}
const formatProblem = (format: StringFormat, s: string): string | undefined => {
  switch (format) {
    case "email":
      return EMAIL.test(s) && s.length <= 254 ? undefined : "must be an email address"
    case "uri":
      return isUri(s) ? undefined : "must be an absolute URI with a scheme (such as https://...)"
    case "date":
      return isDate(s) ? undefined : "must be a date as YYYY-MM-DD"
    case "date-time":
      return isDateTime(s) ? undefined : "must be a date and time in RFC 3339 form (such as 2025-01-31T09:30:00Z)"
  }
}

const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`

/** undefined when `value` satisfies the constraint, else why not */
export const checkValue = (constraint: Constraint, value: unknown): string | undefined => {
  switch (constraint._tag) {
    case "Text": {
      if (typeof value !== "string") return "must be text"
      const n = codePoints(value)
      if (n > constraint.maxLength) return `must be at most ${count(constraint.maxLength, "character", "characters")} (got ${n})`
      if (n < constraint.minLength) return `must be at least ${count(constraint.minLength, "character", "characters")} (got ${n})`
      return constraint.format === undefined ? undefined : formatProblem(constraint.format, value)
    }
    case "Number": {
      if (typeof value !== "number" || !Number.isFinite(value)) return "must be a number"
      if (constraint.integer && !Number.isSafeInteger(value)) return "must be a whole number"
      if (constraint.minimum !== undefined && value < constraint.minimum) return `must be at least ${constraint.minimum}`
      if (constraint.maximum !== undefined && value > constraint.maximum) return `must be at most ${constraint.maximum}`
      return undefined
    }
    case "Boolean":
      return typeof value === "boolean" ? undefined : "must be Yes or No"
    case "Choice":
      return typeof value === "string" && constraint.choices.some((c) => c.value === value)
        ? undefined
        : `must be one of: ${constraint.choices.map((c) => c.label).join(", ")}`
    case "Multi": {
      if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) return "must be a list of choices"
      const bad = value.find((v) => !constraint.choices.some((c) => c.value === v))
      if (bad !== undefined) return `"${bad}" is not one of: ${constraint.choices.map((c) => c.label).join(", ")}`
      if (new Set(value).size !== value.length) return "must not choose the same option twice"
      if (value.length < constraint.minItems) return `must choose at least ${count(constraint.minItems, "option", "options")}`
      if (value.length > constraint.maxItems) return `must choose at most ${count(constraint.maxItems, "option", "options")}`
      return undefined
    }
  }
}

const YES = /^(yes|true)$/i
const NO = /^(no|false)$/i
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/

const findChoice = (choices: ReadonlyArray<Choice>, answer: string): Choice | undefined => {
  const a = answer.trim()
  const exact = choices.find((c) => c.label === a) ?? choices.find((c) => c.value === a)
  if (exact !== undefined) return exact
  const folded = choices.filter((c) => c.label.toLowerCase() === a.toLowerCase())
  return folded.length === 1 ? folded[0] : undefined
}

/** the typed value for a non-empty answer (constraints are checked afterwards by `checkValue`) */
export const parseAnswer = (constraint: Constraint, entries: ReadonlyArray<string>): Either.Either<unknown, string> => {
  const single = (): Either.Either<string, string> =>
    entries.length === 1 ? Either.right(entries[0]!.trim()) : Either.left("expects a single answer")
  switch (constraint._tag) {
    case "Text":
      // Typed text is kept as typed; several entries are lines of one answer.
      return Either.right(entries.join("\n"))
    case "Number":
      return Either.flatMap(single(), (s) =>
        NUMBER.test(s) && Number.isFinite(Number(s))
          ? Either.right(Number(s) === 0 ? 0 : Number(s))
          : Either.left(constraint.integer ? "must be a whole number" : "must be a number")
      )
    case "Boolean":
      return Either.flatMap(single(), (s) =>
        YES.test(s) ? Either.right(true) : NO.test(s) ? Either.right(false) : Either.left("must be Yes or No")
      )
    case "Choice":
      return Either.flatMap(single(), (s) => {
        const c = findChoice(constraint.choices, s)
        return c === undefined
          ? Either.left(`must be one of: ${constraint.choices.map((c) => c.label).join(", ")}`)
          : Either.right(c.value)
      })
    case "Multi": {
      const values: Array<string> = []
      for (const entry of entries) {
        const whole = findChoice(constraint.choices, entry)
        // A typed reply may list several choices in one line.
        const parts = whole === undefined ? entry.split(/[,\n]/).filter((p) => p.trim() !== "") : [entry]
        for (const part of parts) {
          const c = findChoice(constraint.choices, part)
          if (c === undefined) {
            return Either.left(`"${part.trim()}" is not one of: ${constraint.choices.map((c) => c.label).join(", ")}`)
          }
          values.push(c.value)
        }
      }
      return Either.right(values)
    }
  }
}

/** the answer that stands for a wire value (used to show a default) */
export const answerFor = (constraint: Constraint, value: unknown): ReadonlyArray<string> => {
  const label = (v: unknown, choices: ReadonlyArray<Choice>) => choices.find((c) => c.value === v)?.label ?? String(v)
  switch (constraint._tag) {
    case "Text":
      return [String(value)]
    case "Number":
      return [String(value)]
    case "Boolean":
      return [value === true ? "Yes" : "No"]
    case "Choice":
      return [label(value, constraint.choices)]
    case "Multi":
      return (value as ReadonlyArray<unknown>).map((v) => label(v, constraint.choices))
  }
}
