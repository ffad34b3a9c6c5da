// The CLI's Questions port: at a terminal each question is asked on its own line (choices numbered, the terminal's
// stand-in for buttons; a secret is typed without echo and kept out of the history), and without a terminal every
// question is declined and said so on stderr. Answers are never printed back or logged (S34).
import { Effect, Layer } from "effect"
import {
  declined,
  type Question,
  type QuestionPrompt,
  type QuestionPromptFailed,
  Questions,
  type QuestionsService
} from "../ports/Questions.js"

const writeErr = (line: string) => Effect.sync(() => void process.stderr.write(`${line}\n`))

/** What the terminal shows above a prompt's questions. Pure. */
export const renderPrompt = (prompt: QuestionPrompt): string => {
  const lines: Array<string> = []
  const who = prompt.source === "requestUserInput" ? "Codex asks" : `${prompt.serverName ?? "An MCP server"} asks`
  lines.push(prompt.group.count > 1 ? `${who} (part ${prompt.group.index + 1} of ${prompt.group.count}):` : `${who}:`)
  if (prompt.message !== undefined) lines.push(`  ${prompt.message}`)
  // literal text only: never opened or fetched (S32)
  if (prompt.url !== undefined) lines.push(`  URL (not opened): ${JSON.stringify(prompt.url)}`)
  if (prompt.problem !== undefined) lines.push(`  (${prompt.problem}; please answer again)`)
  return lines.join("\n")
}

/** One question's line, choices numbered. Pure. */
export const renderQuestion = (question: Question): string => {
  const lines: Array<string> = []
  const head = question.header !== undefined && question.header !== question.text ? `${question.header}: ` : ""
  const marks = [question.required ? "" : "optional", question.hint ?? "", question.isSecret ? "secret, not echoed" : ""]
    .filter((m) => m !== "")
    .join("; ")
  lines.push(`${head}${question.text}${marks === "" ? "" : ` (${marks})`}`)
  question.options.forEach((option, index) => {
    lines.push(`  [${index + 1}] ${option.label}${option.description !== undefined ? ` - ${option.description}` : ""}`)
  })
  const how =
    question.kind === "multi"
      ? "numbers or labels, comma-separated"
      : question.options.length > 0
      ? question.allowOther ? "a number, or your own answer" : "a number"
      : "your answer"
  const fallback = question.defaultAnswer !== undefined && question.defaultAnswer.length > 0
    ? `, empty for ${question.defaultAnswer.join(", ")}`
    : ""
  lines.push(`${how}${fallback}; /decline to decline › `)
  return lines.join("\n")
}

/** A typed line as the question's answer: a number picks its option; commas separate a multi-select. Pure. */
export const parseAnswer = (question: Question, line: string): ReadonlyArray<string> => {
  const pick = (part: string): string => {
    const trimmed = part.trim()
    const index = /^\d+$/.test(trimmed) ? Number(trimmed) - 1 : -1
    return question.options[index]?.label ?? trimmed
  }
  const trimmed = line.trim()
  if (trimmed === "") return []
  if (question.kind === "multi") return trimmed.split(",").map(pick).filter((s) => s !== "")
  return [pick(trimmed)]
}

/**
 * Asks each question of a prompt through `askLine` (one line per question), for a CLI that already owns the
 * terminal's reader (chat); `secret` asks it to hide the line. `/decline` declines the whole request.
 */
export const terminalWith = (
  askLine: (text: string, secret: boolean) => Effect.Effect<string, QuestionPromptFailed>
): QuestionsService => ({
  ask: (prompt) =>
    Effect.gen(function* () {
      const answers: Record<string, ReadonlyArray<string>> = {}
      let header: string | undefined = renderPrompt(prompt)
      for (const question of prompt.questions) {
        const line = yield* askLine(`\n${header === undefined ? "" : `${header}\n`}${renderQuestion(question)}`, question.isSecret)
        header = undefined
        if (line.trim() === "/decline") return declined
        answers[question.id] = parseAnswer(question, line)
      }
      return { _tag: "Answered", answers } as const
    }),
  notify: ({ text }) => writeErr(`note: ${text}`)
})

/** Without anyone to ask: every question is declined, one line each on stderr (the answers are nobody's to make). */
export const declining: QuestionsService = {
  ask: (prompt) =>
    Effect.as(
      writeErr(`question: declined ${prompt.source === "requestUserInput" ? "Codex's question" : `a request from ${prompt.serverName ?? "an MCP server"}`} (no terminal to ask on)`),
      declined
    ),
  notify: ({ text }) => writeErr(`note: ${text}`)
}

export const decliningLayer: Layer.Layer<Questions> = Layer.succeed(Questions, declining)

/** `declining`, and `report` told of each declined prompt (`--json` makes it an event) */
export const decliningReported = (report: (prompt: QuestionPrompt) => Effect.Effect<void>): Layer.Layer<Questions> =>
  Layer.succeed(Questions, {
    ...declining,
    ask: (prompt) => Effect.zipLeft(declining.ask(prompt), report(prompt))
  })
