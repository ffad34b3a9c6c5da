// `codex-harness config schema|show`: what they accept. Printing them is ../config.ts, loaded when one runs.
import { Command, Options } from "@effect/cli"
import { configOption, global } from "../options.js"
import { lazy } from "./lazy.js"

const load = () => import("../config.js")

const schema = Command.make("schema", {}, () => lazy(load, (m) => m.printSchema)).pipe(
  Command.withDescription("print the config file's JSON Schema (for editors: \"$schema\" in the file)")
)

const showConfig = {
  config: configOption,
  stateDir: global.stateDir,
  // the flags that override the file; optional here (no defaults) so the file's values show through
  model: Options.text("model").pipe(Options.withDescription("model to ask Codex for"), Options.optional),
  providerUrl: Options.text("provider-url").pipe(Options.withDescription("an OpenAI Responses API base URL"), Options.optional),
  approvalPolicy: Options.choice("approval-policy", ["untrusted", "on-request", "never"]).pipe(Options.optional),
  sandbox: Options.choice("sandbox", ["read-only", "workspace-write", "danger-full-access"]).pipe(Options.optional),
  codexHome: Options.text("codex-home").pipe(Options.withDescription("CODEX_HOME for the app-server"), Options.optional),
  userCodexHome: Options.boolean("user-codex-home").pipe(Options.withDescription("your own CODEX_HOME for the app-server")),
  codexBin: Options.text("codex-bin").pipe(Options.withDescription("path to a codex executable"), Options.optional)
}

export type ShowOptions = Command.Command.ParseConfig<typeof showConfig>

const show = Command.make("show", showConfig, (options) => lazy(load, (m) => m.show(options))).pipe(
  Command.withDescription("print the effective config as JSON: flags win over the file, the file over the defaults")
)

/** in the order help lists them */
export const subcommands = [schema, show] as const

export const command = Command.make("config").pipe(
  Command.withDescription("the config file: its JSON Schema, and the effective settings"),
  Command.withSubcommands(subcommands)
)
