// What the hooks S20 makes the harness inject cost Codex itself, per turn (issue 27, item 4): the raw floor
// (bench/floor/raw-client.ts, no harness) run twice per round, once as it is and once with the thread config the harness
// sends when no HookPolicy decides anything (every hook the no-op `true`, the harness's HookThreadConfig), rounds
// alternating which goes first. Codex runs the Stop hook at every turn's end and waits for it, so a turn of the harness
// can be no faster than the floor with that hook: this is the part of the warm-turn ratio no harness code can remove.
//
// With --tools each turn makes three exec_command calls (the hot row's 3-tool turn), which also run PreToolUse and
// PostToolUse around each call.
//
// Build and run: npm run build && node dist/bench/hook-floor.js [--rounds 4] [--turns 25] [--tools]
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import { benchArgs } from "./args.js"
import * as Ctx from "./figures/context.js"
import { check, freshPrefix, noOpHooks, rawArgs, REPLY, scriptToolTurns } from "./figures/context.js"
import type { RawReport } from "./floor/raw-client.js"
import { timedNode } from "./figures/proc.js"
import { median } from "./figures/stats.js"

const args = benchArgs("hook-floor", "usage: node dist/bench/hook-floor.js [--rounds N] [--turns N] [--tools]", {
  counts: ["rounds", "turns"],
  switches: ["tools"]
})
const tools = args.has("tools")

const program = Effect.gen(function* () {
  const rounds = args.count("rounds", 4)
  const turns = args.count("turns", 25)
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(REPLY) })
  const ctx = Ctx.make(model)
  yield* Ctx.cleanUpAfter(ctx)
  let hooksPerTurn = 0
  const floor = async (hooks: boolean): Promise<number> => {
    const prefix = freshPrefix()
    if (tools) scriptToolTurns(ctx, prefix, 1, turns)
    const args = rawArgs(ctx, { threads: 1, turns, prefix, report: true, ...(hooks ? { threadConfig: noOpHooks } : {}) })
    const what = `raw floor${hooks ? " with the no-op hooks" : ""}`
    const run = check(what, await timedNode({ args, env: ctx.env, cpuDir: ctx.root }))
    await Ctx.cleanUp(ctx)
    const report = JSON.parse(run.stdout) as RawReport
    // the figure means something only if Codex ran the Stop hook at every turn's end (and with tools, a PreToolUse
    // and a PostToolUse around each call), and no hook without them
    const expected = hooks ? turns * (tools ? 7 : 1) : 0
    if (report.hooksRun !== expected) throw new Error(`${what}: ${report.hooksRun} hooks ran in ${turns} turns, not ${expected}`)
    if (tools && report.commands !== 3 * turns) throw new Error(`${what}: ${report.commands} commands ran in ${turns} turns, not ${3 * turns}`)
    if (hooks) hooksPerTurn = report.hooksRun / turns
    return report.turnMsMedian
  }
  const plain: Array<number> = []
  const hooked: Array<number> = []
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [false, true] : [true, false]
    for (const hooks of order) (hooks ? hooked : plain).push(yield* Effect.promise(() => floor(hooks)))
  }
  const fmt = (xs: ReadonlyArray<number>) => xs.map((x) => x.toFixed(1)).join(", ")
  const p = median(plain)
  const h = median(hooked)
  console.log(`${tools ? "3-tool" : "warm"} turn of the raw floor (median of each run's turns, ${turns} turns a run, ${rounds} runs each; ` +
    `${hooksPerTurn} hooks a turn with them):`)
  console.log(`  no hooks:           ${p.toFixed(1)} ms  [${fmt(plain)}]`)
  console.log(`  the no-op hooks:    ${h.toFixed(1)} ms  [${fmt(hooked)}]`)
  console.log(`  the hooks' cost:    ${h - p >= 0 ? "+" : ""}${(h - p).toFixed(1)} ms, ${(h / p).toFixed(3)}x the floor`)
})

NodeRuntime.runMain(program.pipe(Effect.scoped))
