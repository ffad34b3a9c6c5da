// `codex-harness apps list [--session ID]`: what it accepts (S2-S5). Reading the inventory is ../apps.ts, loaded when it
// runs.
import { Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

// the app-server whose inventory is read (its CODEX_HOME, binary and provider), the workspace (repo marketplaces are
// found from it), the state dir (a session's recorded runtime) and --json; no turn runs, so no policy, model or approvals
const listConfig = {
  ...Opts.workspace,
  ...Opts.state,
  ...Opts.codex,
  ...Opts.provider,
  ...Opts.supervision,
  ...Opts.output,
  session: Options.text("session").pipe(
    Options.withDescription("read the inventory of this session's recorded runtime (default: the one a new session gets)"),
    Options.optional
  )
}

export type ListOptions = Command.Command.ParseConfig<typeof listConfig>

const list = Command.make("list", listConfig, (options) => lazy(() => import("../apps.js"), (m) => m.list(options))).pipe(
  Command.withDescription(
    "the installed-plugin snapshot and, for each app the config names, whether it would be admitted and why not"
  )
)

export const subcommands = [list] as const

export const command = Command.make("apps").pipe(
  Command.withDescription("connected apps: what Codex has installed and what the harness admits (config `apps`)"),
  Command.withSubcommands(subcommands)
)
