// `codex-harness exec [--pty] [--cwd DIR] -- CMD ARGS...`: what it accepts (S25). Running it is ../exec.ts, loaded when
// it runs.
import { Args, Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

// where the app-server is and the sandbox (--sandbox; no model, approvals or turn timeout: no turn runs)
const config = {
  ...Opts.workspace,
  ...Opts.state,
  ...Opts.codex,
  ...Opts.appServer,
  sandbox: Opts.policy.sandbox,
  pty: Options.boolean("pty").pipe(Options.withDescription("run the command on a pseudo-terminal (its output comes as one stream)")),
  command: Args.text({ name: "CMD" }).pipe(Args.withDescription("the command and its arguments, after --"), Args.atLeast(1))
}

export type ExecOptions = Command.Command.ParseConfig<typeof config>

export const command = Command.make("exec", config, (options) => lazy(() => import("../exec.js"), (m) => m.exec(options))).pipe(
  Command.withDescription(
    "run a command in the app-server's sandbox (no model), print its output as it comes and exit with its status; needs appServer.experimental.sandboxExecServer"
  )
)
