// The figures of issue 13 in one table from one run: each row the raw floor (the least a Node program must do on the
// same native codex binary, bench/floor/raw-client.ts), codex-harness, their ratio or difference, the goal, and whether
// it is met. Against an instant ScriptedModel served from this process; every harness figure but the last is the
// command line through bin/codex-harness.js in a fresh `node` process, timed from spawn to exit.
//
//   cold     `run` with a fresh state dir (one turn, exit) vs the raw floor doing one turn on a fresh CODEX_HOME
//   help     `--help` wall time and peak RSS vs `node -e 0`
//   warm     piped `chat` with 5 and with 25 messages: the slope per message, vs the raw floor's 5 and 25 turns
//   tools    the same with three exec_command calls per message, 2 and 6 messages
//   memory   the harness's peak RSS (VmHWM as it exits) over a 20-message piped chat, vs a Node process holding a timer
//   sessions the library with 32 sessions x 4 turns at once on one app-server, vs the raw floor's 32 threads
//   hot      issue 27: the harness's Node CPU per warm turn vs the floor's, and the warm, 3-tool and serve-held-connection
//            wall ratios, each quiet and with two busy loops running (figures/hotpath.ts)
//   connect  one warm `run --connect` process through a running `serve` (spawn to exit), vs `node -e 0` plus 1.5x the
//            warm row's per-message cost of a piped `chat` (figures/connect.ts)
//   ui       issue 31: the Control UI's script size, and its first paint from a local serve in headless Chromium
//            (figures/ui.ts)
//   otlp     issue 31: the telemetry layer's close with a collector that is down or never answers (<= 200 ms), and a
//            whole serve's exit with --otlp to the hanging one (figures/telemetry.ts)
//
// Medians with the range [min-max]: --runs N (default 7) for cold and help; warm, tools, memory, connect at most 3 runs,
// sessions at most 2, so the table takes minutes. The two sides are interleaved run by run, the order rotating. Every
// process gets HOME set to an empty directory (see Context.env: login shells would run this machine's rc files). Every
// process a measurement started must be gone 3 s after it ended; one that stays is killed and named, and the bench exits
// 1, as it does when a row fails. A goal that is not met is a NO in the table, not a failure.
//
// Build and run: npm run build && node dist/bench/figures.js [--runs N] [--only ROW[,ROW]]
import { NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import { performance } from "node:perf_hooks"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import * as Ctx from "./figures/context.js"
import { connectTurn } from "./figures/connect.js"
import { hotPath } from "./figures/hotpath.js"
import { otlpExit } from "./figures/telemetry.js"
import { controlUi } from "./figures/ui.js"
import { busyLoops, marked } from "./figures/proc.js"
import { coldRun, help, memory, type RowResult, toolTurn, warmTurn } from "./figures/rows.js"
import { manySessions, SESSIONS, TURNS } from "./figures/sessions.js"
import { failedRow, type Row, table } from "./figures/stats.js"

const usage = (message: string): never => {
  console.error(`figures: ${message}\nusage: node dist/bench/figures.js [--runs N] [--bin PATH] [--only ${ROWS.map((r) => r.name).join("|")}[,...]]`)
  process.exit(2)
}

interface RowSpec {
  readonly name: string
  readonly figure: string
  readonly goal: string
  /** how many runs of --runs N this row takes */
  readonly runs: (n: number) => number
  readonly run: (ctx: Ctx.Context, runs: number) => Promise<RowResult>
}

/** the heavier rows take fewer runs than --runs asks for, so the whole table takes minutes, not a quarter of an hour */
const LIGHT = 3
const SESSION_RUNS = 2

const ROWS: ReadonlyArray<RowSpec> = [
  { name: "cold", figure: "cold `run`", goal: "<= floor +0.30 s", runs: (n) => n, run: coldRun },
  { name: "help", figure: "`--help`", goal: "<= 0.15 s", runs: (n) => n, run: help },
  { name: "warm", figure: "warm turn, no tools", goal: "<= 1.05x", runs: (n) => Math.min(n, LIGHT), run: warmTurn },
  { name: "tools", figure: "turn with 3 `exec_command`", goal: "<= 1.05x", runs: (n) => Math.min(n, LIGHT), run: toolTurn },
  { name: "memory", figure: "harness peak RSS, 20-turn chat", goal: "<= 100 MB", runs: (n) => Math.min(n, LIGHT), run: memory },
  {
    name: "sessions",
    figure: `${SESSIONS} sessions x ${TURNS} turns`,
    goal: "see row",
    runs: (n) => Math.min(n, SESSION_RUNS),
    run: manySessions
  },
  { name: "connect", figure: "warm `run --connect`", goal: "<= node -e 0 + 1.5x chat turn", runs: (n) => Math.min(n, LIGHT), run: connectTurn },
  { name: "otlp", figure: "exit with --otlp, collector dead or hanging", goal: "<= 200 ms", runs: (n) => Math.min(n, LIGHT), run: otlpExit },
  { name: "ui", figure: "Control UI script and first paint", goal: "<= 300 KB", runs: (n) => Math.min(n, LIGHT), run: controlUi },
  { name: "hot", figure: "hot path (CPU, warm, tools, serve)", goal: "see rows", runs: (n) => Math.min(n, LIGHT), run: hotPath }
]

const options = () => {
  const argv = process.argv.slice(2)
  let runs = 7
  let only: ReadonlyArray<string> | undefined
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split("=", 2) as [string, string | undefined]
    const value = () => inline ?? argv[++i] ?? usage(`${flag} wants a value`)
    if (flag === "--runs") {
      const raw = value()
      runs = Number(raw)
      if (!Number.isInteger(runs) || runs < 1) usage(`--runs wants a whole number of at least 1, got ${JSON.stringify(raw)}`)
    } else if (flag === "--only") {
      only = value().split(",").filter((x) => x !== "")
      const unknown = only.filter((name) => !ROWS.some((r) => r.name === name))
      if (unknown.length > 0) usage(`no row named ${unknown.join(", ")}`)
    } else if (flag === "--bin") {
      Ctx.useCliBin(value())
    } else usage(`unknown option ${argv[i]}`)
  }
  return { runs, rows: ROWS.filter((r) => only === undefined || only.includes(r.name)) }
}

const codexVersion = () => {
  try {
    const file = createRequire(import.meta.url).resolve("@openai/codex/package.json")
    return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version
  } catch {
    return "?"
  }
}

/** how long a login shell takes to start, which Codex pays for its shell snapshot and for commands before it is ready */
const loginShell = (env: Readonly<Record<string, string>>) => {
  const t0 = performance.now()
  const result = spawnSync("bash", ["-lc", "true"], { env: { ...process.env, ...env }, stdio: "ignore", timeout: 20_000 })
  return result.error !== undefined ? "over 20 s" : `${((performance.now() - t0) / 1000).toFixed(2)} s`
}

/** how much runnable work waited for a CPU over the last 5 minutes: this bench's own processes, and anyone else's */
const cpuPressure = () => {
  try {
    const some = /some avg10=([\d.]+) avg60=([\d.]+) avg300=([\d.]+)/.exec(fs.readFileSync("/proc/pressure/cpu", "utf8"))
    return some === null ? "" : `CPU pressure at the end (/proc/pressure/cpu, some): avg60 ${some[2]}%, avg300 ${some[3]}%`
  } catch {
    return ""
  }
}

/** which build bin/codex-harness.js runs: the bundle when it is at least as new as the tsc output (its rule today) */
const cliBuild = () => {
  const modified = (file: string) => fs.statSync(new URL(`../../dist/${file}`, import.meta.url), { throwIfNoEntry: false })?.mtimeMs ?? -1
  return modified("bundle/cli.cjs") >= 0 && modified("bundle/cli.cjs") >= modified("src/cli/main.js")
    ? "bundled (dist/bundle)"
    : "tsc output (dist/src)"
}

const program = Effect.gen(function* () {
  const { rows: chosen, runs } = options()
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(Ctx.REPLY) })
  const ctx = Ctx.make(model)
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      busyLoops.killAll()
      for (const pid of marked()) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {}
      }
      fs.rmSync(ctx.root, { recursive: true, force: true })
    })
  )
  const started = performance.now()
  const rows: Array<Row> = []
  const notes: Array<string> = []
  let failed = false
  for (const spec of chosen) {
    const t0 = performance.now()
    process.stderr.write(`figures: ${spec.name} ...`)
    const result = yield* Effect.promise(() =>
      spec.run(ctx, spec.runs(runs)).catch((error: unknown) => {
        failed = true
        return { rows: [failedRow(spec.figure, spec.goal, error)], notes: [`${spec.name}: ${String(error)}`] }
      })
    )
    process.stderr.write(` ${((performance.now() - t0) / 1000).toFixed(0)} s\n`)
    rows.push(...result.rows)
    notes.push(...result.notes)
  }
  const cpus = os.cpus()
  const out = [
    `figures: ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC; ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? "?"}), ` +
    `Node ${process.version}, codex ${codexVersion()}; instant scripted model; median [min-max] of ` +
    chosen.map((r) => `${r.name} ${r.runs(runs)}`).join(", ") + " runs",
    `CLI build: ${cliBuild()} (bin ${Ctx.cliBin}); ` +
    `every process runs with HOME empty: a login shell (bash -lc true) takes ${loginShell(ctx.env)} so, ` +
    `${loginShell({})} with this HOME`,
    "",
    ...table(rows),
    "",
    ...notes.map((n) => `- ${n}`),
    `- processes alive when their measurement ended: ${ctx.leftovers.atEnd}; left after 3 s: ${ctx.leftovers.left.length}` +
    `${ctx.leftovers.left.length > 0 ? ` (${ctx.leftovers.left.join("; ")})` : ""}`,
    `- total ${((performance.now() - started) / 1000).toFixed(0)} s; ${cpuPressure()}`
  ]
  for (const line of out) console.log(line)
  if (failed || ctx.leftovers.left.length > 0) return yield* Effect.dieMessage("figures: a row failed or processes were left behind")
})

// runMain: Ctrl-C interrupts the program, and every scope (the model server, the finalizer above) still closes
NodeRuntime.runMain(program.pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))
