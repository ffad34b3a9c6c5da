// A deterministic measure of a warm turn's work (issue 27, item 4): how many steps of the Effect run loop, how many
// fibers and how many spans one warm turn of a piped `chat` costs. CPU figures swing with the machine's load; these
// counts do not (they move by a few per turn from run to run), so a change to the hot path can be judged in one run.
//
// How: the tsc output of the CLI (dist/src/cli/main.js) runs with an `--import` preload that registers a module hook,
// and the hook adds a counter to Effect's fiber run loop, to its fiber constructor and to its span constructor as those
// two modules load (node_modules is not touched; the bundle is not used, so only the ESM build of effect matters). The
// counts are written as the process exits; a chat of 5 and one of N messages give the figure per warm turn as their
// difference over N - 5. The process's CPU (process.cpuUsage() at exit) is printed too, with the hook's own cost in it.
//
// With --serve, the same for a turn through `serve`: a counted serve (the tsc output, the same hook) takes SERVE_WARMUP
// turns and then 5 or N more from this process on one held WebSocket (ControlClient.StartTurn, as the `hot` row's serve
// figure), and exits on SIGTERM; the figure is the difference of the two serves over N - 5. Comparing it with the chat
// figure shows what serve adds to a turn.
//
// Build and run: npx tsc -p tsconfig.json && node dist/bench/turn-ops.js [--rounds N] (2) [--messages N] (25) [--by-span] [--serve]
import { NodeRuntime } from "@effect/platform-node"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Effect, Stream } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import * as ControlClient from "../src/control/ControlClient.js"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import * as Ctx from "./figures/context.js"
import { check, cleanUp, freshDir, freshPrefix, message, REPLY } from "./figures/context.js"
import { timedNode } from "./figures/proc.js"
import { median } from "./figures/stats.js"

/** turns a counted serve takes before the counted ones (its app-server and thread start in the first) */
const SERVE_WARMUP = 2

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? Number(process.argv[i + 1]) || fallback : fallback
}

/** the hook: source edits of effect's ESM build, each of which must apply exactly once (a newer effect fails loudly) */
const hookSource = `
const edits = {
  "/effect/dist/esm/internal/fiberRuntime.js": [
    ["  constructor(fiberId, fiberRefs0, runtimeFlags0) {\\n    super();", "$&\\n    globalThis.__effectCounts.fibers++;"],
    ["    while (true) {\\n      if ((this.currentRuntimeFlags & OpSupervision) !== 0) {", "    while (true) {\\n      globalThis.__effectCounts.ops++;\\n      if (globalThis.__effectCounts.bySpan !== undefined) { const k = this.currentSpan?.name ?? '(no span)'; globalThis.__effectCounts.bySpan[k] = (globalThis.__effectCounts.bySpan[k] ?? 0) + 1; }\\n      if ((this.currentRuntimeFlags & OpSupervision) !== 0) {"]
  ],
  "/effect/dist/esm/internal/tracer.js": [
    ["  constructor(name, parent, context, links, startTime, kind) {", "$&\\n    globalThis.__effectCounts.spans++;"]
  ]
};
export async function load(url, context, next) {
  const loaded = await next(url, context);
  const key = Object.keys(edits).find((k) => url.endsWith(k));
  if (key === undefined) return loaded;
  let source = String(loaded.source);
  for (const [from, to] of edits[key]) {
    if (source.split(from).length !== 2) throw new Error("turn-ops hook: no single match in " + key + " for " + from);
    source = source.replace(from, to);
  }
  return { ...loaded, source };
}
`

const preloadSource = (hookUrl: string) => `
import { register } from "node:module";
import { writeFileSync } from "node:fs";
globalThis.__effectCounts = { ops: 0, fibers: 0, spans: 0, ...(process.env.TURN_OPS_BY_SPAN ? { bySpan: {} } : {}) };
register(${JSON.stringify(hookUrl)});
process.on("exit", () => {
  const out = process.env.TURN_OPS_FILE;
  if (out) writeFileSync(out, JSON.stringify({ ...globalThis.__effectCounts, cpuUs: process.cpuUsage().user + process.cpuUsage().system }));
});
`

interface Counts {
  readonly ops: number
  readonly fibers: number
  readonly spans: number
  readonly cpuUs: number
  /** with --by-span: run-loop ops by the name of the innermost span the fiber was in */
  readonly bySpan?: Record<string, number>
}

const program = Effect.gen(function* () {
  const rounds = arg("--rounds", 2)
  const bySpan = process.argv.includes("--by-span")
  const many = arg("--messages", 25)
  const few = 5
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(REPLY) })
  const ctx = Ctx.make(model)
  yield* Ctx.cleanUpAfter(ctx)
  const hook = path.join(ctx.root, "turn-ops-hook.mjs")
  fs.writeFileSync(hook, hookSource)
  const preload = path.join(ctx.root, "turn-ops-preload.mjs")
  fs.writeFileSync(preload, preloadSource(pathToFileURL(hook).href))
  const main = path.join(Ctx.repoRoot, "dist", "src", "cli", "main.js")
  let runs = 0
  const chat = async (n: number): Promise<Counts> => {
    const out = path.join(ctx.root, `ops-${runs++}.json`)
    const prefix = freshPrefix()
    const stdin = Array.from({ length: n }, (_, i) => message(prefix, 0, i) + "\n").join("")
    const args = ["--import", preload, main, "chat", "--state-dir", freshDir(ctx, "state"), "--cwd", ctx.work, "--provider-url", model.url]
    check(`chat ${n}`, await timedNode({ args, stdin, env: { ...ctx.env, TURN_OPS_FILE: out, ...(bySpan ? { TURN_OPS_BY_SPAN: "1" } : {}) }, watchLine: REPLY, timeoutMs: 600_000 }), REPLY, n)
    await cleanUp(ctx)
    return JSON.parse(fs.readFileSync(out, "utf8")) as Counts
  }
  /** a counted serve: SERVE_WARMUP + n held-connection turns, then SIGTERM; its counts as it exits */
  const served = async (n: number): Promise<Counts> => {
    const out = path.join(ctx.root, `ops-${runs++}.json`)
    const dir = freshDir(ctx, "serve-state")
    const args = ["--import", preload, main, "serve", "--state-dir", dir, "--cwd", ctx.work, "--listen", "127.0.0.1:0", "--provider-url", model.url]
    const child = spawn(process.execPath, args, {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, ...ctx.env, TURN_OPS_FILE: out, ...(bySpan ? { TURN_OPS_BY_SPAN: "1" } : {}) }
    })
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let stderr = ""
        const timer = setTimeout(() => reject(new Error(`serve: no "listening on" line within 60 s: ${stderr.slice(-500)}`)), 60_000)
        child.stderr!.setEncoding("utf8")
        child.stderr!.on("data", (text: string) => {
          stderr = (stderr + text).slice(-4000)
          const listening = /listening on (\S+) for /.exec(stderr)
          if (listening === null) return
          clearTimeout(timer)
          resolve(listening[1]!)
        })
        void exited.then((code) => reject(new Error(`serve exited (${code}) before it listened: ${stderr.slice(-500)}`)))
      })
      const token = fs.readFileSync(path.join(dir, "serve.token"), "utf8").trim()
      const prefix = freshPrefix()
      await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
        const client = yield* ControlClient.make({ url, token })
        for (let i = 0; i < SERVE_WARMUP + n; i++) {
          const events = yield* client.StartTurn({ session: "counted", prompt: message(prefix, 0, i), approvals: "deny" }).pipe(Stream.runCollect)
          const end = [...events].find((e) => e.type === "turn.completed")
          if (end === undefined || end.final_text !== REPLY) return yield* Effect.dieMessage(`serve turn ${i} did not complete with the reply`)
        }
      })).pipe(Effect.provide(NodeSocket.layerWebSocketConstructor)))
    } finally {
      child.kill("SIGTERM")
      await exited
      await cleanUp(ctx)
    }
    return JSON.parse(fs.readFileSync(out, "utf8")) as Counts
  }
  const measure = process.argv.includes("--serve") ? served : chat
  type Figure = Exclude<keyof Counts, "bySpan">
  const per: Record<Figure, Array<number>> = { ops: [], fibers: [], spans: [], cpuUs: [] }
  const spanOps = new Map<string, Array<number>>()
  for (let r = 0; r < rounds; r++) {
    const a = yield* Effect.promise(() => measure(few))
    const b = yield* Effect.promise(() => measure(many))
    for (const k of Object.keys(per) as Array<Figure>) per[k].push((b[k] - a[k]) / (many - few))
    for (const name of new Set([...Object.keys(a.bySpan ?? {}), ...Object.keys(b.bySpan ?? {})])) {
      spanOps.set(name, [...(spanOps.get(name) ?? []), ((b.bySpan?.[name] ?? 0) - (a.bySpan?.[name] ?? 0)) / (many - few)])
    }
    process.stderr.write(`round ${r + 1}/${rounds}: ops ${per.ops.at(-1)!.toFixed(0)}, fibers ${per.fibers.at(-1)!.toFixed(1)}\n`)
  }
  const show = (k: Figure, scale = 1, digits = 0) =>
    `${(median(per[k]) * scale).toFixed(digits)} [${per[k].map((x) => (x * scale).toFixed(digits)).join(", ")}]`
  console.log(`per warm turn (${measure === chat ? "chat" : `serve, after ${SERVE_WARMUP} turns,`} of ${few} -> ${many} messages, ${rounds} rounds):`)
  console.log(`  run-loop ops ${show("ops")}`)
  console.log(`  fibers       ${show("fibers", 1, 1)}`)
  console.log(`  spans        ${show("spans", 1, 1)}`)
  console.log(`  Node CPU     ${show("cpuUs", 1 / 1000, 1)} ms (with the counting hook)`)
  if (bySpan) {
    console.log("run-loop ops per warm turn by the innermost span:")
    for (const [name, v] of [...spanOps].sort((x, y) => median(y[1]) - median(x[1]))) {
      if (Math.abs(median(v)) >= 1) console.log(`  ${median(v).toFixed(0).padStart(6)}  ${name}`)
    }
  }
})

NodeRuntime.runMain(program.pipe(Effect.scoped))
