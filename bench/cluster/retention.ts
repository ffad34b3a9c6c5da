// Issue 33, item 1: the tables a cluster's turns write stay flat under retention, shown with every turn run through the
// cluster. RUNNERS runner processes of bench/cluster/mock-runner.ts (the cluster runner layer of `serve --cluster`: the
// ledger, the PostgreSQL session store, sharding, the retention job; over MockAppServer instead of Codex, as in the
// scale part, so 10,000 turns take minutes instead of hours) keep what their turns write for RETENTION seconds (the job
// runs every EVERY seconds, on one runner at a time), as `serve --retention` does for a day. This process drives FIRST
// turns (1,000) over SESSIONS sessions, CONCURRENCY at once, as a client-only cluster member (ClusterClient, the way a
// serve routes a turn) at a steady RATE (25 turns/s); then reads the tables' rows and sizes and times SAMPLE turns one
// at a time; then runs on to TOTAL turns (10,000) and does the same. Flat: the same rows and heap after 10,000 turns as
// after 1,000 (the tables hold one retention period's turns either way, at the same rate), and the same per-turn time.
// The retention period is short here only so that 10,000 turns outlast it many times over on one machine; a day is the
// same job with a longer cutoff.
import { Effect, Layer } from "effect"
import * as crypto from "node:crypto"
import { performance } from "node:perf_hooks"
import * as ClusterClient from "../../src/cluster/ClusterClient.js"
import * as ClusterRunner from "../../src/cluster/ClusterRunner.js"
import type * as Ctx from "../figures/context.js"
import { type TableSize, tableSizes, waitShards } from "./dbstats.js"
import { percentile } from "./load.js"
import { freePort, type Postgres } from "./postgres.js"
import { bundleMockRunner, clusterTurn, mockCluster, startRunner } from "./scale.js"

export interface RetentionOptions {
  readonly first: number
  readonly total: number
  readonly sample: number
  readonly sessions: number
  readonly concurrency: number
  /** turns started per second, at most */
  readonly rate: number
  readonly runners: number
  /** what the runners keep, and how often their job runs, seconds */
  readonly retentionS: number
  readonly everyS: number
}

export const defaultRetention: RetentionOptions = {
  first: 1_000,
  total: 10_000,
  sample: 100,
  sessions: 40,
  concurrency: 16,
  rate: 25,
  runners: 2,
  retentionS: 10,
  everyS: 2
}

export const tables = ["harness_turn_messages", "harness_records", "harness_sessions", "cluster_messages", "cluster_replies"] as const

export interface RetentionPoint {
  readonly turns: number
  readonly sizes: Record<string, TableSize>
  /** rows deleted from each table so far (pg_stat_user_tables.n_tup_del: the retention job's work) */
  readonly deleted: Record<string, number>
  /** turns per second of the concurrent phase that led here */
  readonly rate: number
  readonly p50: number
  readonly p99: number
  readonly ok: number
  readonly failed: number
}

export const measureRetention = (ctx: Ctx.Context, pg: Postgres, o: RetentionOptions) =>
  Effect.gen(function* () {
    const promise = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => (e instanceof Error ? e : new Error(String(e))) })
    const db = "retention"
    const { bare, full, runners } = yield* mockCluster(pg, db)
    const script = yield* promise(() => bundleMockRunner(ctx.root))
    const extra = { retentionMs: o.retentionS * 1000, retentionEveryMs: o.everyS * 1000 }
    // runner 1 makes the tables; the others join after it
    for (let i = 0; i < o.runners; i++) {
      const runner = startRunner(ctx, pg, bare, `127.0.0.1:${yield* promise(() => freePort())}`, script, extra)
      runners.push(runner)
      yield* promise(() => runner.joined)
    }
    yield* promise(() => waitShards(pg, db, runners.map((r) => r.address), { all: true, timeoutMs: 120_000 }))
    const client = yield* Effect.provide(ClusterClient.ClusterClient, yield* Layer.build(ClusterRunner.clientLayer({ databaseUrl: full.toString() })))

    const sessions = Array.from({ length: o.sessions }, () => crypto.randomUUID())
    const started = new Set<string>()
    let run = 0
    let failed = 0
    // the pace: the k-th paced turn starts no earlier than k / rate seconds after the first
    let paced = 0
    let paceStart: number | undefined
    const onPace = Effect.suspend(() => {
      paceStart ??= performance.now()
      const due = paceStart + (paced++ / o.rate) * 1000
      const wait = due - performance.now()
      return wait > 0 ? Effect.sleep(wait) : Effect.void
    })
    const turn = (s: string) =>
      Effect.suspend(() => {
        const created = !started.has(s)
        started.add(s)
        return clusterTurn(client, s, created)
      }).pipe(Effect.tap((t) => Effect.sync(() => void (t.ok ? run++ : failed++))))
    /** turns over the sessions, `concurrency` at once (one session at a time each), until `until` turns have run */
    const runTo = (until: number) =>
      Effect.gen(function* () {
        const jobs = Array.from({ length: Math.max(0, until - run - failed) }, (_, i) => sessions[i % sessions.length]!)
        const t0 = performance.now()
        const gates = new Map(sessions.map((s) => [s, Effect.unsafeMakeSemaphore(1)]))
        yield* Effect.forEach(jobs, (s) => Effect.zipRight(onPace, gates.get(s)!.withPermits(1)(turn(s))), { concurrency: o.concurrency, discard: true })
        return jobs.length / ((performance.now() - t0) / 1000)
      })
    const point = (rate: number) =>
      Effect.gen(function* () {
        const turns = run
        const sizes = yield* promise(() => tableSizes(pg, db, tables))
        const deleted = JSON.parse(yield* promise(() => pg.psql(`SELECT coalesce(json_object_agg(relname, n_tup_del), '{}') FROM pg_stat_user_tables`, db))) as Record<string, number>
        // the pace starts over after the sample: the next phase runs at the rate again, not to catch up
        const sample: Array<number> = []
        for (let i = 0; i < o.sample; i++) {
          const t = yield* turn(sessions[(i * 7) % sessions.length]!)
          if (t.ok) sample.push(t.ms)
        }
        paced = 0
        paceStart = undefined
        return { turns, sizes, deleted, rate, p50: percentile(sample, 50), p99: percentile(sample, 99), ok: sample.length, failed } satisfies RetentionPoint
      })

    const tAll = performance.now()
    const first = yield* point(yield* runTo(o.first))
    const second = yield* point(yield* runTo(o.total))
    return { points: [first, second] as const, seconds: (performance.now() - tAll) / 1000 }
  })
