// `codex-harness cluster status`: what it accepts. The report is ../cluster.ts, loaded when it runs.
import { Command, Options } from "@effect/cli"
import * as Opts from "../options.js"
import { lazy } from "./lazy.js"

const statusConfig = {
  ...Opts.output,
  cluster: Options.text("cluster").pipe(
    Options.withDescription("the cluster's PostgreSQL database (postgres://USER@HOST:PORT/DB; the password from $PGPASSWORD)")
  )
}

export type StatusOptions = Command.Command.ParseConfig<typeof statusConfig>

const status = Command.make("status", statusConfig, (options) => lazy(() => import("../cluster.js"), (m) => m.status(options))).pipe(
  Command.withDescription("the runners of a cluster, their shards and how many sessions each hosts (read from the database)")
)

export const subcommands = [status] as const

export const command = Command.make("cluster").pipe(
  Command.withDescription("a cluster of `serve --cluster` runners"),
  Command.withSubcommands(subcommands)
)
