// `codex-harness chat [options]`: what it accepts. The conversation is ../chat/conversation.ts, loaded when it runs.
import { Command, Options } from "@effect/cli"
import * as GlobalOptions from "../options.js"
import { lazy } from "./lazy.js"

const config = {
  ...GlobalOptions.global,
  ...GlobalOptions.connection,
  session: Options.text("session").pipe(
    Options.withDescription("session to continue, by id or a unique prefix of it (default: a new session, printed on stderr)"),
    Options.optional
  ),
  last: Options.boolean("last").pipe(Options.withDescription("continue the most recently updated session"))
}

export type ChatOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("chat", config, (options) =>
  lazy(() => import("../chat/conversation.js"), (m) => m.chat(options))).pipe(
    Command.withDescription("a conversation: a prompt at a terminal, or one message per line of piped input")
  )
