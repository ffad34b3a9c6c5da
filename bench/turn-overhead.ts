// Turn overhead of the harness against the least possible raw JSON-RPC driver on the same native codex binary.
//
// Both sides run N turns (default 30; `--turns N` or env TURNS) on ONE thread against an instant ScriptedModel:
//   harness  CodexHarness.runTurn with the same sessionId each time (the bound thread is resumed; the pooled client
//            stays warm through the pool's idle TTL), through the live layer (file session store, real process)
//   raw      node:child_process spawn of the binary with the same `-c` overrides and a fresh CODEX_HOME;
//            initialize / initialized / thread/start once, then per turn `turn/start` and read stdout lines until
//            that turn's `turn/completed`. JSON.parse only, no schema decoding.
// `--breakdown` adds a third series, raw with a `thread/resume` before every `turn/start` (what the harness sends),
// to separate the cost of the resume round trip from the harness's own work.
// The series are interleaved turn by turn (rotating who goes first), so drift and other load hit them alike.
// Each series also reports this Node process's CPU time per turn (it includes the in-process ScriptedModel's share).
// The memory line is this process's RSS and heap before/after the measured turns; run with `node --expose-gc` to
// collect garbage before each sample.
//
// Build and run: npx tsc -p tsconfig.json && node dist/bench/turn-overhead.js [--turns N] [--warmup N] [--breakdown]
import { NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import { Context, Effect, Layer, Scope } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { performance } from "node:perf_hooks"
import * as Live from "../layers/internal/Live.js"
import { Delivery } from "../src/ports/Delivery.js"
import * as CodexArgs from "../src/appserver/CodexArgs.js"
import * as CodexBinary from "../src/appserver/CodexBinary.js"
import { ClientPool } from "../src/appserver/ClientPool.js"
import { CodexHarness } from "../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../src/config/Settings.js"
import { isAlive } from "../src/platform/processAlive.js"
import * as TempDir from "../src/platform/TempDir.js"
import * as Runtimes from "../src/session/Runtimes.js"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"

// ---------------------------------------------------------------------------------------------------------------------
// options

const REPLY = "ok from the scripted model"
const MODEL = "mock-model"

const intOption = (flag: string, envName: string, fallback: number): number => {
  const argv = process.argv.slice(2)
  let raw: string | undefined
  const at = argv.indexOf(flag)
  if (at >= 0) raw = argv[at + 1]
  const inline = argv.find((a) => a.startsWith(`${flag}=`))
  if (inline !== undefined) raw = inline.slice(flag.length + 1)
  raw ??= process.env[envName]
  if (raw === undefined || raw === "") return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 0) {
    console.error(`turn-overhead: ${flag} wants a non-negative integer, got ${JSON.stringify(raw)}`)
    process.exit(2)
  }
  return n
}

const TURNS = Math.max(1, intOption("--turns", "TURNS", 30))
const WARMUP = intOption("--warmup", "WARMUP", 3)
const BREAKDOWN = process.argv.includes("--breakdown")

// ---------------------------------------------------------------------------------------------------------------------
// statistics

const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/** nearest-rank percentile */
const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}

const ms = (x: number) => `${x.toFixed(1)} ms`
const mb = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MB`

/** process memory; with `node --expose-gc` a full collection first, so the figures show retained memory only */
const gc = (globalThis as { gc?: () => void }).gc
const memory = () => {
  gc?.()
  const m = process.memoryUsage()
  return { rss: m.rss, heapUsed: m.heapUsed }
}

const tempDir = TempDir.scoped

// ---------------------------------------------------------------------------------------------------------------------
// the raw driver: plain promises, JSON.parse, nothing else

interface RawMessage {
  readonly id?: number
  readonly method?: string
  readonly result?: unknown
  readonly error?: { readonly message?: string }
  readonly params?: { readonly turn?: { readonly id?: string; readonly status?: string } }
}

class RawDriver {
  private buffer = ""
  private nextId = 0
  private readonly responses = new Map<number, (message: RawMessage) => void>()
  /** turn id -> status, for turn/completed lines not yet claimed */
  private readonly completed = new Map<string, string>()
  private turnWaiter:
    | { readonly turnId: string; readonly resolve: (status: string) => void; readonly reject: (error: Error) => void }
    | undefined
  private readonly exit: Promise<void>
  private exited = false
  private stderrTail = ""

  private constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => this.onData(chunk))
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (text: string) => {
      this.stderrTail = (this.stderrTail + text).slice(-2_000)
    })
    child.stdin.on("error", () => {})
    this.exit = new Promise((resolve) =>
      child.once("exit", (code, signal) => {
        this.exited = true
        // whoever still waits learns at once rather than at a timeout
        const error = new Error(`codex exited (${signal ?? code}); stderr: ${this.stderrTail}`)
        for (const waiter of this.responses.values()) waiter({ error: { message: error.message } })
        this.responses.clear()
        this.turnWaiter?.reject(error)
        this.turnWaiter = undefined
        resolve()
      })
    )
  }

  static spawn(command: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, cwd: string): Promise<RawDriver> {
    return new Promise((resolve, reject) => {
      const child = spawn(command, [...args], { stdio: ["pipe", "pipe", "pipe"], env, cwd })
      child.once("error", reject)
      child.once("spawn", () => resolve(new RawDriver(child)))
    })
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  private onData(chunk: string): void {
    this.buffer += chunk
    let nl: number
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl)
      this.buffer = this.buffer.slice(nl + 1)
      if (line.length > 0) this.onLine(line)
    }
  }

  private onLine(line: string): void {
    const message = JSON.parse(line) as RawMessage
    if (message.method === undefined) {
      if (typeof message.id === "number") {
        const waiter = this.responses.get(message.id)
        this.responses.delete(message.id)
        waiter?.(message)
      }
      return
    }
    if (message.method === "turn/completed") {
      const turnId = message.params?.turn?.id ?? ""
      const status = message.params?.turn?.status ?? "unknown"
      if (this.turnWaiter?.turnId === turnId) {
        const waiter = this.turnWaiter
        this.turnWaiter = undefined
        waiter.resolve(status)
      } else {
        this.completed.set(turnId, status)
      }
    }
  }

  private write(message: unknown): void {
    this.child.stdin.write(JSON.stringify(message) + "\n")
  }

  notify(method: string): void {
    this.write({ method })
  }

  request(method: string, params: unknown): Promise<unknown> {
    if (this.exited) return Promise.reject(new Error(`codex exited before ${method}: ${this.stderrTail}`))
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.responses.delete(id)
        reject(new Error(`${method} timed out; stderr: ${this.stderrTail}`))
      }, 60_000)
      this.responses.set(id, (message) => {
        clearTimeout(timer)
        if (message.error !== undefined) reject(new Error(`${method} failed: ${message.error.message ?? "?"}`))
        else resolve(message.result)
      })
      this.write({ id, method, params })
    })
  }

  /** `turn/start`, then stdout lines until that turn's `turn/completed`; yields the turn status */
  async turn(threadId: string, text: string, approvalPolicy: string): Promise<string> {
    const result = (await this.request("turn/start", {
      threadId,
      input: [{ type: "text", text }],
      approvalPolicy,
      model: MODEL
    })) as { readonly turn: { readonly id: string } }
    const turnId = result.turn.id
    const early = this.completed.get(turnId)
    if (early !== undefined) {
      this.completed.delete(turnId)
      return early
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`turn ${turnId} never completed`)), 60_000)
      this.turnWaiter = {
        turnId,
        resolve: (status) => {
          clearTimeout(timer)
          resolve(status)
        },
        reject: (error) => {
          clearTimeout(timer)
          reject(error)
        }
      }
    })
  }

  /** end stdin, wait for the exit (SIGKILL after 5 s) */
  async close(): Promise<void> {
    this.child.stdin.end()
    if (this.exited) return
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), 5_000)
    })
    const how = await Promise.race([this.exit.then(() => "clean" as const), late])
    clearTimeout(timer)
    if (how === "late") {
      this.child.kill("SIGKILL")
      await this.exit
    }
  }
}

/** A raw client with its thread open, ready for turns. Closed (stdin ended, exit awaited) with the scope. */
interface RawSession {
  readonly pid: number | undefined
  readonly userAgent: string
  readonly turn: (i: number) => Promise<void>
}

const rawSession = (modelUrl: string, workDir: string, settings: HarnessSettings, resumeEachTurn: boolean) =>
  Effect.gen(function* () {
    const codexHome = yield* tempDir("turn-overhead-rawhome-")
    const codex = yield* Effect.orDie(CodexBinary.resolve(settings.codexBin))
    const args = [...codex.prefixArgs, ...CodexArgs.providerArgs(modelUrl, MODEL), "app-server"]
    const env = { ...process.env, ...CodexArgs.providerEnv(), CODEX_HOME: codexHome }
    const driver = yield* Effect.acquireRelease(
      Effect.promise(() => RawDriver.spawn(codex.command, args, env, workDir)),
      (d) => Effect.promise(() => d.close())
    )
    return yield* Effect.promise(async (): Promise<RawSession> => {
      const init = (await driver.request("initialize", {
        clientInfo: { name: "turn-overhead-raw", title: "turn-overhead-raw", version: "0.0.0" },
        capabilities: { experimentalApi: true }
      })) as { readonly userAgent?: string }
      driver.notify("initialized")
      // the same thread options the harness sends
      const threadOptions = {
        cwd: workDir,
        approvalPolicy: settings.approvalPolicy,
        sandbox: settings.sandbox,
        personality: "none",
        model: MODEL
      }
      const started = (await driver.request("thread/start", threadOptions)) as { readonly thread: { readonly id: string } }
      const threadId = started.thread.id
      let turnsDone = 0
      const turn = async (i: number) => {
        // like the harness: a fresh thread has no rollout to resume until its first turn has run
        if (resumeEachTurn && turnsDone > 0) {
          await driver.request("thread/resume", { ...threadOptions, threadId, excludeTurns: true })
        }
        const status = await driver.turn(threadId, `raw turn ${i}`, settings.approvalPolicy)
        if (status !== "completed") throw new Error(`raw turn ${i} ended ${status}`)
        turnsDone++
      }
      return { pid: driver.pid, userAgent: init.userAgent ?? "", turn }
    })
  })

// ---------------------------------------------------------------------------------------------------------------------

interface Series {
  readonly label: string
  readonly note?: string
  readonly turn: (i: number) => Effect.Effect<void>
  readonly times: Array<number>
  /** this Node process's CPU time (user + system) during the series' turns, in ms */
  cpuMs: number
}

const main = Effect.scoped(
  Effect.gen(function* () {
    const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(REPLY) })
    const stateDir = yield* tempDir("turn-overhead-state-")
    const harnessWork = yield* tempDir("turn-overhead-work-")
    const rawWork = yield* tempDir("turn-overhead-rawwork-")
    const settings: HarnessSettings = {
      stateDir,
      cwd: harnessWork,
      providerUrl: model.url,
      model: MODEL,
      approvalPolicy: "never",
      sandbox: "read-only"
    }
    const rawSettings: HarnessSettings = { ...settings, cwd: rawWork }

    // raw clients: closed by the outer scope, after the harness layer
    const raw = yield* rawSession(model.url, rawWork, rawSettings, false)
    const rawResume = BREAKDOWN ? yield* rawSession(model.url, rawWork, rawSettings, true) : undefined

    // the harness layer gets its own scope, closed before the results are printed
    const layerScope = yield* Scope.make()
    const measured = yield* Effect.gen(function* () {
      const silent = Layer.succeed(Delivery, { deliver: () => Effect.void })
      const context = yield* Layer.buildWithScope(Live.layer(settings).pipe(Layer.provide(silent)), layerScope)
      const harness = Context.get(context, CodexHarness)
      const pool = Context.get(context, ClientPool)
      const harnessTurn = (i: number) =>
        harness.runTurn({ sessionId: "bench", prompt: `harness turn ${i}` }).pipe(
          Effect.flatMap((outcome) =>
            outcome.status === "completed" && outcome.finalText === REPLY
              ? Effect.void
              : Effect.dieMessage(`harness turn ${i} ended ${outcome.status} (${outcome.error ?? outcome.finalText ?? ""})`)
          ),
          Effect.orDie
        )
      const series: Array<Series> = [
        { label: "harness", turn: harnessTurn, times: [], cpuMs: 0 },
        { label: "raw", turn: (i) => Effect.promise(() => raw.turn(i)), times: [], cpuMs: 0 },
        ...(rawResume !== undefined
          ? [{
            label: "raw+res",
            note: "(raw with a thread/resume before each turn/start, as the harness sends)",
            turn: (i: number) => Effect.promise(() => rawResume.turn(i)),
            times: [],
            cpuMs: 0
          }]
          : [])
      ]
      for (let i = 0; i < WARMUP; i++) {
        for (const s of series) yield* s.turn(-1 - i)
      }
      // the warm client the harness leases (same key and spec), for its pid
      const runtime = Runtimes.runtimeFor(settings, "/nonexistent/user-codex-home")
      const harnessPid = yield* Effect.scoped(
        Effect.map(Effect.orDie(pool.lease(runtime.poolKey, Runtimes.clientSpecFor(runtime, settings))), (c) => c.pid)
      )
      const memBefore = memory()
      // interleaved, rotating who goes first, so drift and neighbours' load hit every series alike
      for (let i = 0; i < TURNS; i++) {
        for (let k = 0; k < series.length; k++) {
          const s = series[(i + k) % series.length]!
          const c0 = process.cpuUsage()
          const t0 = performance.now()
          yield* s.turn(i)
          s.times.push(performance.now() - t0)
          const c = process.cpuUsage(c0)
          s.cpuMs += (c.user + c.system) / 1000
        }
      }
      const memAfter = memory()
      return { series, harnessPid, memBefore, memAfter }
    }).pipe(Effect.onExit((exit) => Scope.close(layerScope, exit)))

    const version = /\/(\d+\.\d+\.\d+\S*)/.exec(raw.userAgent)?.[1] ?? "(unknown version)"
    const [h, r] = measured.series
    const line = (s: Series) =>
      `  ${s.label.padEnd(8)} median ${ms(median(s.times))}  p90 ${ms(percentile(s.times, 90))}  node cpu ${ms(s.cpuMs / TURNS)}/turn${
        s.note !== undefined ? `  ${s.note}` : ""
      }`
    const change = (before: number, after: number) =>
      `${mb(before)} before, ${mb(after)} after (${after >= before ? "+" : "-"}${mb(Math.abs(after - before))})`
    const { memAfter, memBefore } = measured
    const logged = yield* model.requests
    const loggedMb = mb(logged.reduce((sum, r) => sum + Buffer.byteLength(r.body), 0))
    const out = [
      `turn-overhead: ${TURNS} turns each on codex ${version}, instant scripted model (after ${WARMUP} warm-up turns each)`,
      ...measured.series.map(line),
      `  ratio    ${(median(h!.times) / median(r!.times)).toFixed(2)}`,
      `  rss      ${change(memBefore.rss, memAfter.rss)}, heap used ${change(memBefore.heapUsed, memAfter.heapUsed)}${
        gc !== undefined ? ", after gc" : ""
      }`,
      `           (this process also holds the ScriptedModel's request log, which grows with every turn: ${logged.length} requests,`,
      `           ${loggedMb} of bodies; see bench/README.md)`
    ]
    const pids = [measured.harnessPid, raw.pid, rawResume?.pid].filter((p): p is number => p !== undefined)
    return { out, pids }
  })
)

const program = Effect.gen(function* () {
  const { out, pids } = yield* main
  // every scope is closed by now: the harness layer (its codex), the raw children, the model server, the temp dirs
  const leftovers = pids.filter(isAlive)
  for (const l of out) console.log(l)
  console.log(`leftover codex processes: ${leftovers.length}${leftovers.length > 0 ? ` (pids ${leftovers.join(", ")})` : ""}`)
  if (leftovers.length > 0) return yield* Effect.dieMessage("codex processes outlived the bench")
})

// runMain: Ctrl-C interrupts the program, so every scope still closes; exit code 0 on success, 1 on failure
NodeRuntime.runMain(program.pipe(Effect.provide(NodeFileSystem.layer)))
