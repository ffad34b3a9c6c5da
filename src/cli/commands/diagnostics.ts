// `codex-harness diagnostics [--session ID] [--thread-only] [--bundle FILE [--upload]] [NOTE]`: what it accepts (S36).
// The upload and the bundle are ../diagnostics.ts, loaded when the command runs.
import { Args, Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

// the session's runtime (workspace, state, codex, provider), --json, and --approvals: the upload is the one thing asked
const config = {
  ...Opts.workspace,
  ...Opts.state,
  ...Opts.codex,
  ...Opts.provider,
  ...Opts.output,
  approvals: Options.choice("approvals", ["deny", "allow"]).pipe(
    Options.withDescription("without a terminal, how the upload's approval is answered (default: deny; at a terminal you are asked)"),
    Options.withDefault("deny" as const)
  ),
  session: Options.text("session").pipe(
    Options.withDescription("the session whose Codex threads to send, by id or a unique prefix (default: none, Codex's logs alone)"),
    Options.optional
  ),
  threadOnly: Options.boolean("thread-only").pipe(
    Options.withDescription("send the session's bound thread alone, not the sub-agent threads Codex spawned under it")
  ),
  bundle: Options.text("bundle").pipe(
    Options.withDescription("write a local bundle to this new file (0600; versions, redacted config, server diagnostics, recent session records) instead of uploading; it never leaves this machine"),
    Options.optional
  ),
  upload: Options.boolean("upload").pipe(Options.withDescription("with --bundle: also upload (asked for approval as usual)")),
  note: Args.text({ name: "NOTE" }).pipe(Args.withDescription("a note sent with the upload (its reason)"), Args.optional)
}

export type DiagnosticsOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("diagnostics", config, (options) =>
  lazy(() => import("../diagnostics.js"), (m) => m.diagnostics(options))).pipe(
    Command.withDescription(
      "send a session's Codex threads and logs to OpenAI through Codex's feedback upload (only once approved), or write a local bundle"
    )
  )
