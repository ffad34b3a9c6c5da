// `codex-harness run PROMPT`: one turn, the final reply on stdout (or one JSON event per line with --json). Loaded when
// the command runs; its flags are in commands/run.ts.
import { Console, Effect, Layer, Option } from "effect"
import * as Live from "../../layers/Live.js"
import { CodexHarness } from "../harness/CodexHarness.js"
import { checkSessionId } from "../session/SessionStore.js"
import { TurnDidNotComplete } from "./errors.js"
import * as ApprovalPromptsCli from "./approvalPrompts.js"
import * as QuestionPromptsCli from "./questionPrompts.js"
import type { RunOptions } from "./commands/run.js"
import { toSettings } from "./settings.js"
import { turnEventJson } from "./turnJson.js"
import * as TerminalDelivery from "./TerminalDelivery.js"

export const run = (options: RunOptions) =>
  Effect.gen(function* () {
    const settings = yield* toSettings(options)
    const sessionId = yield* checkSessionId(Option.getOrElse(options.session, () => crypto.randomUUID()))
    const outcome = yield* Effect.flatMap(CodexHarness, (harness) =>
      harness.runTurn({
        sessionId,
        prompt: options.prompt,
        model: Option.getOrUndefined(options.model),
        onEvent: options.json ? (event) => Console.log(JSON.stringify(turnEventJson(event))) : undefined
      })
    ).pipe(
      Effect.provide(
        Live.layer(settings).pipe(
          Layer.provide(TerminalDelivery.layer({ json: options.json })),
          Layer.provide(ApprovalPromptsCli.fixed(options.approvals)),
          // one turn, nobody to ask: questions are declined, each said on stderr
          Layer.provide(QuestionPromptsCli.decliningLayer)
        )
      )
    )
    if (!options.json && Option.isNone(options.session)) yield* Console.error(`session: ${sessionId}`)
    if (outcome.status !== "completed") {
      return yield* Effect.fail(new TurnDidNotComplete({ status: outcome.status, detail: outcome.error ?? "" }))
    }
  })
