// `codex-harness sessions list|show|delete|repair|redact`: what they accept. Reading and deleting sessions is ../sessions.ts, loaded
// when one runs.
import { Args, Command, Options } from "@effect/cli"
import { connection, global } from "../options.js"
import { lazy } from "./lazy.js"

const load = () => import("../sessions.js")
const sessionId = Args.text({ name: "ID" }).pipe(
  Args.withDescription("the session id, or its first characters (at least 4) when they name one session")
)

const listConfig = { stateDir: global.stateDir, json: global.json, ...connection }
const showConfig = { ...listConfig, sessionId }
const deleteConfig = { stateDir: global.stateDir, sessionId }
const repairConfig = deleteConfig
const redactConfig = {
  ...deleteConfig,
  call: Options.text("call").pipe(Options.optional, Options.withDescription("redact the recorded result of this dynamic tool call")),
  turn: Options.text("turn").pipe(
    Options.optional,
    Options.withDescription("redact what this turn recorded: tool results, replies, messages, reasoning, plans")
  )
}

export type ListOptions = Command.Command.ParseConfig<typeof listConfig>
export type ShowOptions = Command.Command.ParseConfig<typeof showConfig>
export type DeleteOptions = Command.Command.ParseConfig<typeof deleteConfig>
export type RepairOptions = Command.Command.ParseConfig<typeof repairConfig>
export type RedactOptions = Command.Command.ParseConfig<typeof redactConfig>

const list = Command.make("list", listConfig, (options) => lazy(load, (m) => m.list(options))).pipe(
  Command.withDescription(
    "a table of the sessions, most recent first: id prefix, title, last update, turns, model / provider (--json: the data)"
  )
)

const show = Command.make("show", showConfig, (options) => lazy(load, (m) => m.show(options))).pipe(
  Command.withDescription("a session's binding, model choice and transcript (--json: its records, one per line)")
)

const remove = Command.make("delete", deleteConfig, (options) => lazy(load, (m) => m.remove(options))).pipe(
  Command.withDescription(
    "delete a session's file and its lock (refused while the session is in use, and for a supervised chat that still holds its native thread)"
  )
)

const repair = Command.make("repair", repairConfig, (options) => lazy(load, (m) => m.repair(options))).pipe(
  Command.withDescription("drop a session file's corrupt lines, keeping the old file as <id>.jsonl.bak (refused while the session is in use)")
)

const redact = Command.make("redact", redactConfig, (options) => lazy(load, (m) => m.redact(options))).pipe(
  Command.withDescription(
    "replace recorded text of the session's own file with [redacted] (--call or --turn); Codex's own rollout is not touched"
  )
)

/** in the order help lists them */
export const subcommands = [list, show, remove, repair, redact] as const

export const command = Command.make("sessions").pipe(
  Command.withDescription("the sessions under the state dir"),
  Command.withSubcommands(subcommands)
)
