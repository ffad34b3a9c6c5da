// `codex-harness run [options] PROMPT`: what it accepts. The turn itself is ../run.ts, loaded when the command runs.
import { Args, Command, Options } from "@effect/cli"
import * as GlobalOptions from "../options.js"
import { lazy } from "./lazy.js"

const config = {
  ...GlobalOptions.global,
  ...GlobalOptions.connection,
  approvals: Options.choice("approvals", ["deny", "allow", "ask"]).pipe(
    Options.withDescription(
      "how Codex's approval requests are answered: deny, allow (each decision printed on stderr), or ask: wait for an answer from any client of the serve the turn runs through (`codex-harness answer ID`)"
    ),
    Options.withDefault("deny" as const)
  ),
  session: Options.text("session").pipe(
    Options.withDescription("session to continue, by id or a unique prefix of it (default: a new session, printed on stderr)"),
    Options.optional
  ),
  last: Options.boolean("last").pipe(Options.withDescription("continue the most recently updated session")),
  turnKind: Options.choice("turn-kind", ["user", "heartbeat", "lightweight", "ringZero", "messageOnly", "toolDisabled"]).pipe(
    Options.withDescription(
      "user (default); heartbeat (a scheduled wake); or an internal turn without project docs or memory: lightweight, ringZero, messageOnly (only the message tool), toolDisabled (no tools)"
    ),
    Options.optional
  ),
  outputLastMessage: Options.text("output-last-message").pipe(
    Options.withAlias("o"),
    Options.withDescription("also write the final reply to this file"),
    Options.optional
  ),
  record: Options.text("record").pipe(
    Options.withDescription(
      "record the turn's app-server traffic to this file (JSON lines, secrets masked, created 0600), for MockAppServer to replay"
    ),
    Options.optional
  ),
  prompt: Args.text({ name: "PROMPT" }).pipe(
    Args.withDescription("what to ask the agent; `-`, or none with input piped, reads it from stdin"),
    Args.optional
  )
}

export type RunOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("run", config, (options) => lazy(() => import("../runDispatch.js"), (m) => m.run(options))).pipe(
  Command.withDescription("run one turn and print the final assistant reply")
)
