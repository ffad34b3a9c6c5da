// Issue 33, item 3: the cluster at scale, measured: RUNNERS runner processes (20) whose sessions run on the in-memory
// MockAppServer (bench/cluster/mock-runner.ts: the cluster layer is what is measured, not Codex), SESSIONS sessions (400)
// driven from this process as a client-only cluster member (ClusterClient, as a serve's control API routes a turn), one
// PostgreSQL. Figures: how long the runners take to start and to share the 300 shards; connections by runner; the
// statements and PostgreSQL CPU of the idle cluster; a turn's latency through the cluster, one at a time and many at
// once, against the same mock turn in this process without a cluster (the per-turn overhead), statements per turn and
// per second; rebalance when a runner joins, leaves (SIGTERM) and dies (SIGKILL); the runners' memory.
import { Effect, Layer, Stream } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { performance } from "node:perf_hooks"
import * as TestLayer from "../../layers/internal/Test.js"
import * as ClusterClient from "../../src/cluster/ClusterClient.js"
import * as ClusterRunner from "../../src/cluster/ClusterRunner.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import type * as Ctx from "../figures/context.js"
import { cpuWithChildrenOfPid, descendants, memoryKb } from "../figures/proc.js"
import { connections, SHARDS, statementDelta, statementSnap, totalCalls, waitShards } from "./dbstats.js"
import { percentile } from "./load.js"
import { freePort, type Postgres } from "./postgres.js"
import { sleep } from "./serves.js"

export interface ScaleOptions {
  readonly runners: number
  readonly sessions: number
  readonly turns: number
  readonly concurrency: number
  /** each runner's pool bound (`--database-connections`); default the runner's own (12) */
  readonly connections?: number | undefined
}

export const defaultScale: ScaleOptions = { runners: 20, sessions: 400, turns: 2, concurrency: 16 }

const mockRunnerModule = path.join(path.dirname(fileURLToPath(import.meta.url)), "mock-runner.js")

/**
 * The mock runner as one script (esbuild, as scripts/bundle.mjs makes the CLI's): 20 processes loading the compiled
 * module graph file by file took 70-80 s each to join on the loaded machine, 3-4 times what loading one script takes,
 * and a runner started by `serve --cluster` loads the bundle too. The compiled module when bundling fails.
 */
export const bundleMockRunner = async (dir: string): Promise<string> => {
  const out = path.join(dir, "mock-runner.mjs")
  try {
    const esbuild = await import("esbuild")
    await esbuild.build({
      entryPoints: [mockRunnerModule],
      outfile: out,
      bundle: true,
      platform: "node",
      target: "node20",
      format: "esm",
      logLevel: "error",
      // CommonJS dependencies call require: give the ES bundle one
      banner: { js: "import { createRequire as bundleRequire } from \"node:module\"; const require = bundleRequire(import.meta.url);" }
    })
    // its service process would outlive the bench
    await esbuild.stop()
    return out
  } catch (error) {
    process.stderr.write(`cluster bench: scale: bundling the mock runner failed (${String(error).split("\n")[0]}); running the compiled module\n`)
    return mockRunnerModule
  }
}

export interface Runner {
  readonly address: string
  readonly child: ChildProcess
  readonly joined: Promise<number>
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly stderr: () => string
}

export const startRunner = (
  ctx: Ctx.Context,
  pg: Postgres,
  url: string,
  address: string,
  mockRunner: string,
  extra: Readonly<Record<string, number>> = {}
): Runner => {
  const stateDir = path.join(ctx.root, `mock-runner-${address.replace(/[:.]/g, "-")}`)
  const t0 = performance.now()
  const child = spawn(process.execPath, [mockRunner, JSON.stringify({ databaseUrl: url, listen: address, stateDir, ...extra })], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, ...ctx.env, PGPASSWORD: pg.password }
  })
  let stderr = ""
  child.stderr!.setEncoding("utf8")
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once("exit", (code, signal) => done({ code, signal })))
  const joined = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`mock runner ${address}: not joined within 300 s: ${stderr.slice(-400)}`)), 300_000)
    child.stderr!.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-8000)
      if (stderr.includes(": joined in ")) {
        clearTimeout(timer)
        resolve(performance.now() - t0)
      }
    })
    void exited.then(({ code, signal }) => {
      clearTimeout(timer)
      if (stderr.includes(": joined in ")) return
      const why = stderr.split("\n").filter((l) => l.trim() !== "" && !/^\s+at /.test(l)).slice(-6).join(" / ")
      process.stderr.write(`cluster bench: scale: mock runner ${address} exited (${signal ?? code}) before it joined: ${why}\n`)
      reject(new Error(`mock runner ${address} exited (${signal ?? code}) before it joined: ${why}`))
    })
  })
  joined.catch(() => {})
  return { address, child, joined, exited, stderr: () => stderr }
}

const pgCpu = (pg: Postgres) => {
  const pm = pg.postmasterPid()
  return pm === undefined ? 0 : [pm, ...descendants(pm)].reduce((a, pid) => a + cpuWithChildrenOfPid(pid), 0)
}

const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : "-")

/** one turn through the cluster: startTurn to its terminal event; ok when it completed */
export const clusterTurn = (client: ClusterClient.ClusterClientService, sessionId: string, created: boolean) =>
  Effect.gen(function* () {
    const t0 = performance.now()
    let ms: number | undefined
    let ok = false
    yield* client.startTurn({ sessionId, prompt: `hello ${crypto.randomUUID()}`, created }).pipe(
      Stream.runForEach((e) =>
        Effect.sync(() => {
          if (ms === undefined && (e.type === "turn.completed" || e.type === "turn.failed")) {
            ms = performance.now() - t0
            ok = e.type === "turn.completed"
          }
        })
      ),
      Effect.timeout("120 seconds"),
      Effect.catchAllCause(() => Effect.void)
    )
    return { ms: ms ?? NaN, ok }
  })

/**
 * A database of its own for a part's mock runners (its bare URL, and with the password for this process's client), and
 * the list its runners go in: SIGTERMed when the scope closes (a drain), SIGKILLed after 30 s if still there.
 */
export const mockCluster = (pg: Postgres, db: string) =>
  Effect.gen(function* () {
    const bare = yield* Effect.tryPromise({ try: () => pg.createDatabase(db), catch: (e) => (e instanceof Error ? e : new Error(String(e))) })
    const full = new URL(bare)
    full.password = pg.password
    const runners: Array<Runner> = []
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        for (const r of runners) r.child.kill("SIGTERM")
        await Promise.race([Promise.all(runners.map((r) => r.exited)), sleep(30_000)])
        for (const r of runners) r.child.kill("SIGKILL")
      })
    )
    return { bare, full, runners }
  })

export const measureScale = (ctx: Ctx.Context, pg: Postgres, o: ScaleOptions) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const note = (line: string) => {
      lines.push(line)
      process.stderr.write(`cluster bench: scale: ${line}\n`)
    }
    const promise = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => (e instanceof Error ? e : new Error(String(e))) })
    const db = `scale_n${o.runners}`
    const { bare, full, runners } = yield* mockCluster(pg, db)
    const addressOf = async () => `127.0.0.1:${await freePort()}`
    const extra = o.connections === undefined ? {} : { databaseConnections: o.connections }
    const script = yield* promise(() => bundleMockRunner(ctx.root))

    // ---- start: runner 1 creates the tables, then the others together
    const first = startRunner(ctx, pg, bare, yield* promise(addressOf), script, extra)
    runners.push(first)
    const firstMs = yield* promise(() => first.joined)
    yield* promise(() => waitShards(pg, db, [first.address], { all: true }))
    const t0 = performance.now()
    // in waves of 5: of 19 started at once on the loaded 2-core machine, one exited before it joined
    const joinedMs: Array<number> = []
    for (let k = 1; k < o.runners; k += 5) {
      const wave: Array<Runner> = []
      for (let j = k; j < Math.min(o.runners, k + 5); j++) wave.push(startRunner(ctx, pg, bare, yield* promise(addressOf), script, extra))
      runners.push(...wave)
      joinedMs.push(...(yield* promise(() => Promise.all(wave.map((r) => r.joined)))))
    }
    const allJoined = performance.now() - t0
    const settled = yield* promise(() => waitShards(pg, db, runners.map((r) => r.address), { all: true, timeoutMs: 180_000 }))
    if (o.connections !== undefined) note(`each runner's database pool bound: ${o.connections} connections (--database-connections)`)
    note(`${o.runners} runners: runner 1 joined ${fmt(firstMs / 1000, 1)} s after spawn; runners 2-${o.runners} spawned in waves of 5 joined ` +
      `${fmt(Math.min(...joinedMs) / 1000, 1)}-${fmt(Math.max(...joinedMs) / 1000, 1)} s after spawn (all ${fmt(allJoined / 1000, 1)} s), ` +
      `the ${SHARDS} shards settled over all ${o.runners} ${fmt(settled.ms / 1000, 1)} s after the last joined (${settled.split} shards each)`)

    // ---- idle: statements and PostgreSQL CPU of the cluster doing nothing
    yield* promise(() => sleep(5_000))
    const idle0 = yield* promise(() => statementSnap(pg, db))
    const cpu0 = pgCpu(pg)
    const runnerCpu0 = runners.reduce((a, r) => a + cpuWithChildrenOfPid(r.child.pid!), 0)
    yield* promise(() => sleep(10_000))
    const idle1 = yield* promise(() => statementSnap(pg, db))
    const idleS = (idle1.at - idle0.at) / 1000
    const idle = statementDelta(idle0, idle1, idleS)
    const idleRate = totalCalls(idle)
    const pgIdle = (pgCpu(pg) - cpu0) / idleS / 10
    const runnersIdle = (runners.reduce((a, r) => a + cpuWithChildrenOfPid(r.child.pid!), 0) - runnerCpu0) / idleS / 10
    const idleConns = yield* promise(() => connections(pg, db))
    const conns = (m: ReadonlyMap<string, number>) => {
      const runnerConns = [...m.entries()].filter(([k]) => k.startsWith("codex-harness runner ") || k.startsWith("codex-harness:"))
      const total = [...m.values()].reduce((a, n) => a + n, 0)
      return { total, runners: runnerConns.reduce((a, [, n]) => a + n, 0) }
    }
    note(`idle (${fmt(idleS, 0)} s): ${fmt(idleRate, 1)} statements/s (${fmt(idleRate / o.runners, 2)} per runner), PostgreSQL ${fmt(pgIdle, 1)}% of a core, ` +
      `the runners ${fmt(runnersIdle, 1)}% in all; ${conns(idleConns).total} connections open (${fmt(conns(idleConns).runners / o.runners, 1)} per runner); top: ` +
      idle.slice(0, 5).map((d) => `${fmt(d.calls, 2)}/s ${d.query.slice(0, 70)}`).join("; "))

    // ---- the client (this process) and the baseline: the same mock turn in this process, no cluster
    const client = yield* Effect.provide(ClusterClient.ClusterClient, yield* Layer.build(ClusterRunner.clientLayer({ databaseUrl: full.toString() })))
    const local = yield* Layer.build(TestLayer.layer())
    const harness = yield* Effect.provide(CodexHarness, local)
    const localMs: Array<number> = []
    for (let i = 0; i < 60; i++) {
      const t = performance.now()
      yield* harness.runTurn({ sessionId: `local-${i % 4}`, prompt: `hello ${i}` })
      if (i >= 10) localMs.push(performance.now() - t)
    }

    // ---- warm-up: every session's first turn (its entity starts, its thread is made)
    const sessions = Array.from({ length: o.sessions }, () => crypto.randomUUID())
    const tw = performance.now()
    const warm = yield* Effect.forEach(sessions, (s) => clusterTurn(client, s, true), { concurrency: o.concurrency })
    note(`warm-up: ${warm.filter((t) => t.ok).length}/${o.sessions} first turns (entity start, thread start) in ${fmt((performance.now() - tw) / 1000, 1)} s, ` +
      `p50 ${fmt(percentile(warm.map((t) => t.ms), 50))} ms, p99 ${fmt(percentile(warm.map((t) => t.ms), 99))} ms`)

    // ---- one at a time: the per-turn overhead
    const seqTurns = 80
    const s0 = yield* promise(() => statementSnap(pg, db))
    const tSeq = performance.now()
    const seq: Array<{ ms: number; ok: boolean }> = []
    for (let i = 0; i < seqTurns; i++) seq.push(yield* clusterTurn(client, sessions[(i * 7) % o.sessions]!, false))
    const s1 = yield* promise(() => statementSnap(pg, db))
    const seqS = (performance.now() - tSeq) / 1000
    const perTurn = (totalCalls(statementDelta(s0, s1, 1)) - idleRate * seqS) / seqTurns
    const p50 = percentile(seq.map((t) => t.ms), 50)
    const local50 = percentile(localMs, 50)
    note(`one turn at a time (${seqTurns}, ${seq.filter((t) => t.ok).length} ok): p50 ${fmt(p50, 1)} ms, p99 ${fmt(percentile(seq.map((t) => t.ms), 99), 1)} ms; ` +
      `the same mock turn in this process without a cluster: p50 ${fmt(local50, 1)} ms: the cluster adds ${fmt(p50 - local50, 1)} ms per turn; ` +
      `${fmt(perTurn, 1)} statements per turn (idle rate subtracted)`)

    // ---- many at once: throughput, latency, statements per second, connections at their most
    let peak = idleConns
    let sampling = true
    const sampler = Effect.promise(async () => {
      while (sampling) {
        const c = await connections(pg, db)
        if (conns(c).total > conns(peak).total) peak = c
        await sleep(500)
      }
    })
    const sampled = yield* Effect.fork(sampler)
    const jobs = Array.from({ length: o.turns }, () => sessions).flat()
    const b0 = yield* promise(() => statementSnap(pg, db))
    const pgB0 = pgCpu(pg)
    const tb = performance.now()
    const busy = yield* Effect.forEach(jobs, (s) => clusterTurn(client, s, false), { concurrency: o.concurrency })
    const busyS = (performance.now() - tb) / 1000
    const b1 = yield* promise(() => statementSnap(pg, db))
    sampling = false
    yield* Effect.fromFiber(sampled)
    const ok = busy.filter((t) => t.ok)
    const busyCalls = totalCalls(statementDelta(b0, b1, 1))
    note(`${jobs.length} turns, ${o.concurrency} at once: ${ok.length} ok, ${fmt(ok.length / busyS, 1)} turns/s, p50 ${fmt(percentile(ok.map((t) => t.ms), 50))} ms, ` +
      `p99 ${fmt(percentile(ok.map((t) => t.ms), 99))} ms; ${fmt(busyCalls / busyS, 0)} statements/s (${fmt((busyCalls - idleRate * busyS) / jobs.length, 1)} per turn), ` +
      `PostgreSQL ${fmt((pgCpu(pg) - pgB0) / busyS / 10, 0)}% of a core; most connections seen: ${conns(peak).total} (${fmt(conns(peak).runners / o.runners, 1)} per runner)`)

    // ---- a runner joins, one leaves (SIGTERM), one dies (SIGKILL)
    const joiner = startRunner(ctx, pg, bare, yield* promise(addressOf), script, extra)
    runners.push(joiner)
    yield* promise(() => joiner.joined)
    const join = yield* promise(() => waitShards(pg, db, runners.map((r) => r.address), { all: true }))
    note(`runner ${runners.length} joins: shards settled over ${runners.length} ${fmt(join.ms / 1000, 2)} s after it joined (${join.split} each)`)
    const tLeave = performance.now()
    joiner.child.kill("SIGTERM")
    runners.splice(runners.indexOf(joiner), 1)
    const left = yield* promise(() => waitShards(pg, db, runners.map((r) => r.address), { all: false }))
    const leftExit = yield* promise(() => joiner.exited)
    note(`it leaves (SIGTERM): the other ${runners.length} held all ${SHARDS} shards ${fmt(left.ms / 1000, 2)} s later; it exited (${leftExit.signal ?? leftExit.code}) ` +
      `after ${fmt((performance.now() - tLeave) / 1000, 1)} s`)
    const victim = runners[runners.length - 1]!
    const owned = (yield* promise(() => pg.psql(`SELECT coalesce(string_agg(session_id, ','), '') FROM harness_session_owners WHERE runner = '${victim.address}'`, db)))
      .trim().split(",").filter((s) => s !== "")
    const tKill = performance.now()
    victim.child.kill("SIGKILL")
    runners.splice(runners.indexOf(victim), 1)
    const failover = yield* promise(() => waitShards(pg, db, runners.map((r) => r.address), { all: false }))
    const moved = yield* Effect.forEach(owned, (s) => clusterTurn(client, s, false), { concurrency: o.concurrency })
    note(`a runner dies (SIGKILL): the other ${runners.length} held all ${SHARDS} shards ${fmt(failover.ms / 1000, 2)} s later; its ${owned.length} sessions ` +
      `answered their next turn (${moved.filter((t) => t.ok).length} ok) by ${fmt((performance.now() - tKill) / 1000, 1)} s after the kill`)

    const rss = runners.map((r) => memoryKb(r.child.pid!)?.rss ?? 0)
    note(`memory: runner RSS ${fmt(Math.min(...rss) / 1024)}-${fmt(Math.max(...rss) / 1024)} MB (${fmt(rss.reduce((a, n) => a + n, 0) / rss.length / 1024)} MB on average ` +
      `with ${fmt(o.sessions / (o.runners - 1))} sessions each)`)
    return lines
  })
