// `codex-harness doctor`: what it accepts. The checks are ../doctor.ts (and ../doctor/), loaded when it runs.
import { Command, Options } from "@effect/cli"
import * as GlobalOptions from "../options.js"
import { lazy } from "./lazy.js"

// every global flag, so the checks see the settings a `run` with the same flags would have
const config = {
  ...GlobalOptions.global,
  json: Options.boolean("json").pipe(Options.withDescription("print one JSON object per check instead of its line"))
}

export type DoctorOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("doctor", config, (options) => lazy(() => import("../doctor.js"), (m) => m.doctor(options))).pipe(
  Command.withDescription(
    "check the setup: codex binary and app-server, state dir and CODEX_HOME, provider, hook relay, leftovers (exit 1 when one fails)"
  )
)
