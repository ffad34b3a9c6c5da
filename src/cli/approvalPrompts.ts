// The CLI's ApprovalPrompts: a fixed policy (`--approvals deny|allow`) that decides without asking and says so on
// stderr, and a terminal prompt on the TTY (one question at a time). An answer it cannot read is asked again a few times,
// then denied: a typo must neither allow nor silently deny.
import { Effect, Layer } from "effect"
import * as readline from "node:readline"
import {
  type ApprovalDecision,
  ApprovalPromptFailed,
  ApprovalPrompts,
  type ApprovalRequest,
  describe
} from "../ports/ApprovalPrompts.js"

const writeErr = (line: string) => Effect.sync(() => void process.stderr.write(`${line}\n`))

/**
 * Decides every approval the same way, printing one line per decision to stderr; `report` also gets each decision
 * (`--json` makes it an event).
 */
export const fixed = (
  mode: "deny" | "allow",
  report?: (request: ApprovalRequest, decision: ApprovalDecision) => Effect.Effect<void>
): Layer.Layer<ApprovalPrompts> =>
  Layer.succeed(ApprovalPrompts, {
    ask: (request) => {
      const decision: ApprovalDecision = mode === "allow" ? "allowOnce" : "deny"
      return writeErr(`approval: ${mode === "allow" ? "allowed" : "denied"} ${describe(request)} (--approvals ${mode})`).pipe(
        Effect.zipRight(report?.(request, decision) ?? Effect.void),
        Effect.as(decision)
      )
    }
  })

/** What the terminal shows before the question. Pure. */
export const render = (request: ApprovalRequest): string => {
  const lines: Array<string> = []
  switch (request.kind) {
    case "command":
      lines.push(`Codex wants to run: ${request.command}`, `  in ${request.cwd}`)
      break
    case "fileChange":
      lines.push("Codex wants to change files:")
      for (const change of request.changes ?? []) {
        lines.push(`  ${change.kind} ${change.path}`)
        for (const line of change.diff.split("\n").slice(0, 40)) lines.push(`    ${line}`)
      }
      if (request.changes === undefined) lines.push(`  (item ${request.itemId}; changes not available)`)
      break
    case "permissions":
      lines.push(`Codex asks for extra permissions in ${request.cwd}:`, `  ${JSON.stringify(request.permissions)}`)
      break
    case "mcpTool":
      lines.push(request.message)
      if (request.toolDescription !== undefined) lines.push(`  ${request.toolDescription}`)
      if (request.params !== undefined) lines.push(`  params: ${JSON.stringify(request.params)}`)
      break
    case "diagnostics":
      lines.push(`Send diagnostics to ${request.destination}?`)
      lines.push(`  session: ${request.sessionId ?? "(none)"}`)
      if (request.threads.length === 0) lines.push("  threads: none (Codex's logs only)")
      for (const thread of request.threads) {
        lines.push(`  thread ${thread.threadId}${thread.role === "subAgent" ? ` (sub-agent of ${thread.parentThreadId ?? "?"})` : " (the session's thread)"}`)
      }
      lines.push(`  Codex's logs: ${request.includeLogs ? "included" : "not included"}`)
      lines.push(`  note: ${request.note === undefined ? "(none)" : JSON.stringify(request.note)}`)
      break
  }
  if ("reason" in request && request.reason !== undefined) lines.push(`  reason: ${request.reason}`)
  return lines.join("\n")
}

/** Maps a typed answer (case-insensitive); undefined when it is none of the choices (an empty line included). Pure. */
export const parseAnswer = (answer: string): ApprovalDecision | undefined => {
  switch (answer.trim().toLowerCase()) {
    case "y":
    case "yes":
    case "o":
    case "once":
      return "allowOnce"
    case "a":
    case "always":
      return "allowAlways"
    case "n":
    case "no":
    case "d":
    case "deny":
      return "deny"
    default:
      return undefined
  }
}

/** how many times an unreadable answer is asked again before the request is denied */
export const maxAsks = 3

export const choices = "[y]es once / [a]lways / [n]o"
export const hint = "please answer y (yes, once), a (always) or n (no, deny)"

const question = (prompt: string) =>
  Effect.async<string, ApprovalPromptFailed>((resume) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY === true })
    let done = false
    const finish = (effect: Effect.Effect<string, ApprovalPromptFailed>) => {
      if (done) return
      done = true
      rl.close()
      resume(effect)
    }
    rl.on("close", () => finish(Effect.fail(new ApprovalPromptFailed({ reason: "the terminal closed" }))))
    rl.question(prompt, (answer) => finish(Effect.succeed(answer)))
    return Effect.sync(() => {
      done = true
      rl.close()
    })
  })

/**
 * Asks through `ask` (one approval at a time), `maxAsks` times at most: an answer that is none of the choices asks again
 * with a hint, and the last one denies and says so. `say` prints a line (stderr by default); it also announces a later
 * request an "always" answer allowed by itself, so nothing runs unseen. For a CLI that already reads stdin (chat), pass
 * its own reader's question and printer so two readers never compete for the same line nor write over each other.
 */
export const terminalWith = (
  ask: (prompt: string) => Effect.Effect<string, ApprovalPromptFailed>,
  say: (line: string) => Effect.Effect<void> = writeErr
): Layer.Layer<ApprovalPrompts> =>
  Layer.effect(
    ApprovalPrompts,
    Effect.map(Effect.makeSemaphore(1), (one) => ({
      ask: (request: ApprovalRequest) =>
        one.withPermits(1)(
          Effect.gen(function* () {
            let prompt = `\n${render(request)}\nAllow? ${choices}: `
            for (let tries = 1; ; tries++) {
              const decision = parseAnswer(yield* ask(prompt))
              if (decision !== undefined) return decision
              if (tries >= maxAsks) {
                yield* say(`approval: denied ${describe(request)} (no answer among the choices after ${maxAsks} tries)`)
                return "deny" as const
              }
              prompt = `(${hint}) Allow? ${choices}: `
            }
          })
        ),
      remembered: (request: ApprovalRequest) => say(`approval: allowed ${describe(request)} (you answered "always" earlier)`)
    }))
  )

/** Asks on the process's TTY; without a TTY every approval is denied (and said so on stderr). */
export const terminal: Layer.Layer<ApprovalPrompts> = terminalWith((prompt) =>
  process.stdin.isTTY === true
    ? question(prompt)
    : Effect.as(writeErr("approval: denied (no terminal to ask on)"), "n")
)
