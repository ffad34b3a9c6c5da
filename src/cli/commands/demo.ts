// `codex-harness demo [options]`: what it accepts. The demo is ../demo.ts, loaded when it runs.
import { Command } from "@effect/cli"
import * as GlobalOptions from "../options.js"
import { lazy } from "./lazy.js"

export const command = Command.make("demo", GlobalOptions.global, (options) => lazy(() => import("../demo.js"), (m) => m.demo(options))).pipe(
  Command.withDescription("an offline demo: a scripted model and the real app-server, with a tool call")
)
