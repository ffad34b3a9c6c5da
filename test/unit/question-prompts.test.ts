// The CLI's rendering of questions (S32, S33): numbered choices stand in for buttons, a URL is shown as literal text,
// a typed number picks its option; and the `-c` overrides that declare MCP servers.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as CodexArgs from "../../src/appserver/CodexArgs.js"
import * as QuestionPrompts from "../../src/cli/questionPrompts.js"
import type { Question, QuestionPrompt } from "../../src/ports/Questions.js"

const choice: Question = {
  id: "db_choice",
  header: "Database",
  text: "Which one?",
  kind: "choice",
  options: [{ label: "Postgres", description: "Robust" }, { label: "SQLite" }],
  allowOther: true,
  isSecret: false,
  required: true
}

const multi: Question = { ...choice, id: "tags", kind: "multi", allowOther: false, options: [{ label: "a" }, { label: "b" }, { label: "c" }] }

const prompt = (questions: ReadonlyArray<Question>, extra: Partial<QuestionPrompt> = {}): QuestionPrompt => ({
  key: "n:0#1",
  sessionId: "s",
  threadId: "t",
  source: "requestUserInput",
  questions,
  group: { index: 0, count: 1 },
  ...extra
})

describe("CLI question prompts", () => {
  it("[S33] choices are numbered; a number picks its option, other text is kept, multi splits on commas", () => {
    expect(QuestionPrompts.renderQuestion(choice)).toBe(
      "Database: Which one?\n  [1] Postgres - Robust\n  [2] SQLite\na number, or your own answer; /decline to decline › "
    )
    expect(QuestionPrompts.parseAnswer(choice, " 2 ")).toEqual(["SQLite"])
    expect(QuestionPrompts.parseAnswer(choice, "MySQL")).toEqual(["MySQL"])
    expect(QuestionPrompts.parseAnswer(choice, "9")).toEqual(["9"]) // no such option: left for validation to refuse
    expect(QuestionPrompts.parseAnswer(choice, "   ")).toEqual([])
    expect(QuestionPrompts.parseAnswer(multi, "1, c,3")).toEqual(["a", "c", "c"])
  })

  it("[S32] a URL elicitation shows the URL as quoted literal text and says it is not opened", () => {
    const text = QuestionPrompts.renderPrompt(
      prompt([], { source: "urlElicitation", serverName: "elic", message: "Sign in", url: "https://example.com/a?b=c" })
    )
    expect(text).toBe('elic asks:\n  Sign in\n  URL (not opened): "https://example.com/a?b=c"')
  })

  it("[S30] a prompt asked again shows why; later groups say which part they are", () => {
    const text = QuestionPrompts.renderPrompt(
      prompt([choice], { source: "elicitation", serverName: "elic", group: { index: 1, count: 3 }, problem: "Size: must be at most 10" })
    )
    expect(text).toBe("elic asks (part 2 of 3):\n  (Size: must be at most 10; please answer again)")
  })

  it.effect("[S33][S34] the terminal port asks one line per question, tells the reader which are secret, and /decline declines", () =>
    Effect.gen(function* () {
      const asked: Array<[string, boolean]> = []
      const lines = ["2", "hunter2"]
      const port = QuestionPrompts.terminalWith((text, secret) =>
        Effect.sync(() => {
          asked.push([text, secret])
          return lines.shift() ?? "/decline"
        }))
      const secret: Question = { ...choice, id: "pw", kind: "text", options: [], isSecret: true, header: undefined, text: "Password?" }
      expect(yield* port.ask(prompt([choice]))).toEqual({ _tag: "Answered", answers: { db_choice: ["SQLite"] } })
      expect(yield* port.ask(prompt([secret]))).toEqual({ _tag: "Answered", answers: { pw: ["hunter2"] } })
      expect(asked.map(([, s]) => s)).toEqual([false, true])
      expect(asked[1]![0]).toContain("secret, not echoed")
      expect(yield* port.ask(prompt([choice]))).toEqual({ _tag: "Declined" })
    }))

  it("[S30] MCP servers become -c overrides; a name that is not a bare TOML key is refused", () => {
    expect(
      CodexArgs.mcpServerArgs({
        elic: { command: "/usr/bin/node", args: ["/srv/a b.mjs"], env: { LOG: "/tmp/x" }, defaultToolsApprovalMode: "approve" }
      })
    ).toEqual([
      "-c",
      'mcp_servers.elic={command="/usr/bin/node",args=["/srv/a b.mjs"],env={"LOG"="/tmp/x"},default_tools_approval_mode="approve"}'
    ])
    expect(() => CodexArgs.mcpServerArgs({ "bad name": { command: "x" } })).toThrow(/invalid MCP server name/)
  })
})
