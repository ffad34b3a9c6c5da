// request_user_input: questions under safe ids and back under the request's own ids; choices checked against their
// labels unless other text is allowed; secret questions alone (S34); too many questions answered empty, never cut.
import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import * as UserInput from "../../src/interaction/UserInput.js"

const example = {
  threadId: "t",
  turnId: "u",
  itemId: "c_rui",
  isBlocking: true,
  autoResolutionMs: null,
  questions: [
    {
      id: "db_choice",
      header: "Database",
      question: "…",
      isOther: true,
      isSecret: false,
      options: [
        { label: "Postgres (Recommended)", description: "Robust" },
        { label: "SQLite", description: "Simple" }
      ]
    }
  ]
}

const ask = (params: unknown): UserInput.AskPlan => {
  const p = UserInput.plan(params)
  if (p._tag !== "Ask") throw new Error(`expected questions, got ${JSON.stringify(p)}`)
  return p
}

const q = (id: string, extra: Record<string, unknown> = {}) => ({ id, header: id.toUpperCase(), question: `${id}?`, ...extra })
const choices = { options: [{ label: "Red", description: "warm" }, { label: "Blue", description: "cool" }] }

describe("request_user_input", () => {
  it("[S33] the real example maps to one choice question and answers {answers:{db_choice:{answers:[\"SQLite\"]}}}", () => {
    const plan = ask(example)
    expect(plan.groups).toEqual([
      [
        {
          id: "db_choice",
          header: "Database",
          text: "…",
          kind: "choice",
          options: [
            { label: "Postgres (Recommended)", description: "Robust" },
            { label: "SQLite", description: "Simple" }
          ],
          allowOther: true,
          isSecret: false,
          required: false
        }
      ]
    ])
    const checked = UserInput.check(plan, { db_choice: ["SQLite"] })
    expect(checked).toEqual(Either.right({ db_choice: ["SQLite"] }))
    expect(UserInput.response(plan, { db_choice: ["SQLite"] })).toEqual({ answers: { db_choice: { answers: ["SQLite"] } } })
  })

  it("[S33] a choice must be one of the labels unless other text is allowed; labels are matched case-insensitively", () => {
    const plan = ask({ questions: [q("color", choices), q("free", { ...choices, isOther: true }), q("note")] })
    expect(plan.groups[0]!.map((x) => [x.kind, x.allowOther])).toEqual([
      ["choice", false],
      ["choice", true],
      ["text", false]
    ])
    const problem = Either.getLeft(UserInput.check(plan, { color: ["Green"] }))
    expect(problem._tag === "Some" && problem.value).toMatchObject({ questionId: "color", field: "color", message: "COLOR: must be one of: Red, Blue" })
    expect(UserInput.check(plan, { color: ["blue"], free: ["Green"], note: ["anything at all"] })).toEqual(
      Either.right({ color: ["Blue"], free: ["Green"], note: ["anything at all"] })
    )
    // the response never carries a choice that check would refuse
    expect(UserInput.response(plan, { color: ["Green"], free: ["red"] })).toEqual({
      answers: { color: { answers: [] }, free: { answers: ["Red"] }, note: { answers: [] } }
    })
  })

  it("[S33] empty answers are allowed and reach the model as []", () => {
    const plan = ask({ questions: [q("a", choices), q("b")] })
    expect(UserInput.check(plan, {})).toEqual(Either.right({ a: [], b: [] }))
    expect(UserInput.response(plan, { a: ["  "] })).toEqual({ answers: { a: { answers: [] }, b: { answers: [] } } })
    expect(UserInput.emptyAnswers(plan)).toEqual({ answers: { a: { answers: [] }, b: { answers: [] } } })
  })

  it("[S34] isSecret questions are asked alone; secrecy is never inferred from the id", () => {
    const plan = ask({ questions: [q("password"), q("token", { isSecret: true }), q("c"), q("d"), q("e"), q("f")] })
    expect(plan.groups.map((g) => g.map((x) => [x.id, x.isSecret]))).toEqual([
      [["password", false]],
      [["token", true]],
      [["c", false], ["d", false], ["e", false]],
      [["f", false]]
    ])
  })

  it("[S33] more than 12 questions, repeated ids or a malformed request are not asked: empty answers instead", () => {
    const many = { questions: Array.from({ length: 13 }, (_, i) => q(`q${i}`)) }
    const p = UserInput.plan(many)
    expect(p).toMatchObject({ _tag: "Decline", visible: true })
    expect(p._tag === "Decline" && p.reason).toContain("13 questions")
    expect(p._tag === "Decline" && Object.keys(p.response.answers)).toHaveLength(13)
    expect(p._tag === "Decline" && p.response.answers.q0).toEqual({ answers: [] })
    expect(UserInput.plan({ questions: [q("a"), q("a")] })).toMatchObject({ _tag: "Decline", response: { answers: { a: { answers: [] } } } })
    expect(UserInput.plan({ questions: "nope" })).toMatchObject({ _tag: "Decline", response: { answers: {} } })
    expect(UserInput.plan({ questions: [] })._tag).toBe("Decline")
    expect(UserInput.emptyResponse).toEqual({ answers: {} })
  })

  it("[S33] an answer longer than 4,096 characters is refused", () => {
    const plan = ask({ questions: [q("note")] })
    expect(Either.isLeft(UserInput.check(plan, { note: ["x".repeat(4097)] }))).toBe(true)
    expect(Either.isRight(UserInput.check(plan, { note: ["x".repeat(4096)] }))).toBe(true)
  })

  it("[S33] checkGroup checks only its group, by index or by questions", () => {
    const plan = ask({ questions: [q("a", choices), q("b", choices), q("c", choices), q("d", choices)] })
    expect(UserInput.checkGroup(plan, 1, { a: ["nope"], d: ["Red"] })).toEqual(Either.right({ d: ["Red"] }))
    expect(Either.isLeft(UserInput.checkGroup(plan, plan.groups[0]!, { a: ["nope"] }))).toBe(true)
  })

  it("[S33][S34] generated requests: safe unique ids, groups of at most 3 with secrets alone, answers back under the original ids", () => {
    const question = fc.record({
      id: fc.string({ minLength: 1, maxLength: 12 }),
      secret: fc.boolean(),
      other: fc.boolean(),
      labels: fc.uniqueArray(fc.string({ minLength: 1, maxLength: 8 }).filter((s) => s.trim() === s && s !== ""), {
        maxLength: 4,
        selector: (s) => s.toLowerCase()
      })
    })
    fc.assert(
      fc.property(
        fc.uniqueArray(question, { minLength: 1, maxLength: 12, selector: (x) => x.id }).chain((qs) =>
          fc.tuple(fc.constant(qs), fc.tuple(...qs.map((x) => (x.labels.length > 0 ? fc.subarray(x.labels, { maxLength: 1 }) : fc.array(fc.string(), { maxLength: 2 })))))
        ),
        ([qs, picks]) => {
          const params = {
            questions: qs.map((x) => ({
              id: x.id,
              header: "h",
              question: "q",
              isSecret: x.secret,
              isOther: x.other,
              options: x.labels.length > 0 ? x.labels.map((label) => ({ label, description: "" })) : null
            }))
          }
          const plan = ask(params)
          const ids = plan.entries.map((e) => e.question.id)
          for (const id of ids) expect(id).toMatch(/^[a-z0-9_]{1,32}$/)
          expect(new Set(ids).size).toBe(qs.length)
          expect(plan.entries.map((e) => e.id)).toEqual(qs.map((x) => x.id))
          expect(plan.groups.flat().map((x) => x.id)).toEqual(ids)
          for (const g of plan.groups) {
            expect(g.length).toBeLessThanOrEqual(3)
            if (g.some((x) => x.isSecret)) expect(g).toHaveLength(1)
          }
          const answers = Object.fromEntries(ids.map((id, i) => [id, picks[i]!]))
          expect(Either.isRight(UserInput.check(plan, answers))).toBe(true)
          const wire = UserInput.response(plan, answers)
          expect(Object.keys(wire.answers).sort()).toEqual(qs.map((x) => x.id).sort())
          qs.forEach((x, i) => expect(wire.answers[x.id]!.answers).toEqual(picks[i]!.filter((a) => a.trim() !== "")))
        }
      ),
      { numRuns: 300 }
    )
  })
})
