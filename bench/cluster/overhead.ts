// Issue 33, item 1: what a turn through one runner adds over a plain serve, side by side. Both serves run at once (the
// plain one on its file store, the cluster one on PostgreSQL), driven from this process with ControlClient on one
// WebSocket each, and their turns are interleaved one by one (the order alternating), so load on the machine falls on
// both alike: quiet, then again with two busy loops (`yes >/dev/null`) running. A turn is StartTurn to its terminal
// event, one at a time over a few warm sessions. The cluster database's statements over its turns, background (the idle
// rate) subtracted, give the statements per turn, each by its text.
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import { performance } from "node:perf_hooks"
import * as ControlClient from "../../src/control/ControlClient.js"
import { stopServe } from "../figures/connect.js"
import * as Ctx from "../figures/context.js"
import { type StatementDelta, statementDelta, statementSnap, totalCalls } from "./dbstats.js"
import { percentile, turnOnce } from "./load.js"
import { freePort, type Postgres } from "./postgres.js"
import { sleep, spawnServe } from "./serves.js"

export interface OverheadOptions {
  /** turns per series and phase */
  readonly turns: number
  readonly sessions: number
}

export interface Series {
  readonly p50: number
  readonly p99: number
  readonly ok: number
}

export interface OverheadPhase {
  readonly label: string
  readonly plain: Series
  readonly cluster: Series
  /** statements per cluster turn, background subtracted, by statement */
  readonly statements: ReadonlyArray<StatementDelta>
  /** every statement over the phase less the idle window's rate, per turn: the turn's own plus what the background
   * did differently from the idle window (its periodic statements land a few more or fewer times) */
  readonly perTurn: number
  /** the turn's own: the statements that ran at least once every two turns after their own idle rate is subtracted */
  readonly ownPerTurn: number
}

const series = (ms: ReadonlyArray<number>, ok: number): Series => ({ p50: percentile(ms, 50), p99: percentile(ms, 99), ok })

/** two busy loops (`yes >/dev/null`), killed by their own pids when the scope closes */
const busyLoops = Effect.acquireRelease(
  Effect.sync(() => [0, 1].map(() => spawn("yes", [], { stdio: "ignore" }))),
  (children: ReadonlyArray<ChildProcess>) => Effect.sync(() => children.forEach((c) => c.kill("SIGKILL")))
)

export const measureOverhead = (ctx: Ctx.Context, pg: Postgres, o: OverheadOptions) =>
  Effect.gen(function* () {
    const promise = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => (e instanceof Error ? e : new Error(String(e))) })
    const db = "overhead"
    const url = yield* promise(() => pg.createDatabase(db))
    const port = yield* promise(() => freePort())
    const plain = yield* promise(() => spawnServe(ctx, []))
    yield* Effect.addFinalizer(() => Effect.promise(() => stopServe(plain).catch(() => void plain.child.kill("SIGKILL"))))
    const cluster = yield* promise(() => spawnServe(ctx, ["--cluster", url, "--runner-listen", `127.0.0.1:${port}`], { PGPASSWORD: pg.password }))
    yield* Effect.addFinalizer(() => Effect.promise(() => stopServe(cluster).catch(() => void cluster.child.kill("SIGKILL"))))
    const clients = {
      plain: yield* ControlClient.make({ url: plain.url, token: plain.token }),
      cluster: yield* ControlClient.make({ url: cluster.url, token: cluster.token })
    }
    const sessions = Array.from({ length: o.sessions }, () => crypto.randomUUID())
    // warm: each session's thread and (in the cluster) its entity, hold and working set
    for (let i = 0; i < 2; i++) {
      for (const s of sessions) for (const side of ["plain", "cluster"] as const) yield* turnOnce(clients[side], s, `warm ${i} ${s}`, Ctx.REPLY)
    }
    yield* promise(() => sleep(3_000))
    const idle0 = yield* promise(() => statementSnap(pg, db))
    yield* promise(() => sleep(5_000))
    const idle1 = yield* promise(() => statementSnap(pg, db))
    const idleRate = totalCalls(statementDelta(idle0, idle1, (idle1.at - idle0.at) / 1000))
    const background = new Map(statementDelta(idle0, idle1, (idle1.at - idle0.at) / 1000).map((d) => [d.query, d.calls]))

    const measure = (label: string) =>
      Effect.gen(function* () {
        const ms = { plain: [] as Array<number>, cluster: [] as Array<number> }
        const ok = { plain: 0, cluster: 0 }
        const s0 = yield* promise(() => statementSnap(pg, db))
        const t0 = performance.now()
        for (let i = 0; i < o.turns; i++) {
          for (const side of i % 2 === 0 ? (["plain", "cluster"] as const) : (["cluster", "plain"] as const)) {
            const t = yield* turnOnce(clients[side], sessions[i % sessions.length]!, `${label} ${i} ${crypto.randomUUID()}`, Ctx.REPLY)
            ms[side].push(t.ms)
            if (t.ok) ok[side]++
          }
        }
        const seconds = (performance.now() - t0) / 1000
        const s1 = yield* promise(() => statementSnap(pg, db))
        const statements = statementDelta(s0, s1, 1)
          .map((d) => ({ ...d, calls: (d.calls - (background.get(d.query) ?? 0) * seconds) / o.turns, rows: d.rows / o.turns }))
          .filter((d) => d.calls >= 0.05)
        const own = statements.filter((d) => d.calls >= 0.5).reduce((sum, d) => sum + d.calls, 0)
        return {
          label,
          plain: series(ms.plain, ok.plain),
          cluster: series(ms.cluster, ok.cluster),
          statements,
          perTurn: (totalCalls(statementDelta(s0, s1, 1)) - idleRate * seconds) / o.turns,
          ownPerTurn: own
        } satisfies OverheadPhase
      })

    const quiet = yield* measure("quiet")
    const loaded = yield* Effect.scoped(Effect.zipRight(busyLoops, measure("two busy loops")))
    return [quiet, loaded] as const
  })
