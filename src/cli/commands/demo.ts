// `codex-harness demo [options]`: what it accepts. The demo is ../demo.ts, loaded when it runs.
import { Command } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

// the demo brings its own model, provider, workspace and CODEX_HOME, and answers no approvals: what is left to choose
// is where its session is kept, the config file and the codex binary
const config = { ...Opts.state, codexBin: Opts.codex.codexBin }

export type DemoOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("demo", config, (options) => lazy(() => import("../demo.js"), (m) => m.demo(options))).pipe(
  Command.withDescription("an offline demo: a scripted model and the real app-server, with a tool call")
)
