// MCP elicitation forms (S30, S31, S34): limits decline rather than truncate, answers are validated against the schema
// before anything is accepted, and field names survive the trip through safe question ids.
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import * as Elicitation from "../../src/interaction/Elicitation.js"

type Answers = Record<string, ReadonlyArray<string>>

const form = (
  properties: ReadonlyArray<readonly [string, unknown]>,
  required: ReadonlyArray<string> = [],
  mode = "form"
) => ({
  threadId: "t",
  turnId: "u",
  serverName: "elic",
  mode,
  _meta: null,
  message: "Please fill in",
  // fromEntries defines own keys, so a field named __proto__ is an ordinary property
  requestedSchema: { type: "object", properties: Object.fromEntries(properties), required }
})

const formPlan = (params: unknown): Elicitation.FormPlan => {
  const p = Elicitation.plan(params)
  if (p._tag !== "Form") throw new Error(`expected a form, got ${JSON.stringify(p)}`)
  return p
}
const idOf = (plan: Elicitation.FormPlan, name: string) => plan.fields.find((f) => f.name === name)!.questionId
const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected right, got ${JSON.stringify(e.left)}`)
  return e.right
}
const left = <A, E>(e: Either.Either<A, E>): E => {
  if (Either.isRight(e)) throw new Error(`expected left, got ${JSON.stringify(e.right)}`)
  return e.left
}

// ---------------------------------------------------------------------------------------------------------------------
// Generators: a field's schema together with answers drawn from its constraints and the value they must give

interface GenField {
  readonly schema: Record<string, unknown>
  /** a valid answer and the wire value it must become */
  readonly answer: fc.Arbitrary<readonly [ReadonlyArray<string>, unknown]>
  /** what an empty answer gives when the field is required and has no default (undefined: a "required" problem) */
  readonly emptyRequired?: unknown
}

const word = fc.string({ minLength: 1, maxLength: 10 }).filter((s) => s.trim() === s && s !== "")
const uniqueWords = (min: number, max: number) => fc.uniqueArray(word, { minLength: min, maxLength: max })

const optBound = (arb: fc.Arbitrary<number>) => fc.option(arb, { nil: undefined })

const textField: fc.Arbitrary<GenField> = fc
  .tuple(fc.integer({ min: 0, max: 5 }), optBound(fc.integer({ min: 1, max: 40 })))
  .map(([min, extra]) => {
    const max = extra === undefined ? undefined : min + extra
    return {
      schema: { type: "string", title: "Text", minLength: min, ...(max === undefined ? {} : { maxLength: max }) },
      answer: fc
        .string({ minLength: Math.max(min, 1), maxLength: max ?? 60 })
        .filter((s) => s.trim() !== "")
        .map((s) => [[s], s] as const)
    }
  })

const dateArb = fc.integer({ min: Date.UTC(1, 0, 1), max: Date.UTC(9999, 11, 31) }).map((ms) => new Date(ms))
const formatField: fc.Arbitrary<GenField> = fc.constantFrom("email", "uri", "date", "date-time").map((format) => ({
  schema: { type: "string", format },
  answer: (format === "email"
    ? fc.emailAddress()
    : format === "uri"
      ? fc.webUrl()
      : format === "date"
        ? dateArb.map((d) => d.toISOString().slice(0, 10))
        : dateArb.map((d) => d.toISOString())
  ).map((s) => [[s], s] as const)
}))

const sortedBounds = (lo: number, hi: number) =>
  fc
    .tuple(optBound(fc.integer({ min: lo, max: hi })), optBound(fc.integer({ min: lo, max: hi })))
    .map(([a, b]): readonly [number | undefined, number | undefined] => (a !== undefined && b !== undefined && a > b ? [b, a] : [a, b]))

const numberField: fc.Arbitrary<GenField> = fc.tuple(fc.boolean(), sortedBounds(-1000, 1000)).map(([integer, [min, max]]) => ({
  schema: { type: integer ? "integer" : "number", ...(min === undefined ? {} : { minimum: min }), ...(max === undefined ? {} : { maximum: max }) },
  answer: (integer
    ? fc.integer({ min: min ?? -1e6, max: max ?? 1e6 })
    : fc.double({ min: min ?? -1e6, max: max ?? 1e6, noNaN: true, noDefaultInfinity: true }).map((n) => (n === 0 ? 0 : n))
  ).map((n) => [[String(n)], n] as const)
}))

const booleanField: fc.Arbitrary<GenField> = fc.constant({
  schema: { type: "boolean" },
  answer: fc.constantFrom(["Yes", true], ["no", false], ["TRUE", true], ["false", false]).map(([a, v]) => [[a as string], v] as const)
})

/** choices as [label, value]: untitled enum, oneOf titles, legacy enumNames */
const choicesArb = (min: number, max: number) =>
  fc.tuple(uniqueWords(min, max), fc.constantFrom("enum", "oneOf", "enumNames")).chain(([values, style]) =>
    style === "enum"
      ? fc.constant({ style, choices: values.map((v) => [v, v] as const) })
      : uniqueWords(values.length, values.length).map((labels) => ({
          style,
          choices: values.map((v, i) => [labels[i]!, v] as const)
        }))
  )

const singleSchema = (style: string, choices: ReadonlyArray<readonly [string, string]>) =>
  style === "enum"
    ? { type: "string", enum: choices.map(([, v]) => v) }
    : style === "oneOf"
      ? { type: "string", oneOf: choices.map(([label, v]) => ({ const: v, title: label })) }
      : { type: "string", enum: choices.map(([, v]) => v), enumNames: choices.map(([label]) => label) }

const multiSchema = (style: string, choices: ReadonlyArray<readonly [string, string]>) =>
  style === "enum"
    ? { type: "array", items: { type: "string", enum: choices.map(([, v]) => v) } }
    : { type: "array", items: { anyOf: choices.map(([label, v]) => ({ const: v, title: label })) } }

const choiceField: fc.Arbitrary<GenField> = choicesArb(1, 4).map(({ style, choices }) => ({
  schema: singleSchema(style, choices),
  answer: fc.constantFrom(...choices).map(([label, v]) => [[label], v] as const)
}))

const multiField: fc.Arbitrary<GenField> = choicesArb(1, 4).chain(({ style, choices }) =>
  fc
    .tuple(fc.integer({ min: 0, max: choices.length }), fc.integer({ min: 0, max: choices.length }))
    .map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const)
    .map(([minItems, maxItems]) => ({
      schema: { ...multiSchema(style === "enum" ? "enum" : "anyOf", choices), minItems, maxItems },
      answer: fc
        .subarray([...choices], { minLength: minItems, maxLength: maxItems })
        .map((picked) => [picked.map(([label]) => label), picked.map(([, v]) => v)] as const),
      ...(minItems === 0 ? { emptyRequired: [] } : {})
    }))
)

const imageField: fc.Arbitrary<GenField> = fc
  .tuple(uniqueWords(1, 4), uniqueWords(4, 4))
  .map(([titles, ids]) => titles.map((title, i) => ({ id: `${ids[i]}-${i}`, title, image: "data:image/png;base64,AAAA" })))
  .map((items) => ({
    schema: { type: "openai/imagePicker", title: "Pick", items },
    answer: fc.constantFrom(...items).map((item) => [[item.title], item.id] as const)
  }))

const standardField = fc.oneof(textField, formatField, numberField, booleanField, choiceField, multiField)
const extendedField = fc.oneof(standardField, imageField)

const fieldName = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }).filter((s) => !/[\u0000-\u001f\u007f-\u009f]/.test(s)),
  fc.constantFrom("__proto__", "constructor", "Name", "name", "NAME", "na me", "a-b", "a_b", "名前", "x".repeat(80))
)

interface GenForm {
  readonly mode: "form" | "openai/form"
  readonly fields: ReadonlyArray<{ readonly name: string; readonly gen: GenField; readonly required: boolean; readonly secret: boolean }>
}

const formArb = (min: number, max: number): fc.Arbitrary<GenForm> =>
  fc.constantFrom("form" as const, "openai/form" as const).chain((mode) =>
    fc.uniqueArray(fieldName, { minLength: min, maxLength: max }).chain((names) =>
      fc
        .tuple(...names.map(() => fc.tuple(mode === "form" ? standardField : extendedField, fc.boolean(), fc.integer({ min: 0, max: 3 }))))
        .map((parts) => ({
          mode,
          // about one field in four is secret
          fields: parts.map(([gen, required, dice], i) => ({ name: names[i]!, gen, required, secret: dice === 0 }))
        }))
    )
  )

const paramsOf = (f: GenForm) =>
  form(
    f.fields.map((x) => [x.name, { ...x.gen.schema, ...(x.secret ? { isSecret: true } : {}) }] as const),
    f.fields.filter((x) => x.required).map((x) => x.name),
    f.mode
  )

/** answers for every field (optional ones sometimes left empty) and the content they must give */
const answersArb = (f: GenForm) =>
  fc.tuple(...f.fields.map((x) => fc.tuple(x.gen.answer, fc.boolean()))).map((drawn) => {
    const answers: Array<readonly [string, ReadonlyArray<string>]> = []
    const expected: Array<readonly [string, unknown]> = []
    drawn.forEach(([[answer, value], skip], i) => {
      const x = f.fields[i]!
      if (skip && !x.required) return
      answers.push([x.name, answer])
      // an empty multi-select answer to an optional field is the same as no answer
      if (!(Array.isArray(value) && value.length === 0 && !x.required)) expected.push([x.name, value])
    })
    return { answers, expected }
  })

const byId = (plan: Elicitation.FormPlan, answers: ReadonlyArray<readonly [string, ReadonlyArray<string>]>): Answers =>
  Object.fromEntries(answers.map(([name, a]) => [idOf(plan, name), a]))

describe("elicitation forms", () => {
  it("[S30] the real wire example: a `name` string form accepts {name: \"Ada\"} as the wire body", () => {
    const params = {
      threadId: "t",
      turnId: "u",
      serverName: "elic",
      environmentId: null,
      _meta: null,
      mode: "form",
      message: "What is your name?",
      requestedSchema: { type: "object", properties: { name: { type: "string", title: "Name" } }, required: ["name"] }
    }
    const plan = formPlan(params)
    expect(plan.message).toBe("What is your name?")
    expect(plan.groups).toHaveLength(1)
    expect(plan.groups[0]![0]).toMatchObject({ id: "name", kind: "text", required: true, isSecret: false, options: [] })
    const content = right(Elicitation.accept(plan, { name: ["Ada"] }))
    expect(Elicitation.responses.accept(content)).toEqual({ action: "accept", content: { name: "Ada" }, _meta: null })
    expect(Elicitation.responses.decline).toEqual({ action: "decline", content: null, _meta: null })
    expect(Elicitation.responses.cancel).toEqual({ action: "cancel", content: null, _meta: null })
    expect(left(Elicitation.accept(plan, {}))).toMatchObject({ questionId: "name", field: "name", reason: "required" })
  })

  it("[S30] limits are the documented ones", () => {
    expect(Elicitation.limits).toMatchObject({ maxFields: 12, groupSize: 3, maxChoices: 4, maxStringLength: 4096, maxImageItems: 4 })
  })

  it("[S30] legacy enumNames and oneOf titles are shown as labels and restored to their values", () => {
    const plan = formPlan(
      form([
        ["size", { type: "string", enum: ["s", "m", "l"], enumNames: ["Small", "Medium", "Large"] }],
        ["color", { type: "string", oneOf: [{ const: "#f00", title: "Red" }, { const: "#00f", title: "Blue" }] }],
        ["plain", { type: "string", enum: ["a", "b"] }],
        ["tags", { type: "array", items: { anyOf: [{ const: "x", title: "Ex" }, { const: "y", title: "Why" }] }, maxItems: 1 }]
      ])
    )
    expect(plan.groups[0]!.map((q) => [q.kind, q.options.map((o) => o.label)])).toEqual([
      ["choice", ["Small", "Medium", "Large"]],
      ["choice", ["Red", "Blue"]],
      ["choice", ["a", "b"]]
    ])
    expect(plan.groups[1]![0]).toMatchObject({ kind: "multi", hint: "at most 1 choices" })
    expect(right(Elicitation.accept(plan, { size: ["Medium"], color: ["blue"], plain: ["b"], tags: ["Why"] }))).toEqual({
      size: "m",
      color: "#00f",
      plain: "b",
      tags: ["y"]
    })
    // the const value is accepted too; something else is not
    expect(right(Elicitation.accept(plan, { size: ["l"] }))).toEqual({ size: "l" })
    expect(left(Elicitation.accept(plan, { size: ["XL"] })).message).toBe("size: must be one of: Small, Medium, Large")
    expect(left(Elicitation.accept(plan, { tags: ["Ex", "Why"] })).reason).toBe("must choose at most 1 option")
    // enumNames that do not line up with enum cannot be mapped
    expect(Elicitation.plan(form([["s", { type: "string", enum: ["a", "b"], enumNames: ["A"] }]]))._tag).toBe("Decline")
  })

  it("[S30] valid defaults are offered and used; a default that breaks its own field's constraints is ignored", () => {
    const plan = formPlan(
      form(
        [
          ["nick", { type: "string", maxLength: 5, default: "bob" }],
          ["long", { type: "string", maxLength: 3, default: "toolong" }],
          ["age", { type: "integer", minimum: 0, maximum: 150, default: 30 }],
          ["bad_age", { type: "integer", minimum: 0, maximum: 150, default: 200 }],
          ["frac", { type: "integer", default: 1.5 }],
          ["ok", { type: "boolean", default: false }],
          ["wrong_type", { type: "boolean", default: "yes" }],
          ["size", { type: "string", enum: ["s", "m"], enumNames: ["Small", "Medium"], default: "m" }],
          ["bad_size", { type: "string", enum: ["s", "m"], default: "xl" }],
          ["tags", { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, maxItems: 2, default: ["a", "c"] }],
          ["bad_tags", { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, maxItems: 1, default: ["a", "c"] }],
          ["mail", { type: "string", format: "email", default: "not an email" }]
        ],
        ["long", "bad_age"]
      )
    )
    const q = (name: string) => plan.groups.flat().find((x) => x.id === idOf(plan, name))!
    expect(q("nick").defaultAnswer).toEqual(["bob"])
    expect(q("age").defaultAnswer).toEqual(["30"])
    expect(q("ok").defaultAnswer).toEqual(["No"])
    expect(q("size").defaultAnswer).toEqual(["Medium"])
    expect(q("tags").defaultAnswer).toEqual(["a", "c"])
    for (const name of ["long", "bad_age", "frac", "wrong_type", "bad_size", "bad_tags", "mail"]) {
      expect(q(name).defaultAnswer, name).toBeUndefined()
    }
    // a required field whose default is invalid still needs an answer
    expect(left(Elicitation.accept(plan, {}))).toMatchObject({ field: "long", reason: "required" })
    const content = right(Elicitation.accept(plan, { long: ["abc"], bad_age: ["7"] }))
    expect(content).toEqual({ nick: "bob", long: "abc", age: 30, bad_age: 7, ok: false, size: "m", tags: ["a", "c"] })
    // an answer wins over the default
    expect(right(Elicitation.accept(plan, { long: ["abc"], bad_age: ["7"], nick: ["al"] })).nick).toBe("al")
  })

  it("[S31] imagePicker: choices titled by item, restored to the item id; images are not kept", () => {
    const items = [
      { id: "img_1", title: "Sunset", image: "https://example.com/a.png" },
      { id: "img_2", title: "Forest", image: "data:image/png;base64,AAAA" }
    ]
    const plan = formPlan(form([["pick", { type: "openai/imagePicker", title: "Choose one", items }]], ["pick"], "openai/form"))
    expect(plan.mode).toBe("openai/form")
    expect(plan.groups[0]![0]).toMatchObject({ kind: "choice", header: "Choose one", options: [{ label: "Sunset" }, { label: "Forest" }] })
    expect(JSON.stringify(plan)).not.toContain("example.com")
    expect(JSON.stringify(plan)).not.toContain("base64")
    expect(right(Elicitation.accept(plan, { pick: ["Forest"] }))).toEqual({ pick: "img_2" })
    expect(left(Elicitation.accept(plan, { pick: ["Desert"] })).questionId).toBe("pick")
    // the alias mode is the same extended form; plain `form` does not allow the extension
    expect(Elicitation.plan(form([["pick", { type: "openai/imagePicker", items }]], [], "openaiForm"))._tag).toBe("Form")
    expect(Elicitation.plan(form([["pick", { type: "openai/imagePicker", items }]], [], "form"))._tag).toBe("Decline")
  })

  it("[S30] string formats and lengths are validated before accepting", () => {
    const plan = formPlan(
      form([
        ["mail", { type: "string", format: "email" }],
        ["site", { type: "string", format: "uri" }],
        ["day", { type: "string", format: "date" }],
        ["at", { type: "string", format: "date-time" }],
        ["code", { type: "string", minLength: 2, maxLength: 4 }]
      ])
    )
    const ok: Answers = { mail: ["ada@example.com"], site: ["https://example.com/x"], day: ["2024-02-29"], at: ["2024-02-29T23:59:60+01:00"], code: ["abc"] }
    expect(right(Elicitation.accept(plan, ok))).toEqual({
      mail: "ada@example.com",
      site: "https://example.com/x",
      day: "2024-02-29",
      at: "2024-02-29T23:59:60+01:00",
      code: "abc"
    })
    const bad: ReadonlyArray<readonly [string, string]> = [
      ["mail", "ada@"],
      ["mail", "ada example@x.org"],
      ["site", "example.com/x"],
      ["site", "/relative"],
      ["day", "2023-02-29"],
      ["day", "2024-13-01"],
      ["day", "24-01-01"],
      ["at", "2024-01-01 10:00:00Z"],
      ["at", "2024-01-01T24:00:00Z"],
      ["at", "2024-01-01T10:00:00"],
      ["code", "a"],
      ["code", "abcde"]
    ]
    for (const [name, value] of bad) {
      expect(left(Elicitation.accept(plan, { ...ok, [name]: [value] })).field, `${name}=${value}`).toBe(name)
    }
    expect(plan.groups.flat().map((q) => q.hint)).toEqual([
      "email address",
      "URI such as https://...",
      "date as YYYY-MM-DD",
      "date and time (RFC 3339)",
      "2 to 4 characters"
    ])
  })

  it("[S30] numbers, integers and booleans: parsed, typed and bounded", () => {
    const plan = formPlan(
      form([
        ["n", { type: "number", minimum: -1.5, maximum: 10 }],
        ["i", { type: "integer", minimum: 1 }],
        ["b", { type: "boolean" }]
      ])
    )
    expect(plan.groups[0]!.map((q) => [q.kind, q.hint ?? null, q.options.map((o) => o.label)])).toEqual([
      ["number", "-1.5 to 10", []],
      ["integer", "whole number, at least 1", []],
      ["boolean", null, ["Yes", "No"]]
    ])
    expect(right(Elicitation.accept(plan, { n: [" 2.5 "], i: ["3"], b: ["YES"] }))).toEqual({ n: 2.5, i: 3, b: true })
    expect(right(Elicitation.accept(plan, { n: ["-1.5"], b: ["false"] }))).toEqual({ n: -1.5, b: false })
    for (const [id, value] of [["n", "10.5"], ["n", "ten"], ["n", "0x1"], ["i", "2.5"], ["i", "0"], ["b", "maybe"], ["n", "Infinity"]] as const) {
      expect(left(Elicitation.accept(plan, { [id]: [value] })).questionId, `${id}=${value}`).toBe(id)
    }
  })

  it("[S30] a form with no fields asks Continue / Decline and accepts {} only on Continue", () => {
    const plan = formPlan(form([]))
    expect(plan.groups).toEqual([[Elicitation.continueQuestion]])
    expect(Elicitation.continued({ continue: ["Continue"] })).toBe(true)
    expect(Elicitation.continued({ continue: ["Decline"] })).toBe(false)
    expect(Elicitation.continued({})).toBe(false)
    expect(right(Elicitation.accept(plan, { continue: ["Continue"] }))).toEqual({})
    expect(right(Elicitation.acceptGroup(plan, 0, { continue: ["continue"] }))).toEqual({})
    // never accepted without an explicit Continue
    expect(left(Elicitation.accept(plan, { continue: ["Decline"] })).questionId).toBe("continue")
    expect(left(Elicitation.acceptGroup(plan, plan.groups[0]!, {})).questionId).toBe("continue")
  })

  it("[S30] unsupported modes, malformed requests and unsatisfiable schemas are visible declines", () => {
    const declines: ReadonlyArray<unknown> = [
      { mode: "openai/userVerification", challenge: "c", description: "d", title: "t" },
      { mode: "somethingElse", message: "m" },
      { message: "no mode" },
      null,
      "form",
      { mode: "form", message: "m" },
      { mode: "form", message: "m", requestedSchema: { type: "string" } },
      { mode: "form", message: "m", requestedSchema: { type: "object", properties: [] } },
      form([["a", { type: "string" }]], ["b"]),
      form([["", { type: "string" }]]),
      form([["a\u0007", { type: "string" }]]),
      form([["a", { type: "string", minLength: 5, maxLength: 2 }]]),
      form([["a", { type: "integer", minimum: 1.2, maximum: 1.8 }]]),
      form([["a", { type: "array", items: { type: "string", enum: ["x"] }, minItems: 2 }]]),
      form([["a", { type: "string", enum: ["x", "x"] }]]),
      form([["a", { type: "string", oneOf: [{ const: "x", title: "Same" }, { const: "y", title: "Same" }] }]]),
      form([["a", { type: "string", enum: [] }]])
    ]
    for (const params of declines) {
      const p = Elicitation.plan(params)
      expect(p, JSON.stringify(params)).toMatchObject({ _tag: "Decline", visible: true })
      if (p._tag === "Decline") expect(p.reason).not.toMatch(/\n/)
    }
  })

  it("[S30] a Url plan carries the URL literally with a Continue / Decline question; a bad URL is a visible decline", () => {
    const ok = Elicitation.plan({ mode: "url", message: "Sign in", url: "https://example.com/auth?x=1", elicitationId: "e1" })
    expect(ok).toEqual({
      _tag: "Url",
      message: "Sign in",
      url: "https://example.com/auth?x=1",
      elicitationId: "e1",
      question: Elicitation.continueQuestion
    })
    expect(Elicitation.continueQuestion).toMatchObject({ kind: "continue", options: [{ label: "Continue" }, { label: "Decline" }] })
    const bad = Elicitation.plan({ mode: "url", message: "Sign in", url: "javascript:alert(1)", elicitationId: "e1" })
    expect(bad).toMatchObject({ _tag: "Decline", visible: true })
    expect(bad._tag === "Decline" && bad.reason).toMatch(/scheme/)
  })

  it("[S34] isSecret is taken only from the schema, never from names", () => {
    const plan = formPlan(
      form([
        ["password", { type: "string" }],
        ["pin", { type: "string", isSecret: true }],
        ["token", { type: "string" }]
      ])
    )
    expect(plan.groups.map((g) => g.map((q) => [q.id, q.isSecret]))).toEqual([[["password", false]], [["pin", true]], [["token", false]]])
  })

  it("[S30] acceptGroup validates only its group, by index or by questions", () => {
    const plan = formPlan(form([1, 2, 3, 4].map((n) => [`f${n}`, { type: "integer", maximum: 5 }] as const), ["f1", "f4"]))
    expect(plan.groups.map((g) => g.length)).toEqual([3, 1])
    expect(right(Elicitation.acceptGroup(plan, 0, { f1: ["1"], f4: ["99"] }))).toEqual({ f1: 1 })
    expect(left(Elicitation.acceptGroup(plan, plan.groups[1]!, { f1: ["1"], f4: ["99"] })).questionId).toBe("f4")
    expect(left(Elicitation.acceptGroup(plan, 0, { f2: ["6"] })).questionId).toBe("f1")
  })

  // -------------------------------------------------------------------------------------------------------------------
  // Properties

  it("[S30] every valid generated form round-trips: original names, typed values, valid content", () => {
    fc.assert(
      fc.property(
        formArb(1, 12).chain((f) => answersArb(f).map((a) => [f, a] as const)),
        ([f, { answers, expected }]) => {
          const plan = formPlan(paramsOf(f))
          const content = right(Elicitation.accept(plan, byId(plan, answers)))
          const want = new Map(expected)
          expect(Object.keys(content).sort()).toEqual([...want.keys()].sort())
          for (const [name, value] of want) expect(content[name], name).toEqual(value)
          // accepting group by group gives the same content
          const merged = plan.groups.flatMap((_, i) => Object.entries(right(Elicitation.acceptGroup(plan, i, byId(plan, answers)))))
          expect(merged).toEqual(Object.entries(content))
        }
      ),
      { numRuns: 300 }
    )
  })

  it("[S30][S34] groups hold at most 3 questions, keep property order, and a secret question is alone", () => {
    fc.assert(
      fc.property(formArb(1, 12), (f) => {
        const params = paramsOf(f)
        const plan = formPlan(params)
        // property order is the object's own key order (integer-like names come first, as JSON.parse gives them)
        const order = Object.keys(params.requestedSchema.properties)
        expect(plan.groups.flat().map((q) => plan.fieldNames[q.id])).toEqual(order)
        for (const group of plan.groups) {
          expect(group.length).toBeGreaterThanOrEqual(1)
          expect(group.length).toBeLessThanOrEqual(3)
          if (group.some((q) => q.isSecret)) expect(group).toHaveLength(1)
        }
        expect(plan.groups.flat().filter((q) => q.isSecret).length).toBe(f.fields.filter((x) => x.secret).length)
        const requiredByName = new Map(f.fields.map((x) => [x.name, x.required]))
        expect(plan.groups.flat().map((q) => q.required)).toEqual(order.map((name) => requiredByName.get(name)))
      }),
      { numRuns: 300 }
    )
  })

  it("[S30] question ids are safe, unique, bounded and stable, and map back to the field names", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fieldName, { minLength: 1, maxLength: 12 }), (names) => {
        const params = form(names.map((n) => [n, { type: "string" }] as const))
        const plan = formPlan(params)
        // the order the server's object has: integer-like names come first, as JSON.parse and fromEntries give them
        const order = Object.keys(params.requestedSchema.properties)
        const ids = plan.fields.map((f) => f.questionId)
        for (const id of ids) expect(id).toMatch(/^[a-z0-9_]{1,32}$/)
        expect(new Set(ids).size).toBe(names.length)
        expect(formPlan(params).fields.map((f) => f.questionId)).toEqual(ids)
        expect(ids.map((id) => plan.fieldNames[id])).toEqual(order)
        expect(Elicitation.safeIds(order)).toEqual(ids)
      }),
      { numRuns: 300 }
    )
  })

  it("[S30] field names `__proto__` and `constructor` come back as own content keys and no prototype changes", () => {
    const before = Object.getOwnPropertyNames(Object.prototype)
    // as the wire gives it: JSON.parse makes `__proto__` an own key (a multi-select, so its value is an object)
    const properties: unknown = JSON.parse(
      '{"__proto__": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}, "constructor": {"type": "integer"}, "0": {"type": "boolean"}}'
    )
    const plan = formPlan({ mode: "form", message: "m", requestedSchema: { type: "object", properties, required: ["__proto__"] } })
    expect(plan.fields.map((f) => f.name)).toEqual(["0", "__proto__", "constructor"])
    const answers: Answers = { [idOf(plan, "__proto__")]: ["a, b"], [idOf(plan, "constructor")]: ["42"], [idOf(plan, "0")]: ["yes"] }
    const content = right(Elicitation.accept(plan, answers))
    expect(Object.getPrototypeOf(content)).toBe(Object.prototype)
    expect(Object.getOwnPropertyNames(content)).toEqual(["0", "__proto__", "constructor"])
    expect(Object.getOwnPropertyDescriptor(content, "__proto__")?.value).toEqual(["a", "b"])
    expect(Object.getOwnPropertyDescriptor(content, "constructor")?.value).toBe(42)
    expect(JSON.stringify(Elicitation.responses.accept(content).content)).toBe('{"0":true,"__proto__":["a","b"],"constructor":42}')
    // one group alike; an unanswered optional `constructor` is left out, never read off Object.prototype
    const group = right(Elicitation.acceptGroup(plan, 0, { [idOf(plan, "__proto__")]: ["b"] }))
    expect(Object.getPrototypeOf(group)).toBe(Object.prototype)
    expect(Object.getOwnPropertyNames(group)).toEqual(["__proto__"])
    expect(Object.getOwnPropertyDescriptor(group, "__proto__")?.value).toEqual(["b"])
    expect(Object.getOwnPropertyNames(Object.prototype)).toEqual(before)
  })

  const violation: fc.Arbitrary<readonly [unknown, RegExp]> = fc.oneof(
    choicesArb(5, 8).map(({ style, choices }) => [singleSchema(style, choices), /has [5-8] choices; at most 4/] as const),
    choicesArb(5, 8).map(({ style, choices }) => [multiSchema(style === "enum" ? "enum" : "anyOf", choices), /has [5-8] choices; at most 4/] as const),
    fc.constantFrom<readonly [unknown, RegExp]>(
      [{ type: "object", properties: { a: { type: "string" } } }, /unsupported type "object"/],
      [{ type: "array", items: { type: "number" } }, /unsupported array/],
      [{ type: "array", items: { type: "string" } }, /unsupported array/],
      [{ type: "array", items: { type: "object", properties: {} } }, /unsupported array/],
      [{ type: "null" }, /unsupported type/],
      [{ title: "no type" }, /no supported type/],
      [{ type: ["string", "null"] }, /no supported type/],
      [{ type: "string", format: "hostname" }, /format/],
      [{ type: "string", minLength: 4097 }, /cannot be answered/],
      [{ type: "number", minimum: 5, maximum: 1 }, /cannot be answered/],
      ["not a schema", /not a schema object/]
    )
  )

  it("[S30] every limit violation declines the whole form visibly, never a truncated form", () => {
    fc.assert(
      fc.property(formArb(0, 11), violation, fc.nat(), (f, [bad, why], at) => {
        const props: Array<readonly [string, unknown]> = f.fields.map((x) => [x.name, x.gen.schema])
        const names = new Set(f.fields.map((x) => x.name))
        let name = "bad_field"
        while (names.has(name)) name += "_"
        props.splice(at % (props.length + 1), 0, [name, bad])
        const plan = Elicitation.plan(form(props, [], f.mode))
        expect(plan._tag).toBe("Decline")
        if (plan._tag === "Decline") {
          expect(plan.visible).toBe(true)
          expect(plan.reason).toMatch(why)
        }
      }),
      { numRuns: 300 }
    )
  })

  it("[S30] more than 12 fields is declined, never cut to 12", () => {
    fc.assert(
      fc.property(formArb(13, 20), (f) => {
        const plan = Elicitation.plan(paramsOf(f))
        expect(plan).toMatchObject({ _tag: "Decline", visible: true })
        expect(plan._tag === "Decline" && plan.reason).toContain(`${f.fields.length} fields`)
      }),
      { numRuns: 50 }
    )
  })

  it("[S31] an imagePicker with more than 4 items, or an unknown extended type, is a visible decline", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          uniqueWords(5, 9).map((titles) => [{ type: "openai/imagePicker", items: titles.map((t, i) => ({ id: `i${i}`, title: t, image: "x" })) }, /image items/] as const),
          fc.stringMatching(/^[a-zA-Z/]{1,20}$/)
            .filter((t) => !["string", "number", "integer", "boolean", "array", "object", "null", "openai/imagePicker"].includes(t))
            .map((t) => [{ type: t, title: "x" }, /unknown extended type/] as const)
        ),
        ([schema, why]) => {
          const plan = Elicitation.plan(form([["ok", { type: "string" }], ["x", schema]], [], "openai/form"))
          expect(plan).toMatchObject({ _tag: "Decline", visible: true })
          expect(plan._tag === "Decline" && plan.reason).toMatch(why)
        }
      ),
      { numRuns: 200 }
    )
  })

  const outOfBounds: fc.Arbitrary<readonly [Record<string, unknown>, string]> = fc.oneof(
    // strings over 4,096 characters, even where the schema allows more
    fc.tuple(fc.integer({ min: 4097, max: 6000 }), fc.option(fc.integer({ min: 4096, max: 100_000 }), { nil: undefined })).map(
      ([n, maxLength]) => [{ type: "string", ...(maxLength === undefined ? {} : { maxLength }) }, "x".repeat(n)] as const
    ),
    fc.integer({ min: 1, max: 50 }).chain((max) =>
      fc.integer({ min: max + 1, max: max + 50 }).map((n) => [{ type: "string", maxLength: max }, "y".repeat(n)] as const)
    ),
    fc.integer({ min: 2, max: 50 }).chain((min) =>
      fc.integer({ min: 1, max: min - 1 }).map((n) => [{ type: "string", minLength: min }, "z".repeat(n)] as const)
    ),
    sortedBounds(-100, 100)
      .filter(([lo, hi]) => lo !== undefined || hi !== undefined)
      .chain(([lo, hi]) =>
        fc
          .oneof(
            ...(lo === undefined ? [] : [fc.double({ max: lo, maxExcluded: true, min: lo - 1000, noNaN: true }).filter((n) => n < lo)]),
            ...(hi === undefined ? [] : [fc.double({ min: hi, minExcluded: true, max: hi + 1000, noNaN: true }).filter((n) => n > hi)])
          )
          .map((n) => [{ type: "number", minimum: lo, maximum: hi }, String(n)] as const)
      ),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Number.isInteger(n)).map((n) => [{ type: "integer" }, String(n)] as const),
    fc.constantFrom("abc", "1,5", "", "1 2", "NaN").filter((s) => s !== "").map((s) => [{ type: "number" }, s] as const),
    word.filter((w) => !/^(yes|no|true|false)$/i.test(w)).map((w) => [{ type: "boolean" }, w] as const),
    uniqueWords(2, 5)
      .filter((ws) => !ws.slice(1).some((w) => w.toLowerCase() === ws[0]!.toLowerCase()))
      .map((ws) => [{ type: "string", enum: ws.slice(1) }, ws[0]!] as const),
    fc.constantFrom("plain", "a@", "@b.c", "a@b", "a b@c.d").map((s) => [{ type: "string", format: "email" }, s] as const),
    fc.constantFrom("2021-02-29", "2021-04-31", "2021-1-01", "20210101").map((s) => [{ type: "string", format: "date" }, s] as const)
  )

  it("[S30] out-of-bounds answers are rejected with a one-line problem naming the question", () => {
    fc.assert(
      fc.property(outOfBounds, fc.boolean(), ([schema, answer], required) => {
        const plan = formPlan(form([["Field Name", schema]], required ? ["Field Name"] : []))
        const problem = left(Elicitation.accept(plan, { field_name: [answer] }))
        expect(problem).toMatchObject({ questionId: "field_name", field: "Field Name" })
        expect(problem.message).not.toMatch(/\n/)
      }),
      { numRuns: 300 }
    )
  })

  it("[S30] multi-select answers outside minItems/maxItems, or repeated, are rejected", () => {
    fc.assert(
      fc.property(
        uniqueWords(2, 4).chain((ws) =>
          fc.integer({ min: 1, max: ws.length - 1 }).chain((maxItems) =>
            fc.oneof(
              // too many
              fc.subarray(ws, { minLength: maxItems + 1 }).map((picked) => [ws, { maxItems }, picked] as const),
              // too few
              fc.constant([ws, { minItems: maxItems + 1 }, ws.slice(0, maxItems)] as const),
              // the same choice twice
              fc.constantFrom(...ws).map((w) => [ws, {}, [w, w]] as const)
            )
          )
        ),
        ([ws, bounds, picked]) => {
          const plan = formPlan(form([["m", { type: "array", items: { type: "string", enum: ws }, ...bounds }]]))
          expect(left(Elicitation.accept(plan, { m: picked })).questionId).toBe("m")
        }
      ),
      { numRuns: 200 }
    )
  })
})
