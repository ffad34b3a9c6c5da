// The wire side of an MCP elicitation: decoding a request's params and mapping each property of its requestedSchema to
// a field constraint, or to the reason it cannot be asked. Pure; it must never loosen a schema to make it fit (a field
// that cannot be asked faithfully is refused, and the caller declines the whole form).
import { Either, Schema } from "effect"
import { limits } from "./ElicitationLimits.js"
import type { Choice, Constraint, StringFormat } from "./FieldValidation.js"

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

const FORMATS: ReadonlyArray<string> = ["email", "uri", "date", "date-time"]

export const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

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
export const decodeForm = decode(FormRequest)
export const decodeUrl = decode(UrlRequest)
export const decodeObject = decode(ObjectSchema)

const JSON_TYPES: ReadonlyArray<string> = ["string", "number", "integer", "boolean", "array", "object", "null"]

/** a property's constraint, with the keys every field type shares still as the server sent them */
export interface Parsed {
  readonly constraint: Constraint
  readonly title?: string | null | undefined
  readonly description?: string | null | undefined
  readonly isSecret?: boolean | null | undefined
  readonly default?: unknown
}
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
export const parseField = (schema: unknown, extended: boolean): FieldResult => {
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
