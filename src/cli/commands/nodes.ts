// `codex-harness nodes pair|list|unpair|run`: paired nodes (S26, S17). Running them is ../nodes.ts, loaded when one runs.
import { Args, Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

const load = () => import("../nodes.js")
const name = Args.text({ name: "NAME" }).pipe(Args.withDescription("the node's name (letters, digits, - and _)"))

const pairConfig = {
  ...Opts.state,
  name,
  url: Args.text({ name: "URL" }).pipe(
    Args.withDescription("the node's `codex exec-server` (wss://HOST:PORT, or ws://127.0.0.1:PORT through an SSH forward)")
  ),
  tokenEnv: Options.text("token-env").pipe(
    Options.withDescription("the variable holding the node's token (default: the token is read from stdin)"),
    Options.optional
  ),
  appServer: Options.text("node-app-server").pipe(
    Options.withDescription("the node's own `codex app-server --listen` URL, for its thread catalog in `threads list`"),
    Options.optional
  )
}
const listConfig = { ...Opts.state, ...Opts.output }
const unpairConfig = { ...Opts.state, name }
const runConfig = {
  ...Opts.workspace,
  ...Opts.state,
  ...Opts.codex,
  ...Opts.provider,
  sandbox: Opts.policy.sandbox,
  name,
  nodeCwd: Options.text("node-cwd").pipe(Options.withDescription("the working directory on the node (default: /tmp)"), Options.optional),
  prompt: Args.text({ name: "PROMPT" }).pipe(Args.withDescription("the turn's prompt"))
}

export type PairOptions = Command.Command.ParseConfig<typeof pairConfig>
export type ListOptions = Command.Command.ParseConfig<typeof listConfig>
export type UnpairOptions = Command.Command.ParseConfig<typeof unpairConfig>
export type RunOptions = Command.Command.ParseConfig<typeof runConfig>

const pair = Command.make("pair", pairConfig, (o) => lazy(load, (m) => m.pair(o))).pipe(
  Command.withDescription("pair a node explicitly; its token comes from stdin or --token-env and is stored 0600, never printed")
)
const list = Command.make("list", listConfig, (o) => lazy(load, (m) => m.list(o))).pipe(
  Command.withDescription("the paired nodes: name, exec-server URL, node app-server URL")
)
const unpair = Command.make("unpair", unpairConfig, (o) => lazy(load, (m) => m.unpair(o))).pipe(
  Command.withDescription("forget a node and delete its token")
)
const run = Command.make("run", runConfig, (o) => lazy(load, (m) => m.run(o))).pipe(
  Command.withDescription("one turn whose commands run on the node (a fresh attempt: its own app-server, ended afterwards)")
)

/** in the order help lists them */
export const subcommands = [pair, list, unpair, run] as const

export const command = Command.make("nodes").pipe(
  Command.withDescription("paired nodes: machines running `codex exec-server` that turns may run their commands on"),
  Command.withSubcommands(subcommands)
)
