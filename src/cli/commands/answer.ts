// `codex-harness answer ID ...` and `codex-harness pending`: what they accept. Both speak to a running serve; the work
// is ../answer.ts, loaded when one runs.
import { Args, Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

const load = () => import("../answer.js")

const pendingConfig = { stateDir: Opts.state.stateDir, ...Opts.output, ...Opts.connection }

const answerConfig = {
  stateDir: Opts.state.stateDir,
  ...Opts.connection,
  id: Args.text({ name: "ID" }).pipe(Args.withDescription("the approval or question id (`codex-harness pending` lists them)")),
  decision: Args.choice([["allow", "allow" as const], ["always", "always" as const], ["deny", "deny" as const]], { name: "DECISION" }).pipe(
    Args.withDescription("for an approval: allow (once), always (for this session, within the allow-always window) or deny"),
    Args.optional
  ),
  text: Options.text("text").pipe(
    Options.withDescription("for a question with one part: the answer (an option's label, or free text); `-` reads it from stdin (for a secret)"),
    Options.optional
  ),
  answer: Options.keyValueMap("answer").pipe(
    Options.withDescription("for a question with several parts: QUESTION_ID=ANSWER, once per part"),
    Options.optional
  ),
  decline: Options.boolean("decline").pipe(Options.withDescription("decline the question"))
}

export type PendingOptions = Command.Command.ParseConfig<typeof pendingConfig>
export type AnswerOptions = Command.Command.ParseConfig<typeof answerConfig>

export const pendingCommand = Command.make("pending", pendingConfig, (options) => lazy(load, (m) => m.pending(options))).pipe(
  Command.withDescription("the approvals and questions waiting for an answer in the running serve")
)

export const answerCommand = Command.make("answer", answerConfig, (options) => lazy(load, (m) => m.answer(options))).pipe(
  Command.withDescription("answer an approval or a question of a turn running in the serve, from any terminal")
)
