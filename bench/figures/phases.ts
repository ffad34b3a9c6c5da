// The phases of one cold `run` (issue 31 item 1), for the `cold` row's notes: when, after the bench spawned the
// process, the harness sent `initialize` (its app-server had just been spawned), got its answer, had its thread, got the
// first token of the reply, saw the turn complete, and exited. They come from the run's own wire recording
// (`run --record FILE`: wall-clock start plus each message's milliseconds), so this run is an extra one, not one of the
// timed runs (recording costs a little). The floor's phases come from its own report (initialize answered, turn done).
import * as fs from "node:fs"
import * as path from "node:path"
import { check, cliArgs, type Context, freshDir, freshPrefix, message, REPLY } from "./context.js"
import { timedNode } from "./proc.js"

export interface ColdPhases {
  /** milliseconds after the bench spawned the process; undefined when the recording did not have it */
  readonly initializeSent: number | undefined
  readonly initializeAnswered: number | undefined
  readonly threadReady: number | undefined
  readonly firstToken: number | undefined
  readonly turnCompleted: number | undefined
  readonly exited: number
}

interface Entry {
  readonly t: number
  readonly from: "harness" | "app-server"
  readonly message?: { readonly id?: unknown; readonly method?: unknown; readonly result?: unknown }
}

/** one cold `run` with `--record`, and its phases */
export const coldPhases = async (ctx: Context): Promise<ColdPhases> => {
  const file = path.join(freshDir(ctx, "phases"), "run.jsonl")
  const spawnedAt = Date.now()
  const run = await timedNode({ args: cliArgs(ctx, "run", "--record", file, message(freshPrefix(), 0, 0)), env: ctx.env })
  check("codex-harness run --record", run, REPLY, 1)
  const lines = fs.readFileSync(file, "utf8").split("\n").filter((l) => l.trim() !== "")
  const header = JSON.parse(lines[0]!) as { readonly recordedAt: string }
  const base = Date.parse(header.recordedAt) - spawnedAt
  const entries = lines.slice(1).map((l) => JSON.parse(l) as Entry)
  const at = (e: Entry | undefined) => (e === undefined ? undefined : base + e.t)
  const requestOf = (method: string) => entries.find((e) => e.from === "harness" && e.message?.method === method)
  const answerTo = (request: Entry | undefined) =>
    request === undefined ? undefined : entries.find((e) => e.from === "app-server" && e.message?.id === request.message?.id && e.message?.method === undefined)
  const initialize = requestOf("initialize")
  const thread = requestOf("thread/start") ?? requestOf("thread/resume")
  const notified = (test: (method: string) => boolean) =>
    entries.find((e) => e.from === "app-server" && typeof e.message?.method === "string" && e.message.id === undefined && test(e.message.method))
  return {
    initializeSent: at(initialize),
    initializeAnswered: at(answerTo(initialize)),
    threadReady: at(answerTo(thread)),
    firstToken: at(notified((m) => m.endsWith("/delta"))),
    turnCompleted: at(notified((m) => m === "turn/completed")),
    exited: run.ms
  }
}
