// MCP elicitations (S30, S31, S34) as pure mappings: a `mcpServer/elicitation/request` becomes a plan (sequential groups
// of Questions, a URL to confirm, or a decline), and the person's answers become the wire response only after every
// field has been validated against its schema. Beyond any limit the whole request is declined: a form that is cut short
// would hand the server an answer to a question it did not ask.
import { Either, Schema } from "effect"
import type { Question, QuestionOption } from "../ports/Questions.js"
import { validateUrl } from "./UrlElicitation.js"

/** S30/S31 limits. Anything beyond them declines the whole request, never truncates it. */
export const limits = {
  /** fields per form (standard and extended) */
  maxFields: 12,
  /** questions per prompt; a secret question is always alone */
  groupSize: 3,
  /** choices per single or multi select field */
  maxChoices: 4,
  /** longest free-text value, in code points; a larger `maxLength` is lowered to it */
  maxStringLength: 4096,
  /** items per `openai/imagePicker` */
  maxImageItems: 4,
  /** longest safe question id */
  maxQuestionIdLength: 32,
  /** longest field name that is mapped at all */
  maxFieldNameLength: 256
} as const

export type StringFormat = "email" | "uri" | "date" | "date-time"
const FORMATS: ReadonlyArray<string> = ["email", "uri", "date", "date-time"]

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

export interface Field {
  /** the safe id the question is asked and answered under */
  readonly questionId: string
  /** the original property name, restored in accepted content */
  readonly name: string
  /** shown to the person and used in problems */
  readonly label: string
  readonly required: boolean
  readonly isSecret: boolean
  readonly constraint: Constraint
  /** the schema's default as a wire value, present only when it satisfies the field's own constraints */
  readonly defaultValue?: unknown
}

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

// ---------------------------------------------------------------------------------------------------------------------
// Safe question ids

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/**
 * Safe ids (`[a-z0-9_]`, at most 32 characters, unique) for names in order: a slug of the name, with `_2`, `_3`, ...
 * on collision. Depends only on the names and their order, so a given schema always maps the same way.
 */
export const safeIds = (names: ReadonlyArray<string>): ReadonlyArray<string> => {
  const max = limits.maxQuestionIdLength
  const used = new Set<string>()
  return names.map((name) => {
    const slug = name
      .normalize("NFKD")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "_")
      .replace(/^_+|_+$/g, "")
      .slice(0, max)
      .replace(/_+$/, "")
    const base = slug === "" ? "field" : slug
    let id = base
    for (let n = 2; used.has(id); n++) {
      const suffix = `_${n}`
      id = base.slice(0, max - suffix.length) + suffix
    }
    used.add(id)
    return id
  })
}

/** a field name we refuse to map: empty, absurdly long, or holding control characters */
const unmappableName = (name: string): string | undefined =>
  name === ""
    ? "a field has an empty name"
    : name.length > limits.maxFieldNameLength
      ? `a field name is longer than ${limits.maxFieldNameLength} characters`
      : CONTROL.test(name)
        ? "a field name contains control characters"
        : undefined

// ---------------------------------------------------------------------------------------------------------------------
// Wire decoding

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const OptText = Schema.optional(Schema.NullOr(Schema.String))
const OptCount = Schema.optional(Schema.NullOr(Schema.NonNegativeInt))
const OptBound = Schema.optional(Schema.NullOr(Schema.Finite))
const Common = {
  title: OptText,
  description: OptText,
  isSecret: Schema.optional(Schema.NullOr(Schema.Boolean)),
  default: Schema.optional(Schema.Unknown)
}
const ConstOption = Schema.Struct({ const: Schema.String, title: OptText })

const StringField = Schema.Struct({
  type: Schema.Literal("string"),
  ...Common,
  minLength: OptCount,
  maxLength: OptCount,
  format: OptText
})
const EnumField = Schema.Struct({
  type: Schema.Literal("string"),
  ...Common,
  enum: Schema.Array(Schema.String),
  enumNames: Schema.optional(Schema.NullOr(Schema.Array(Schema.String)))
})
const OneOfField = Schema.Struct({ type: Schema.Literal("string"), ...Common, oneOf: Schema.Array(ConstOption) })
const NumberField = Schema.Struct({
  type: Schema.Literal("number", "integer"),
  ...Common,
  minimum: OptBound,
  maximum: OptBound
})
const BooleanField = Schema.Struct({ type: Schema.Literal("boolean"), ...Common })
const ArrayField = Schema.Struct({
  type: Schema.Literal("array"),
  ...Common,
  minItems: OptCount,
  maxItems: OptCount,
  items: Schema.Union(
    Schema.Struct({ type: Schema.Literal("string"), enum: Schema.Array(Schema.String) }),
    Schema.Struct({ type: Schema.optional(Schema.Literal("string")), anyOf: Schema.Array(ConstOption) }),
    Schema.Struct({ type: Schema.optional(Schema.Literal("string")), oneOf: Schema.Array(ConstOption) })
  )
})
// The image itself is deliberately not decoded: it is never fetched, kept or shown.
const ImagePickerField = Schema.Struct({
  type: Schema.Literal("openai/imagePicker"),
  ...Common,
  items: Schema.Array(Schema.Struct({ id: Schema.String, title: Schema.String }))
})

const FormRequest = Schema.Struct({
  mode: Schema.Literal("form", "openai/form", "openaiForm"),
  message: Schema.String,
  requestedSchema: Schema.Unknown
})
const UrlRequest = Schema.Struct({
  mode: Schema.Literal("url"),
  message: Schema.String,
  url: Schema.String,
  elicitationId: Schema.String
})
const ObjectSchema = Schema.Struct({
  type: Schema.Literal("object"),
  properties: Schema.Unknown,
  required: Schema.optional(Schema.NullOr(Schema.Array(Schema.String)))
})

const decode = <A, I>(schema: Schema.Schema<A, I>) => {
  const run = Schema.decodeUnknownEither(schema)
  return (u: unknown): A | undefined => Either.getOrUndefined(run(u))
}
const decodeString = decode(StringField)
const decodeEnum = decode(EnumField)
const decodeOneOf = decode(OneOfField)
const decodeNumber = decode(NumberField)
const decodeBoolean = decode(BooleanField)
const decodeArray = decode(ArrayField)
const decodeImagePicker = decode(ImagePickerField)
const decodeForm = decode(FormRequest)
const decodeUrl = decode(UrlRequest)
const decodeObject = decode(ObjectSchema)

const JSON_TYPES: ReadonlyArray<string> = ["string", "number", "integer", "boolean", "array", "object", "null"]

// ---------------------------------------------------------------------------------------------------------------------
// Values: one checker for both answers and defaults, so a default is used only when an answer equal to it would pass

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
const parseAnswer = (constraint: Constraint, entries: ReadonlyArray<string>): Either.Either<unknown, string> => {
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
const answerFor = (constraint: Constraint, value: unknown): ReadonlyArray<string> => {
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

// ---------------------------------------------------------------------------------------------------------------------
// Planning

type Parsed = { readonly constraint: Constraint; readonly title?: string | null | undefined; readonly description?: string | null | undefined; readonly isSecret?: boolean | null | undefined; readonly default?: unknown }
type FieldResult = Either.Either<Parsed, string>

const choicesProblem = (choices: ReadonlyArray<Choice>, max: number, what: string): string | undefined => {
  if (choices.length === 0) return `has no ${what}`
  if (choices.length > max) return `has ${choices.length} ${what}; at most ${max} are allowed`
  if (new Set(choices.map((c) => c.value)).size !== choices.length) return `has duplicate ${what}`
  if (new Set(choices.map((c) => c.label)).size !== choices.length) return `has duplicate ${what} titles`
  if (choices.some((c) => c.label.trim() === "")) return `has a ${what.replace(/s$/, "")} with an empty title`
  return undefined
}

const withChoices = (
  common: Omit<Parsed, "constraint">,
  choices: ReadonlyArray<Choice>,
  max: number,
  what: string,
  make: (choices: ReadonlyArray<Choice>) => Constraint | string
): FieldResult => {
  const problem = choicesProblem(choices, max, what)
  if (problem !== undefined) return Either.left(problem)
  const constraint = make(choices)
  return typeof constraint === "string" ? Either.left(constraint) : Either.right({ ...common, constraint })
}

const fromConst = (options: ReadonlyArray<{ readonly const: string; readonly title?: string | null | undefined }>) =>
  options.map((o) => ({ label: o.title ?? o.const, value: o.const }))

/** one property schema → its constraint, or why it cannot be asked */
const parseField = (schema: unknown, extended: boolean): FieldResult => {
  if (!isRecord(schema)) return Either.left("is not a schema object")
  const type = schema.type
  if (typeof type !== "string") return Either.left("has no supported type")
  const malformed = Either.left(`has a malformed "${type}" schema`)
  switch (type) {
    case "string": {
      if ("enum" in schema) {
        const f = decodeEnum(schema)
        if (f === undefined) return malformed
        const names = f.enumNames ?? undefined
        if (names !== undefined && names.length !== f.enum.length) return Either.left("has enumNames that do not match its enum")
        const choices = f.enum.map((value, i) => ({ label: names?.[i] ?? value, value }))
        return withChoices(f, choices, limits.maxChoices, "choices", (choices) => ({ _tag: "Choice", choices }))
      }
      if ("oneOf" in schema) {
        const f = decodeOneOf(schema)
        if (f === undefined) return malformed
        return withChoices(f, fromConst(f.oneOf), limits.maxChoices, "choices", (choices) => ({ _tag: "Choice", choices }))
      }
      const f = decodeString(schema)
      if (f === undefined) return malformed
      const format = f.format ?? undefined
      if (format !== undefined && !FORMATS.includes(format)) return Either.left(`has an unsupported format "${format}"`)
      const minLength = f.minLength ?? 0
      const maxLength = Math.min(f.maxLength ?? limits.maxStringLength, limits.maxStringLength)
      if (minLength > maxLength) return Either.left(`cannot be answered (minLength ${minLength} exceeds ${maxLength})`)
      return Either.right({ ...f, constraint: { _tag: "Text", minLength, maxLength, format: format as StringFormat | undefined } })
    }
    case "number":
    case "integer": {
      const f = decodeNumber(schema)
      if (f === undefined) return malformed
      const minimum = f.minimum ?? undefined
      const maximum = f.maximum ?? undefined
      const integer = type === "integer"
      const lowest = minimum === undefined ? undefined : integer ? Math.ceil(minimum) : minimum
      if (lowest !== undefined && maximum !== undefined && lowest > maximum) {
        return Either.left(`cannot be answered (no ${type} between ${minimum} and ${maximum})`)
      }
      return Either.right({ ...f, constraint: { _tag: "Number", integer, minimum, maximum } })
    }
    case "boolean": {
      const f = decodeBoolean(schema)
      return f === undefined ? malformed : Either.right({ ...f, constraint: { _tag: "Boolean" } })
    }
    case "array": {
      const f = decodeArray(schema)
      if (f === undefined) return Either.left("is an unsupported array (only multi-select string choices are)")
      const items = f.items
      const choices =
        "enum" in items ? items.enum.map((value) => ({ label: value, value })) : fromConst("anyOf" in items ? items.anyOf : items.oneOf)
      return withChoices(f, choices, limits.maxChoices, "choices", (choices) => {
        const minItems = f.minItems ?? 0
        const maxItems = Math.min(f.maxItems ?? choices.length, choices.length)
        return minItems > maxItems
          ? `cannot be answered (minItems ${minItems} exceeds ${maxItems})`
          : { _tag: "Multi", choices, minItems, maxItems }
      })
    }
    case "openai/imagePicker": {
      if (!extended) return Either.left(`has the extended type "${type}", which mode "form" does not allow`)
      const f = decodeImagePicker(schema)
      if (f === undefined) return malformed
      const choices = f.items.map((item) => ({ label: item.title, value: item.id }))
      return withChoices(f, choices, limits.maxImageItems, "image items", (choices) => ({ _tag: "Choice", choices }))
    }
    default:
      return Either.left(
        JSON_TYPES.includes(type) || !extended ? `has the unsupported type "${type}"` : `has the unknown extended type "${type}"`
      )
  }
}

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim()

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

const questionFor = (field: Field, header: string, text: string): Question => {
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

const decline = (reason: string): DeclinePlan => ({ _tag: "Decline", reason: oneLine(reason), visible: true })

const planForm = (mode: "form" | "openai/form", message: string, requestedSchema: unknown): ElicitationPlan => {
  const schema = decodeObject(requestedSchema)
  if (schema === undefined || !isRecord(schema.properties)) {
    return decline(`the ${mode} elicitation's requestedSchema is not an object schema with properties`)
  }
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

// ---------------------------------------------------------------------------------------------------------------------
// Accepting

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

const acceptFields = (
  fields: ReadonlyArray<Field>,
  answers: Readonly<Record<string, ReadonlyArray<string>>>
): Either.Either<Record<string, unknown>, Problem> => {
  // Defined rather than assigned, so a field named `__proto__` stays an ordinary key.
  const content: Record<string, unknown> = {}
  for (const field of fields) {
    const answer = Object.hasOwn(answers, field.questionId) ? answers[field.questionId] : undefined
    const read = readField(field, answer)
    if (Either.isLeft(read)) return Either.left(read.left)
    if (read.right !== undefined) {
      Object.defineProperty(content, field.name, { value: read.right, enumerable: true, writable: true, configurable: true })
    }
  }
  return Either.right(content)
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
