// Row 6 of bench/figures.ts, the harness side, in a process of its own (so the model server in the bench's process and
// the raw floor's process are measured alike): the library (layers/Live, CodexHarness.runTurn) with `sessions` session
// ids at once on one app-server, `turns` turns each, one after the other within a session.
//
// Before the clock starts the pooled client is leased once (spawned and initialized, no thread), as the raw floor
// initializes before its clock. Measured: the time of all turns; for each turn the wait from calling runTurn to its
// TurnStarted event (a session's first wait includes opening its thread); the most turns running at once; the app-server's RSS and peak RSS after the
// turns (the `app-server` process below this one). One JSON line on stdout.
//
// Usage: node dist/bench/figures/harness-sessions.js '{"stateDir":...,"cwd":...,"providerUrl":...,"model":...,
//        "sessions":32,"turns":4,"prefix":"[r1t","reply":"..."}'
import { NodeRuntime } from "@effect/platform-node"
import { Context, Effect, Layer, Scope } from "effect"
import * as fs from "node:fs"
import { performance } from "node:perf_hooks"
import * as Live from "../../layers/internal/Live.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { Delivery } from "../../src/ports/Delivery.js"
import * as Runtimes from "../../src/session/Runtimes.js"
import { cmdline, descendants } from "./proc.js"

interface Config {
  readonly stateDir: string
  readonly cwd: string
  readonly providerUrl: string
  readonly model: string
  readonly sessions: number
  readonly turns: number
  readonly prefix: string
  readonly reply: string
}

export interface HarnessReport {
  readonly turnsMs: number
  readonly maxWaitMs: number
  /** the most turns running at once (TurnStarted seen, runTurn not yet returned) */
  readonly maxInFlight: number
  readonly turnMsMedian: number
  readonly appServerRssKb: number
  readonly appServerHwmKb: number
  readonly harnessRssKb: number
}

const config = JSON.parse(process.argv[2] ?? "{}") as Config

const memoryKb = (pid: number | "self") => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0)
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") }
  } catch {
    return { rss: 0, hwm: 0 }
  }
}

/** the app-server below this process (its direct child when the native binary is spawned) */
const appServerPid = (): number | undefined => descendants(process.pid).find((pid) => cmdline(pid).includes("app-server"))

const program = Effect.gen(function* () {
  const settings: HarnessSettings = {
    stateDir: config.stateDir,
    cwd: config.cwd,
    providerUrl: config.providerUrl,
    model: config.model,
    approvalPolicy: "never",
    sandbox: "read-only"
  }
  const scope = yield* Scope.make()
  const report = yield* Effect.gen(function* () {
    const silent = Layer.succeed(Delivery, { deliver: () => Effect.void })
    const context = yield* Layer.buildWithScope(Live.layer(settings).pipe(Layer.provide(silent)), scope)
    const harness = Context.get(context, CodexHarness)
    const pool = Context.get(context, ClientPool)
    // the app-server, spawned and initialized before the clock starts (kept by the pool's idle TTL)
    const runtime = Runtimes.runtimeFor(settings, "/nonexistent/user-codex-home")
    yield* Effect.scoped(Effect.orDie(pool.lease(runtime.poolKey, Runtimes.clientSpecFor(runtime, settings))))

    const waits: Array<number> = []
    const turnTimes: Array<number> = []
    let inFlight = 0
    let maxInFlight = 0
    const turn = (s: number, i: number) =>
      Effect.gen(function* () {
        const asked = performance.now()
        let started: number | undefined
        const outcome = yield* harness.runTurn({
          sessionId: `s${s}`,
          prompt: `${config.prefix}${s}m${i}]`,
          onEvent: (event) =>
            Effect.sync(() => {
              if (event._tag !== "TurnStarted" || started !== undefined) return
              started = performance.now()
              maxInFlight = Math.max(maxInFlight, ++inFlight)
            })
        }).pipe(Effect.ensuring(Effect.sync(() => (started !== undefined ? inFlight-- : undefined))))
        if (outcome.status !== "completed" || outcome.finalText !== config.reply) {
          return yield* Effect.dieMessage(`session ${s} turn ${i} ended ${outcome.status}: ${outcome.error ?? outcome.finalText ?? ""}`)
        }
        waits.push((started ?? performance.now()) - asked)
        turnTimes.push(performance.now() - asked)
      })
    const t0 = performance.now()
    yield* Effect.forEach(
      Array.from({ length: config.sessions }, (_, s) => s),
      (s) => Effect.forEach(Array.from({ length: config.turns }, (_, i) => i), (i) => turn(s, i), { discard: true }),
      { concurrency: config.sessions, discard: true }
    ).pipe(Effect.orDie)
    const turnsMs = performance.now() - t0
    const pid = appServerPid()
    const mem = pid !== undefined ? memoryKb(pid) : { rss: 0, hwm: 0 }
    const sorted = [...turnTimes].sort((a, b) => a - b)
    const result: HarnessReport = {
      turnsMs,
      maxWaitMs: Math.max(...waits),
      maxInFlight,
      turnMsMedian: sorted[Math.floor(sorted.length / 2)] ?? 0,
      appServerRssKb: mem.rss,
      appServerHwmKb: mem.hwm,
      harnessRssKb: memoryKb("self").rss
    }
    return result
  }).pipe(Effect.onExit((exit) => Scope.close(scope, exit)))
  process.stdout.write(JSON.stringify(report) + "\n")
})

NodeRuntime.runMain(program)
