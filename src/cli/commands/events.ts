// `codex-harness events schema`: the `--json` event stream's JSON Schema (schemas/events.ts), printed by ../events.ts.
import { Command } from "@effect/cli"
import { lazy } from "./lazy.js"

const schema = Command.make("schema", {}, () => lazy(() => import("../events.js"), (m) => m.printSchema)).pipe(
  Command.withDescription("print the JSON Schema of the events `run --json` and `chat --json` print, one per line")
)

/** in the order help lists them */
export const subcommands = [schema] as const

export const command = Command.make("events").pipe(
  Command.withDescription("the --json event stream: its JSON Schema"),
  Command.withSubcommands(subcommands)
)
