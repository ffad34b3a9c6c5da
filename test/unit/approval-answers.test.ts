// The terminal approval prompt's answers: y/yes/o/once, a/always, n/no/d/deny in any case; anything else asks again
// with a hint, a bounded number of times, then denies and says so. An "always" that later allows a request by itself
// is announced through the same printer.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ApprovalPromptsCli from "../../src/cli/approvalPrompts.js"
import { ApprovalPrompts, type ApprovalRequest } from "../../src/ports/ApprovalPrompts.js"

const request: ApprovalRequest = {
  kind: "command", sessionId: "s", threadId: "t", turnId: "u", itemId: "i", command: "rm -rf build", cwd: "/w"
}

/** a prompt port fed by `answers`, recording every prompt it showed and every line it printed */
const scripted = (answers: Array<string>) => {
  const prompts: Array<string> = []
  const said: Array<string> = []
  const layer = ApprovalPromptsCli.terminalWith(
    (prompt) =>
      Effect.sync(() => {
        prompts.push(prompt)
        return answers.shift() ?? "(none left)"
      }),
    (line) => Effect.sync(() => void said.push(line))
  )
  return { prompts, said, port: Effect.provide(ApprovalPrompts, layer) }
}

describe("terminal approval answers", () => {
  it("maps every spelling of the three choices, case and spaces aside; anything else is no answer", () => {
    for (const a of ["y", "yes", "o", "once", "Y", " YES ", "Once"]) expect(ApprovalPromptsCli.parseAnswer(a)).toBe("allowOnce")
    for (const a of ["a", "always", "A", "ALWAYS "]) expect(ApprovalPromptsCli.parseAnswer(a)).toBe("allowAlways")
    for (const a of ["n", "no", "d", "deny", "N", " No", "DENY"]) expect(ApprovalPromptsCli.parseAnswer(a)).toBe("deny")
    for (const a of ["", "   ", "yess", "sure", "ok", "y es", "nope", "1"]) expect(ApprovalPromptsCli.parseAnswer(a)).toBeUndefined()
  })

  it.effect("a recognised answer decides at once, whatever its case", () =>
    Effect.gen(function* () {
      for (const [answer, decision] of [["YES", "allowOnce"], ["Always", "allowAlways"], ["no", "deny"]] as const) {
        const s = scripted([answer])
        expect(yield* Effect.flatMap(s.port, (p) => p.ask(request))).toBe(decision)
        expect(s.prompts).toHaveLength(1)
        expect(s.prompts[0]).toContain("Codex wants to run: rm -rf build")
        expect(s.prompts[0]).toContain("[y]es once / [a]lways / [n]o")
        expect(s.said).toEqual([])
      }
    }))

  it.effect("an unreadable answer (an empty line too) asks again with the hint; a later good one decides", () =>
    Effect.gen(function* () {
      const s = scripted(["", "yess", "y"])
      expect(yield* Effect.flatMap(s.port, (p) => p.ask(request))).toBe("allowOnce")
      expect(s.prompts).toHaveLength(3)
      expect(s.prompts.slice(1)).toEqual([0, 1].map(() => expect.stringContaining(ApprovalPromptsCli.hint)))
      expect(s.said).toEqual([])
    }))

  it.effect(`after ${ApprovalPromptsCli.maxAsks} unreadable answers the request is denied, and that is said`, () =>
    Effect.gen(function* () {
      const s = scripted(["sure", "", "ok", "y"])
      expect(yield* Effect.flatMap(s.port, (p) => p.ask(request))).toBe("deny")
      expect(s.prompts).toHaveLength(ApprovalPromptsCli.maxAsks)
      expect(s.said).toEqual([`approval: denied command "rm -rf build" (no answer among the choices after ${ApprovalPromptsCli.maxAsks} tries)`])
    }))

  it.effect("a request an earlier \"always\" allowed is announced in one line", () =>
    Effect.gen(function* () {
      const s = scripted([])
      const port = yield* s.port
      yield* port.remembered!(request)
      expect(s.said).toEqual([`approval: allowed command "rm -rf build" (you answered "always" earlier)`])
      expect(s.prompts).toEqual([])
    }))
})
