// The CPU figure of the `hot` row alone, quickly, for builds side by side: the Node process's own CPU per warm turn
// (process.cpuUsage() at exit, slope of a piped `chat` of 5 and of 25 messages) for each --bin, and the raw floor's,
// interleaved round by round. Quiet only; no busy loops.
//
// Build and run: npx tsc -p tsconfig.json && node dist/bench/turn-cpu.js [--rounds N] (3) [--bin PATH ...]
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import * as Ctx from "./figures/context.js"
import { check, cleanUp, cliArgs, freshPrefix, message, rawArgs, REPLY } from "./figures/context.js"
import { timedNode } from "./figures/proc.js"
import { median } from "./figures/stats.js"

const argv = process.argv.slice(2)
const rounds = Number(argv[argv.indexOf("--rounds") + 1] ?? 3) || 3
const bins = argv.flatMap((a, i) => (a === "--bin" ? [argv[i + 1]!] : []))
if (bins.length === 0) bins.push(Ctx.cliBin)

const program = Effect.gen(function* () {
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(REPLY) })
  const ctx = Ctx.make(model)
  yield* Ctx.cleanUpAfter(ctx)
  const stdin = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => message(prefix, 0, i) + "\n").join("")
  const chat = async (bin: string, n: number) => {
    Ctx.useCliBin(bin)
    const run = check(`chat ${n}`, await timedNode({ args: cliArgs(ctx, "chat"), stdin: stdin(freshPrefix(), n), env: ctx.env, cpuDir: ctx.root, watchLine: REPLY }), REPLY, n)
    await cleanUp(ctx)
    return run
  }
  const raw = async (n: number) => {
    const run = check(`raw ${n}`, await timedNode({ args: rawArgs(ctx, { threads: 1, turns: n, prefix: freshPrefix(), report: true }), env: ctx.env, cpuDir: ctx.root }))
    await cleanUp(ctx)
    return run
  }
  const series = new Map<string, Array<number>>()
  const system = new Map<string, Array<number>>()
  const wall = new Map<string, Array<number>>()
  const push = (m: Map<string, Array<number>>, k: string, v: number) => m.set(k, [...(m.get(k) ?? []), v])
  for (let r = 0; r < rounds; r++) {
    const tasks: Array<() => Promise<void>> = [
      ...bins.map((bin) => async () => {
        const few = await chat(bin, 5)
        const many = await chat(bin, 25)
        push(series, bin, (many.cpuMs! - few.cpuMs!) / 20)
        push(system, bin, (many.cpuSysMs! - few.cpuSysMs!) / 20)
        const gaps = many.lineTimes.slice(1).map((t, i) => t - many.lineTimes[i]!)
        push(wall, bin, median(gaps))
      }),
      async () => {
        const few = await raw(5)
        const many = await raw(25)
        push(series, "raw floor", (many.cpuMs! - few.cpuMs!) / 20)
        push(system, "raw floor", (many.cpuSysMs! - few.cpuSysMs!) / 20)
        push(wall, "raw floor", JSON.parse(many.stdout).turnMsMedian)
      }
    ]
    for (let k = 0; k < tasks.length; k++) yield* Effect.promise(() => tasks[(r + k) % tasks.length]!())
    process.stderr.write(`round ${r + 1}/${rounds}\n`)
  }
  for (const [k, v] of series) {
    console.log(`${k}: CPU per warm turn ${median(v).toFixed(1)} ms [${v.map((x) => x.toFixed(1)).join(", ")}] ` +
      `(of it system ${median(system.get(k)!).toFixed(1)} ms); ` +
      `turn wall in the 25-message run ${median(wall.get(k)!).toFixed(0)} ms`)
  }
})

NodeRuntime.runMain(program.pipe(Effect.scoped))
