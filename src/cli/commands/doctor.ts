// `codex-harness doctor`: what it accepts. The checks are ../doctor.ts (and ../doctor/), loaded when it runs.
import { Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

// the flags that choose what the checks look at (state dir and config, codex binary and CODEX_HOME, provider), so they
// see what a `run` with the same flags would get; the per-turn ones (workspace, policy, model, approvals) check nothing
const config = {
  ...Opts.state,
  ...Opts.codex,
  ...Opts.provider,
  json: Options.boolean("json").pipe(Options.withDescription("print one JSON object per check instead of its line"))
}

export type DoctorOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("doctor", config, (options) => lazy(() => import("../doctor.js"), (m) => m.doctor(options))).pipe(
  Command.withDescription(
    "check the setup: codex binary and app-server, state dir and CODEX_HOME, provider, hook relay, leftovers (exit 1 when one fails)"
  )
)
