// `codex-harness pending` and `codex-harness answer`: the approvals and questions of turns running in a serve,
// answered from any terminal. Both need a serve (`--connect`, or the one running for the state dir).
import { Console, Effect, HashMap, Option, Schema } from "effect"
import { ControlFailure, type Pending } from "../../schemas/control.js"
import { terminalText } from "../platform/terminalText.js"
import type { AnswerOptions, PendingOptions } from "./commands/answer.js"
import * as Connect from "./connect.js"
import { UsageError } from "./errors.js"
import { readStdin } from "./runPrompt.js"
import { stateDirOf } from "./settings.js"

export class NoServe extends Schema.TaggedError<NoServe>()("NoServe", { stateDir: Schema.String }) {
  override get message() {
    return `no codex-harness serve runs for ${this.stateDir}: start one, or give --connect URL`
  }
}

/** a state of the machine, not a mistake on the command line: exit 1 */
const noServe = (options: { readonly stateDir: Option.Option<string> }) =>
  Effect.flatMap(stateDirOf(options.stateDir), (dir) => Effect.fail(new NoServe({ stateDir: dir })))

const describe = (p: Pending): string =>
  p.type === "approval.requested"
    ? `${p.id}  approval  session ${p.session_id}  ${terminalText(p.subject)}`
    : `${p.id}  question  session ${p.session_id}  ${p.questions.map((q) => `${q.id}: ${terminalText(q.text)}`).join(" / ")}`

export const pending = (options: PendingOptions) =>
  Connect.orLocal(
    options,
    true,
    (client) =>
      Effect.gen(function* () {
        const waiting = yield* client.Pending()
        if (options.json) return yield* Console.log(JSON.stringify(waiting))
        if (waiting.length === 0) return yield* Console.error("nothing waits for an answer")
        for (const p of waiting) yield* Console.log(describe(p))
      }),
    noServe(options)
  )

const decisions = { allow: "allow_once", always: "allow_always", deny: "deny" } as const

export const answer = (options: AnswerOptions) =>
  Connect.orLocal(
    options,
    true,
    (client) =>
      Effect.gen(function* () {
        const given = [Option.isSome(options.decision), Option.isSome(options.text), Option.isSome(options.answer), options.decline]
        if (given.filter(Boolean).length !== 1) {
          return yield* new UsageError({ line: "give one of: a DECISION (allow, always, deny), --text, --answer ID=VALUE, --decline" })
        }
        if (Option.isSome(options.decision)) {
          yield* client.Answer({ id: options.id, decision: decisions[options.decision.value] })
          return yield* Console.error(`answered ${options.id}: ${options.decision.value}`)
        }
        if (options.decline) {
          yield* client.Answer({ id: options.id, decline: true })
          return yield* Console.error(`declined ${options.id}`)
        }
        let answers: Record<string, ReadonlyArray<string>>
        if (Option.isSome(options.answer)) {
          answers = Object.fromEntries([...HashMap.toEntries(options.answer.value)].map(([k, v]) => [k, [v]]))
        } else {
          // one part: its id comes from what waits
          const asked = (yield* client.Pending()).find((p) => p.id === options.id)
          if (asked === undefined) {
            return yield* new ControlFailure({ code: "not_found", message: `nothing waits for an answer with id ${options.id} (answered, expired or never asked)` })
          }
          if (asked.type !== "question.asked") return yield* new UsageError({ line: `${options.id} is an approval: answer it with allow, always or deny` })
          if (asked.questions.length !== 1) {
            return yield* new UsageError({ line: `${options.id} has ${asked.questions.length} parts: answer each with --answer ID=VALUE (${asked.questions.map((q) => q.id).join(", ")})` })
          }
          const typed = Option.getOrElse(options.text, () => "")
          // `--text -`: from stdin, so a secret answer is in no command line (ps, shell history)
          const text = typed === "-" ? (yield* readStdin(64 * 1024, "the answer")).replace(/\r?\n$/, "") : typed
          answers = { [asked.questions[0]!.id]: [text] }
        }
        yield* client.Answer({ id: options.id, answers })
        yield* Console.error(`answered ${options.id}`)
      }),
    noServe(options)
  )
