// Start-up cost of the command line against its floors, each command a fresh process:
//   node -e 0            Node's own start
//   --help               `node bin/codex-harness.js --help`: parsing and help, no harness
//   raw cold turn        bench/cold-floor: one turn on the same binary from a bare Node script (a cold run's floor)
//   run (cold)           `node bin/codex-harness.js run` with a fresh state dir and workspace, one turn, process exit
// against an instant ScriptedModel served by this process. The commands are interleaved run by run (rotating who goes
// first), so drift and other load hit them alike; the figures are wall times from spawn to exit, median (min-max).
// A second, shorter pass measures each Node process's own peak RSS and CPU time (`process.resourceUsage()` at exit,
// through a `--require` preload; the app-server's are not in them), and for `run` how long it took to spawn the
// app-server (`--codex-bin` is a wrapper that notes the time and execs the binary). It is kept apart so neither is in
// the timings. CPU time moves less than wall time when the machine is busy.
//
// Build and run: npm run build && node dist/bench/startup.js [--runs N] [--rss-runs N] [--bin PATH ...]
// Several --bin compare builds side by side in one run (e.g. a copy of an older checkout's bin/codex-harness.js).
import { NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as CodexArgs from "../src/appserver/CodexArgs.js"
import * as CodexBinary from "../src/appserver/CodexBinary.js"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"

const MODEL = "mock-model"
const REPLY = "ok from the scripted model"

const argv = process.argv.slice(2)
const intFlag = (flag: string, fallback: number) => {
  const at = argv.indexOf(flag)
  const n = at >= 0 ? Number(argv[at + 1]) : fallback
  if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} wants a non-negative integer`)
  return n
}
const RUNS = Math.max(1, intFlag("--runs", 10))
const RSS_RUNS = intFlag("--rss-runs", 3)
const bins = argv.flatMap((a, i) => (a === "--bin" && argv[i + 1] !== undefined ? [path.resolve(argv[i + 1]!)] : []))
if (bins.length === 0) bins.push(path.resolve("bin/codex-harness.js"))

const here = path.dirname(fileURLToPath(import.meta.url))

interface Ran {
  /** Date.now() at the spawn */
  readonly startedAt: number
  readonly ms: number
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const runOnce = (command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Promise<Ran> =>
  new Promise((resolve, reject) => {
    const startedAt = Date.now()
    const t0 = performance.now()
    const child = spawn(command, [...args], { stdio: ["ignore", "pipe", "pipe"], env })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.once("error", reject)
    child.once("close", (code) => resolve({ startedAt, ms: performance.now() - t0, code, stdout, stderr }))
  })

/**
 * A command to measure; `prepare` makes what one run needs (fresh directories) and returns its argv and cleanup. A
 * `run` given a `probe` passes it as `--codex-bin`: a wrapper that notes when the app-server is spawned.
 */
interface Case {
  readonly label: string
  readonly prepare: (probe?: string) => {
    readonly args: ReadonlyArray<string>
    readonly env?: Record<string, string>
    readonly cleanup?: () => void
  }
  readonly check: (ran: Ran) => boolean
  readonly times: Array<number>
  readonly rssKb: Array<number>
  readonly cpuMs: Array<number>
  /** how long after the spawn of `run` its app-server was spawned, in the second pass */
  readonly spawnMs: Array<number>
}

const freshDir = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix))
const removeAll = (...dirs: ReadonlyArray<string>) => () => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true }))

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}
const seconds = (ms: number) => `${(ms / 1000).toFixed(3)} s`

const program = Effect.scoped(
  Effect.gen(function* () {
    const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(REPLY) })
    const codex = yield* Effect.orDie(CodexBinary.resolve())
    const node = process.execPath
    const cases: Array<Case> = [
      { label: "node -e 0", prepare: () => ({ args: ["-e", "0"] }), check: (r) => r.code === 0, times: [], rssKb: [], cpuMs: [], spawnMs: [] },
      ...bins.map((bin): Case => ({
        label: `${bins.length > 1 ? `${bin} ` : ""}--help`,
        prepare: () => ({ args: [bin, "--help"] }),
        check: (r) => r.code === 0 && r.stdout.includes("codex-harness"),
        times: [],
        rssKb: [],
        cpuMs: [],
        spawnMs: []
      })),
      {
        label: "raw cold turn (floor)",
        prepare: () => {
          const [home, work] = [freshDir("startup-floor-home-"), freshDir("startup-floor-work-")]
          const spec = {
            command: codex.command,
            args: [...codex.prefixArgs, ...CodexArgs.providerArgs(model.url, MODEL), "app-server"],
            env: { ...CodexArgs.providerEnv(), CODEX_HOME: home },
            cwd: work,
            model: MODEL
          }
          return { args: [path.join(here, "cold-floor.js"), JSON.stringify(spec)], cleanup: removeAll(home, work) }
        },
        check: (r) => r.code === 0 && r.stdout.includes(REPLY),
        times: [],
        rssKb: [],
        cpuMs: [],
        spawnMs: []
      },
      ...bins.map((bin): Case => ({
        label: `${bins.length > 1 ? `${bin} ` : ""}run (cold)`,
        prepare: (probe) => {
          const [state, work] = [freshDir("startup-state-"), freshDir("startup-work-")]
          const args = [bin, "run", "--state-dir", state, "--cwd", work, "--provider-url", model.url, "--model", MODEL]
          return { args: [...args, ...(probe !== undefined ? ["--codex-bin", probe] : []), "hi"], cleanup: removeAll(state, work) }
        },
        check: (r) => r.code === 0 && r.stdout.includes(REPLY),
        times: [],
        rssKb: [],
        cpuMs: [],
        spawnMs: []
      }))
    ]

    const measure = async (c: Case, extraArgs: ReadonlyArray<string>, env: NodeJS.ProcessEnv, probe?: string) => {
      const run = c.prepare(probe)
      try {
        const ran = await runOnce(node, [...extraArgs, ...run.args], { ...process.env, ...run.env, ...env })
        if (!c.check(ran)) throw new Error(`${c.label}: exit ${ran.code}\n${ran.stdout}\n${ran.stderr}`)
        return ran
      } finally {
        run.cleanup?.()
      }
    }

    yield* Effect.promise(async () => {
      // one untimed round first: the page cache and the binary warm, as they are for any command but the very first
      for (const c of cases) await measure(c, [], {})
      for (let i = 0; i < RUNS; i++) {
        for (let k = 0; k < cases.length; k++) {
          const c = cases[(i + k) % cases.length]!
          c.times.push((await measure(c, [], {})).ms)
        }
      }
      if (RSS_RUNS === 0) return
      const dir = freshDir("startup-rss-")
      const preload = path.join(dir, "rss.cjs")
      const out = path.join(dir, "rss")
      // the process's own peak RSS (KB) and CPU time (µs), written as it exits (runMain and `-e 0` both end that way)
      fs.writeFileSync(
        preload,
        `process.on("exit", () => { const u = process.resourceUsage(); require("node:fs").writeFileSync(process.env.STARTUP_RSS_FILE, ` +
          "`${u.maxRSS} ${u.userCPUTime + u.systemCPUTime}`) })\n"
      )
      // the time before the app-server exists: what `run` does first (load its code, read config and session, set up)
      const probe = path.join(dir, "codex-probe.sh")
      const spawned = path.join(dir, "spawned")
      fs.writeFileSync(probe, `#!/bin/sh\ndate +%s%3N > "$STARTUP_SPAWN_FILE"\nexec "$STARTUP_CODEX" "$@"\n`, { mode: 0o755 })
      const probeEnv = { STARTUP_RSS_FILE: out, STARTUP_SPAWN_FILE: spawned, STARTUP_CODEX: codex.command }
      for (let i = 0; i < RSS_RUNS; i++) {
        for (const c of cases) {
          fs.rmSync(spawned, { force: true })
          // the probe runs the native binary itself; through the npm wrapper script (prefixArgs) it is left out
          const ran = await measure(c, ["--require", preload], probeEnv, codex.prefixArgs.length === 0 ? probe : undefined)
          const [rss, cpu] = fs.readFileSync(out, "utf8").split(" ").map(Number)
          c.rssKb.push(rss!)
          c.cpuMs.push(cpu! / 1000)
          if (fs.existsSync(spawned)) c.spawnMs.push(Number(fs.readFileSync(spawned, "utf8")) - ran.startedAt)
        }
      }
      fs.rmSync(dir, { recursive: true, force: true })
    })

    const width = Math.max(...cases.map((c) => c.label.length))
    console.log(`startup: ${RUNS} runs each, interleaved; wall time from spawn to exit, median (min-max)`)
    console.log(`  and from ${RSS_RUNS} more: the process's own peak RSS and CPU time, when run spawned the app-server (medians)`)
    for (const c of cases) {
      const rss = c.rssKb.length > 0 ? `  rss ${(median(c.rssKb) / 1024).toFixed(0)} MB  cpu ${median(c.cpuMs).toFixed(0)} ms` : ""
      const spawn = c.spawnMs.length > 0 ? `  app-server spawned after ${seconds(median(c.spawnMs))}` : ""
      const range = `(${seconds(Math.min(...c.times))}-${seconds(Math.max(...c.times))})`
      console.log(`  ${c.label.padEnd(width)}  ${seconds(median(c.times))}  ${range}${rss}${spawn}`)
    }
    const floor = cases.find((c) => c.label.startsWith("raw cold turn"))!
    for (const c of cases.filter((c) => c.label.endsWith("run (cold)"))) {
      console.log(`  ${c.label} - floor: ${seconds(median(c.times) - median(floor.times))}`)
    }
  })
)

NodeRuntime.runMain(program.pipe(Effect.provide(NodeFileSystem.layer)))
