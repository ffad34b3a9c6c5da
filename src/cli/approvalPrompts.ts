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
  describe,
  details
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
export const render = details

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
