// A long piped chat through the compiled CLI, the way an operator's script drives it: one `codex-harness chat` process
// on one session, N messages (default 1,000) written one at a time, each after the previous reply came back, against
// an instant ScriptedModel. It reports what would show a leak or a slowdown: the time per turn over the first and the
// last 50 turns, the open file descriptors and the RSS of the harness and of its app-server, sampled every 50 turns,
// and the size of the session file. It exits 1 when a reply is missing or a process outlives the chat.
//
// Build and run: npx tsc -p tsconfig.json && node dist/bench/soak.js [--turns N]
import { NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import { isAlive } from "../src/platform/processAlive.js"
import * as TempDir from "../src/platform/TempDir.js"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import { cmdline, descendants } from "./figures/proc.js"

const REPLY = "ok from the scripted model"
const WINDOW = 50

const turnsOption = (): number => {
  const argv = process.argv.slice(2)
  const at = argv.indexOf("--turns")
  const raw = at >= 0 ? argv[at + 1] : process.env.TURNS
  if (raw === undefined) return 1000
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 2) {
    console.error(`soak: --turns wants a whole number of at least 2, got ${JSON.stringify(raw)}`)
    process.exit(2)
  }
  return n
}

/** what /proc says about one process: open descriptors and resident memory; undefined once it is gone */
const sample = (pid: number): { readonly fds: number; readonly rssKb: number } | undefined => {
  try {
    const fds = fs.readdirSync(`/proc/${pid}/fd`).length
    const rss = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return { fds, rssKb: Number(rss?.[1] ?? 0) }
  } catch {
    return undefined
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

const program = Effect.gen(function* () {
  const turns = turnsOption()
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(REPLY) })
  const stateDir = yield* TempDir.scoped("codex-harness-soak-state-")
  const workDir = yield* TempDir.scoped("codex-harness-soak-work-")
  const bin = path.resolve("bin/codex-harness.js")
  const args = ["chat", "--state-dir", stateDir, "--cwd", workDir, "--provider-url", model.url, "--session", "soak"]

  const child = spawn(process.execPath, [bin, ...args], { stdio: ["pipe", "pipe", "pipe"] })
  yield* Effect.addFinalizer(() => Effect.sync(() => (child.exitCode === null ? void child.kill("SIGKILL") : undefined)))
  let stderr = ""
  child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString("utf8")).slice(-4000)))
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)))

  // every reply is one stdout line; each one wakes the waiter for it
  let replies = 0
  let pending = ""
  let wake: (() => void) | undefined
  child.stdout.setEncoding("utf8")
  child.stdout.on("data", (chunk: string) => {
    pending += chunk
    let nl: number
    while ((nl = pending.indexOf("\n")) >= 0) {
      if (pending.slice(0, nl) === REPLY) replies++
      pending = pending.slice(nl + 1)
      wake?.()
    }
  })
  const replyNumber = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to message ${n} within 60 s; stderr: ${stderr}`)), 60_000)
      const check = () => {
        if (replies < n) return
        clearTimeout(timer)
        wake = undefined
        resolve()
      }
      wake = check
      check()
    })

  const times: Array<number> = []
  const samples: Array<{ turn: number; harness?: ReturnType<typeof sample>; appServer?: ReturnType<typeof sample> }> = []
  let appServerPid: number | undefined
  for (let n = 1; n <= turns; n++) {
    const started = performance.now()
    child.stdin.write(`message ${n}\n`)
    yield* Effect.promise(() => replyNumber(n))
    times.push(performance.now() - started)
    if (n === 1 || n % WINDOW === 0 || n === turns) {
      appServerPid ??= descendants(child.pid!).find((pid) => cmdline(pid).includes("app-server"))
      samples.push({ turn: n, harness: sample(child.pid!), ...(appServerPid !== undefined ? { appServer: sample(appServerPid) } : {}) })
    }
  }
  const below = descendants(child.pid!)
  child.stdin.end()
  const code = yield* Effect.promise(() => exited)
  const leftover = below.filter(isAlive)

  const window = Math.min(WINDOW, Math.floor(turns / 2))
  const first = times.slice(0, window)
  const last = times.slice(-window)
  const fmt = (s: ReturnType<typeof sample>) => (s === undefined ? "-" : `${s.fds} fds ${(s.rssKb / 1024).toFixed(1)} MB`)
  console.log(`soak: ${turns} turns on one session through \`codex-harness chat\` (piped), instant model`)
  console.log(`time per turn: first ${window} median ${median(first).toFixed(1)} ms, last ${window} median ${median(last).toFixed(1)} ms ` +
    `(ratio ${(median(last) / median(first)).toFixed(2)})`)
  console.log("turn      harness                 app-server")
  for (const s of samples) console.log(`${String(s.turn).padEnd(9)} ${fmt(s.harness).padEnd(23)} ${fmt(s.appServer)}`)
  const peak = Math.max(...samples.map((s) => s.harness?.rssKb ?? 0))
  console.log(`harness peak RSS ${(peak / 1024).toFixed(1)} MB; session file ${(fs.statSync(path.join(stateDir, "sessions", "soak.jsonl")).size / 1024).toFixed(0)} KB`)
  console.log(`chat exit code ${code}; leftover processes: ${leftover.length}`)
  if (code !== 0 || leftover.length > 0 || replies !== turns) {
    console.error(`soak: failed (replies ${replies}/${turns}); stderr: ${stderr}`)
    process.exitCode = 1
  }
})

NodeRuntime.runMain(program.pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))
