// `codex-harness config schema|show`: the config file's JSON Schema, and the settings a command would actually use.
import { Command, Options } from "@effect/cli"
import { Console, Effect, Option } from "effect"
import * as path from "node:path"
import * as CodexArgs from "../appserver/CodexArgs.js"
import * as HarnessConfig from "../config/HarnessConfig.js"
import { BadOption, configOption, global, loadFor } from "./options.js"

const schema = Command.make("schema", {}, () =>
  Console.log(JSON.stringify(HarnessConfig.jsonSchema(), null, 2))
).pipe(Command.withDescription("print the config file's JSON Schema (for editors: \"$schema\" in the file)"))

const show = Command.make(
  "show",
  {
    config: configOption,
    stateDir: global.stateDir,
    // the flags that override the file; optional here (no defaults) so the file's values show through
    model: Options.text("model").pipe(Options.withDescription("model to ask Codex for"), Options.optional),
    providerUrl: Options.text("provider-url").pipe(Options.withDescription("an OpenAI Responses API base URL"), Options.optional),
    approvalPolicy: Options.choice("approval-policy", ["untrusted", "on-request", "never"]).pipe(Options.optional),
    sandbox: Options.choice("sandbox", ["read-only", "workspace-write", "danger-full-access"]).pipe(Options.optional),
    codexHome: Options.text("codex-home").pipe(Options.withDescription("CODEX_HOME for the app-server"), Options.optional),
    codexBin: Options.text("codex-bin").pipe(Options.withDescription("path to a codex executable"), Options.optional)
  },
  (options) =>
    Effect.gen(function* () {
      const providerUrl = Option.getOrUndefined(options.providerUrl)
      const problem = providerUrl === undefined ? undefined : CodexArgs.checkProviderUrl(providerUrl)
      if (problem !== undefined) return yield* Effect.fail(new BadOption({ option: "provider-url", reason: problem }))
      const file = yield* loadFor(options)
      const effective = HarnessConfig.merge(file, {
        model: Option.getOrUndefined(options.model),
        providerUrl,
        approvalPolicy: Option.getOrUndefined(options.approvalPolicy),
        sandbox: Option.getOrUndefined(options.sandbox),
        codexHome: Option.getOrUndefined(Option.map(options.codexHome, (d) => path.resolve(d))),
        codexBin: Option.getOrUndefined(options.codexBin)
      })
      yield* Console.log(JSON.stringify(effective, null, 2))
    })
).pipe(Command.withDescription("print the effective config as JSON: flags win over the file, the file over the defaults"))

export const command = Command.make("config").pipe(
  Command.withDescription("the config file: its JSON Schema, and the effective settings"),
  Command.withSubcommands([schema, show])
)
