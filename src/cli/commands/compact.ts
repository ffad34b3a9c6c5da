// `codex-harness compact --session ID`: what it accepts. The compaction is ../compact.ts, loaded when it runs.
import { Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

// what resuming the session's thread needs (its workspace, state, codex, provider, and supervision for a branched chat)
// and --json; a compaction runs no commands, so no policy, model or approvals
const config = {
  ...Opts.workspace,
  ...Opts.state,
  ...Opts.codex,
  ...Opts.provider,
  ...Opts.supervision,
  ...Opts.output,
  ...Opts.connection,
  session: Options.text("session").pipe(Options.withDescription("the session whose Codex thread to compact"))
}

export type CompactOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("compact", config, (options) => lazy(() => import("../compact.js"), (m) => m.compact(options))).pipe(
  Command.withDescription("compact the session's Codex thread now (native compaction; the summary stays with Codex)")
)
