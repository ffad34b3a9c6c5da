// `codex-harness threads list|show|branch|archive`: what they accept (S14-S17). Supervising the threads is
// ../threads.ts, loaded when one runs.
import { Args, Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

const load = () => import("../threads.js")
const threadId = Args.text({ name: "ID" }).pipe(Args.withDescription("a native thread id"))

// the supervised CODEX_HOME and the app-server that reads it (codex binary, provider), the state dir whose sessions may
// own a thread, and --json; no turn runs here, so no workspace, policy, model or approvals
const listConfig = { ...Opts.state, codexBin: Opts.codex.codexBin, ...Opts.provider, ...Opts.supervision, ...Opts.output, ...Opts.connection }
const showConfig = { ...listConfig, threadId }
const branchConfig = {
  ...listConfig,
  threadId,
  session: Options.text("session").pipe(Options.withDescription("id of the new chat (default: branch-<uuid>)"), Options.optional)
}
const archiveConfig = {
  ...listConfig,
  threadId,
  confirm: Options.boolean("confirm-no-other-runner").pipe(
    Options.withDescription("you checked that no other process (Codex CLI, IDE, app) runs or answers approvals on it")
  )
}

export type ListOptions = Command.Command.ParseConfig<typeof listConfig>
export type ShowOptions = Command.Command.ParseConfig<typeof showConfig>
export type BranchOptions = Command.Command.ParseConfig<typeof branchConfig>
export type ArchiveOptions = Command.Command.ParseConfig<typeof archiveConfig>

const list = Command.make("list", listConfig, (options) => lazy(load, (m) => m.list(options))).pipe(
  Command.withDescription("non-archived native threads, newest first: id, node, status, model, provider, last update, title")
)

const show = Command.make("show", showConfig, (options) => lazy(load, (m) => m.show(options))).pipe(
  Command.withDescription("one native thread's metadata (a passive read)")
)

const branch = Command.make("branch", branchConfig, (options) => lazy(load, (m) => m.branch(options))).pipe(
  Command.withDescription("continue a native thread as a new model-locked chat; the source is never resumed")
)

const archive = Command.make("archive", archiveConfig, (options) => lazy(load, (m) => m.archive(options))).pipe(
  Command.withDescription("archive a native thread nothing known runs on, after your no-other-runner confirmation")
)

/** in the order help lists them */
export const subcommands = [list, show, branch, archive] as const

export const command = Command.make("threads").pipe(
  Command.withDescription("supervise native Codex threads: list, show, continue as branch, archive"),
  Command.withSubcommands(subcommands)
)
