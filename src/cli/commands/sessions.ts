// `codex-harness sessions list|show|delete|repair`: what they accept. Reading and deleting sessions is ../sessions.ts, loaded
// when one runs.
import { Args, Command } from "@effect/cli"
import { global } from "../options.js"
import { lazy } from "./lazy.js"

const load = () => import("../sessions.js")
const sessionId = Args.text({ name: "ID" }).pipe(
  Args.withDescription("the session id, or its first characters (at least 4) when they name one session")
)

const listConfig = { stateDir: global.stateDir, json: global.json }
const showConfig = { ...listConfig, sessionId }
const deleteConfig = { stateDir: global.stateDir, sessionId }
const repairConfig = deleteConfig

export type ListOptions = Command.Command.ParseConfig<typeof listConfig>
export type ShowOptions = Command.Command.ParseConfig<typeof showConfig>
export type DeleteOptions = Command.Command.ParseConfig<typeof deleteConfig>
export type RepairOptions = Command.Command.ParseConfig<typeof repairConfig>

const list = Command.make("list", listConfig, (options) => lazy(load, (m) => m.list(options))).pipe(
  Command.withDescription(
    "a table of the sessions, most recent first: id prefix, title, last update, turns, model / provider (--json: the data)"
  )
)

const show = Command.make("show", showConfig, (options) => lazy(load, (m) => m.show(options))).pipe(
  Command.withDescription("a session's binding, model choice and transcript (--json: its records, one per line)")
)

const remove = Command.make("delete", deleteConfig, (options) => lazy(load, (m) => m.remove(options))).pipe(
  Command.withDescription("delete a session's file; a supervised chat that still holds its native thread is refused")
)

const repair = Command.make("repair", repairConfig, (options) => lazy(load, (m) => m.repair(options))).pipe(
  Command.withDescription("drop a session file's corrupt lines, keeping the old file as <id>.jsonl.bak (refused while the session is in use)")
)

/** in the order help lists them */
export const subcommands = [list, show, remove, repair] as const

export const command = Command.make("sessions").pipe(
  Command.withDescription("the sessions under the state dir"),
  Command.withSubcommands(subcommands)
)
