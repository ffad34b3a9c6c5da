// Issue 19, item 6: what a turn costs through the cluster, on this machine, against the single-process harness. Against
// an instant ScriptedModel served from this process; every serve is the compiled CLI (bin/codex-harness.js) in a
// process of its own, HOME an empty directory, driven from here with ControlClient on one WebSocket (as
// bench/figures/connect.ts does).
//
//   single     one plain `serve` (no cluster, the file store)
//   cluster N  N runners, each `serve --cluster postgres://harness@127.0.0.1:PORT/cluster_nN --runner-listen ...` in a
//              process of its own (the password in $PGPASSWORD), on one throwaway PostgreSQL (bench/cluster/postgres.ts,
//              a fresh database per N); all the load goes through runner 1's serve, so the turns of sessions whose
//              shard another runner holds are routed there (the share is read from harness_session_owners)
//
// Each setup: its serve(s) started (runner 1 first, the others together, then until the 300 shards are held by all N
// and stay put), WARMUP turns per session (thread start, entity start; not measured), an idle window (the background:
// CPU of every process, and for a cluster the database work its runners do with no turns), then for each concurrency a
// measured phase of SESSIONS x TURNS turns. A turn is StartTurn to its terminal event. Per phase: throughput (turns /
// wall time), p50 and p99 latency, and, background subtracted, per turn: statements (pg_stat_statements calls), the
// deltas of pg_stat_database (xact_commit, tup_inserted, tup_updated, tup_fetched, tup_returned) and CPU ms by process
// (the front serve, the other runners, the app-servers below them, PostgreSQL, this process: client and model).
// Database stats are read over the superuser's socket from the `postgres` database (never the measured one):
// pg_stat_statements (the harness role's statements only) around each phase, pg_stat_database once over all measured
// turns, 11 s after the warm-up and after the last phase (PostgreSQL 15 and later may hold a backend's counters up to 10 s before
// it reports them; what is left of that lag shows as about +-15% in the tup_* columns, never in the statement counts).
// Notes give, per phase, the turns on the front runner and the routed ones apart (p50, p90, when session.selected and
// turn.started arrived, the slowest turn), the connections each process had open, rows and bytes per turn by table, the
// background statements, and the warnings the serves logged. With 2 runners, runner 2 then leaves with SIGTERM
// (graceful handoff); with 3, runner 3 is killed with SIGKILL (failover): the time until the others hold all 300 shards.
//
// Every process this bench starts carries FIGURES_MARK (bench/figures/proc.ts): after each setup nothing but PostgreSQL
// may be left 3 s later, and after PostgreSQL stops nothing at all; a leftover is killed and named, and the bench exits
// 1, as it does when a setup fails. Temp dirs (state dirs, the PostgreSQL data dir) are removed.
//
// Issue 33's parts follow the setups, in the same run (bench/cluster/issue33.ts): the routing overhead against a plain
// serve side by side (quiet and with two busy loops), statements per turn by name, table sizes and per-turn time after
// 1,000 and 10,000 turns (retention), and 20 runners with 400 sessions (scale). `--parts` picks some.
//
// Build and run: npm run build && node dist/bench/cluster.js [--sessions 24] [--turns 5] [--concurrency 4,8]
//                [--runners 1,2,3] [--warmup 1] [--no-single] [--parts setups,overhead,retention,scale] [--quick]
//                [--overhead-turns 80] [--retention-turns 1000,10000] [--scale 20,400] [--scale-turns 2] [--scale-connections N]
import { NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import { performance } from "node:perf_hooks"
import * as ControlClient from "../src/control/ControlClient.js"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import { freePort, type Postgres, startPostgres } from "./cluster/postgres.js"
import { SHARDS, shardHolders } from "./cluster/dbstats.js"
import * as Issue33 from "./cluster/issue33.js"
import { type Served, spawnServe } from "./cluster/serves.js"
import { percentile, phase, type PhaseResult, type TurnResult } from "./cluster/load.js"
import { stopServe } from "./figures/connect.js"
import * as Ctx from "./figures/context.js"
import { cmdline, cpuWithChildrenOfPid, descendants, marked, settle } from "./figures/proc.js"

const FLUSH_MS = 11_000
const IDLE_MS = 5_000

const usage = (message: string): never => {
  console.error(`cluster bench: ${message}\nusage: node dist/bench/cluster.js [--sessions N] [--turns N] [--concurrency A,B] [--runners 1,2,3] [--warmup N] [--no-single] [--parts ${Issue33.parts.join(",")}] [--quick] [--overhead-turns N] [--retention-turns FIRST,TOTAL] [--scale RUNNERS,SESSIONS] [--scale-turns N] [--scale-connections N]`)
  process.exit(2)
}

const options = () => {
  const argv = process.argv.slice(2)
  const o = { sessions: 24, turns: 5, warmup: 1, concurrency: [4, 8], runners: [1, 2, 3], single: true, parts: new Set<string>(["setups", ...Issue33.parts]), quick: false, sizes: {} as Issue33.Sizes }
  const ints = (raw: string, flag: string) => {
    const xs = raw.split(",").map(Number)
    if (xs.length === 0 || xs.some((x) => !Number.isInteger(x) || x < 1)) usage(`${flag} wants whole numbers of at least 1, got ${JSON.stringify(raw)}`)
    return xs
  }
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split("=", 2) as [string, string | undefined]
    const value = () => inline ?? argv[++i] ?? usage(`${flag} wants a value`)
    if (flag === "--sessions") o.sessions = ints(value(), flag)[0]!
    else if (flag === "--turns") o.turns = ints(value(), flag)[0]!
    else if (flag === "--warmup") o.warmup = ints(value(), flag)[0]!
    else if (flag === "--concurrency") o.concurrency = ints(value(), flag)
    else if (flag === "--runners") o.runners = ints(value(), flag)
    else if (flag === "--no-single") o.single = false
    else if (flag === "--parts") o.parts = Issue33.parseParts(value(), usage)
    else if (flag === "--quick") o.quick = true
    else if (flag === "--overhead-turns") o.sizes = { ...o.sizes, overheadTurns: ints(value(), flag)[0]! }
    else if (flag === "--retention-turns") {
      const [real, total] = ints(value(), flag)
      if (total === undefined || total <= real!) usage(`--retention-turns wants FIRST,TOTAL with TOTAL above FIRST`)
      o.sizes = { ...o.sizes, retention: [real!, total!] }
    } else if (flag === "--scale") {
      const [runners, sessions] = ints(value(), flag)
      if (sessions === undefined || runners! < 2) usage(`--scale wants RUNNERS,SESSIONS with at least 2 runners`)
      o.sizes = { ...o.sizes, scale: [runners!, sessions!] }
    } else if (flag === "--scale-turns") o.sizes = { ...o.sizes, scaleTurns: ints(value(), flag)[0]! }
    else if (flag === "--scale-connections") o.sizes = { ...o.sizes, scaleConnections: ints(value(), flag)[0]! }
    else usage(`unknown option ${argv[i]}`)
  }
  return o
}
type Options = ReturnType<typeof options>

// ---- processes


const loadavg = () => fs.readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")
const cpuPressure = () => {
  try {
    const m = /some avg10=([\d.]+) avg60=([\d.]+) avg300=([\d.]+)/.exec(fs.readFileSync("/proc/pressure/cpu", "utf8"))
    return m === null ? "?" : `avg60 ${m[2]}%, avg300 ${m[3]}%`
  } catch {
    return "?"
  }
}
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

// ---- snapshots

/** CPU ms by part, at one instant */
interface CpuSnap {
  readonly at: number
  readonly front: number
  readonly others: number
  readonly appServers: number
  readonly pg: number
  readonly bench: number
}
const cpuParts = ["front", "others", "appServers", "pg", "bench"] as const

const cpuSnap = (serves: ReadonlyArray<Served>, pg: Postgres | undefined): CpuSnap => {
  const [front, ...rest] = serves
  const below = (s: Served) => descendants(s.pid).reduce((a, pid) => a + cpuWithChildrenOfPid(pid), 0)
  const postmaster = pg?.postmasterPid()
  const usage = process.cpuUsage()
  return {
    at: performance.now(),
    front: front === undefined ? 0 : cpuWithChildrenOfPid(front.pid),
    others: rest.reduce((a, s) => a + cpuWithChildrenOfPid(s.pid), 0),
    appServers: serves.reduce((a, s) => a + below(s), 0),
    pg: postmaster === undefined ? 0 : [postmaster, ...descendants(postmaster)].reduce((a, pid) => a + cpuWithChildrenOfPid(pid), 0),
    bench: (usage.user + usage.system) / 1000
  }
}

/** pg_stat_database's counters of one database, at one instant */
interface DbStats {
  readonly at: number
  readonly db: Record<string, number>
}
const dbFields = ["xact_commit", "xact_rollback", "tup_inserted", "tup_updated", "tup_deleted", "tup_fetched", "tup_returned"] as const

const dbStats = async (pg: Postgres, db: string): Promise<DbStats> => {
  const at = performance.now()
  const row = await pg.psql(`SELECT json_build_object(${dbFields.map((f) => `'${f}', ${f}`).join(", ")}) FROM pg_stat_database WHERE datname = '${db}'`)
  return { at, db: JSON.parse(row) as Record<string, number> }
}

/** pg_stat_statements of the harness role in one database (updated as each statement ends), by statement */
interface StmtSnap {
  readonly at: number
  readonly statements: Map<string, { readonly calls: number; readonly rows: number; readonly query: string }>
}
const stmtSnap = async (pg: Postgres, db: string): Promise<StmtSnap> => {
  const at = performance.now()
  const out = pg.statements
    ? await pg.psql(`SELECT coalesce(json_agg(json_build_array(s.queryid::text, s.calls, s.rows,
        left(regexp_replace(s.query, '\\s+', ' ', 'g'), 150))), '[]') FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = '${db}' AND s.userid = (SELECT oid FROM pg_roles WHERE rolname = '${pg.user}')`)
    : "[]"
  const statements = new Map<string, { calls: number; rows: number; query: string }>()
  for (const [id, calls, rows, query] of JSON.parse(out) as Array<[string, number, number, string]>) {
    const seen = statements.get(id)
    statements.set(id, { calls: Number(calls) + (seen?.calls ?? 0), rows: Number(rows) + (seen?.rows ?? 0), query })
  }
  return { at, statements }
}

/** per second or per turn: (after - before - background rate x seconds) / n, by statement */
const statementDeltas = (
  before: StmtSnap,
  after: StmtSnap,
  background: ReadonlyMap<string, { readonly calls: number; readonly rows: number }>,
  n: number
) => {
  const dt = (after.at - before.at) / 1000
  const per: Array<{ id: string; query: string; calls: number; rows: number }> = []
  for (const [id, a] of after.statements) {
    const b = before.statements.get(id) ?? { calls: 0, rows: 0 }
    const bg = background.get(id) ?? { calls: 0, rows: 0 }
    per.push({ id, query: a.query, calls: (a.calls - b.calls - bg.calls * dt) / n, rows: (a.rows - b.rows - bg.rows * dt) / n })
  }
  return per
}


const holdersText = (h: ReadonlyMap<string, number>, order: ReadonlyArray<string>) =>
  order.map((a) => String(h.get(a) ?? 0)).join("/")

/**
 * until every shard is held by the runners `addresses` (each holding some when `all`), unchanged for 1.5 s (longer than
 * the refresh interval, 1 s); the ms until that state was first seen, and the split
 */
const waitShards = async (pg: Postgres, db: string, addresses: ReadonlyArray<string>, all: boolean, timeoutMs = 60_000) => {
  const t0 = performance.now()
  let since: number | undefined
  let last = ""
  while (performance.now() - t0 < timeoutMs) {
    const h = await shardHolders(pg, db)
    const total = [...h.values()].reduce((a, n) => a + n, 0)
    const ok = total === SHARDS && [...h.keys()].every((a) => addresses.includes(a)) && (!all || addresses.every((a) => (h.get(a) ?? 0) > 0))
    const text = holdersText(h, addresses)
    if (ok && text === last && since !== undefined) {
      if (performance.now() - since >= 1_500) return { ms: since - t0, split: text }
    } else if (ok) {
      if (text !== last) since = performance.now()
    } else since = undefined
    last = ok ? text : ""
    await sleep(100)
  }
  throw new Error(`the shards did not settle on ${addresses.join(", ")} within ${timeoutMs / 1000} s (last: ${JSON.stringify([...(await shardHolders(pg, db))])})`)
}

// ---- results

interface PhaseRow {
  readonly setup: string
  readonly concurrency: number
  readonly turns: number
  readonly failed: number
  readonly firstError?: string | undefined
  readonly throughput: number
  readonly p50: number
  readonly p99: number
  readonly mean: number
  /** share of the measured turns whose session another runner hosted; undefined for single */
  readonly routed?: number | undefined
  readonly statements?: number | undefined
  readonly statementRows?: number | undefined
  readonly topStatements?: ReadonlyArray<string> | undefined
  readonly cpu: Record<(typeof cpuParts)[number], number>
}

interface SetupResult {
  readonly label: string
  readonly runners: number
  readonly rows: ReadonlyArray<PhaseRow>
  readonly notes: ReadonlyArray<string>
  /** the cluster's database work with no turns, per second (all runners) */
  readonly background?: { readonly statements: number; readonly rows: number; readonly db: Record<string, number> } | undefined
  /** over all measured turns, background subtracted, per turn */
  readonly database?: {
    readonly turns: number
    readonly perTurn: Record<string, number>
    readonly statements: number
    readonly rows: number
    readonly bytes: number
    readonly windowS: number
  } | undefined
}

const perSecond = (before: number, after: number, ms: number) => ((after - before) * 1000) / ms

/**
 * One setup: `runners` = 0 is the plain serve. Everything it starts is stopped in its finalizers; the leftover check
 * runs after them (with PostgreSQL spared).
 */
const measureSetup = (ctx: Ctx.Context, o: Options, runners: number, pg: Postgres | undefined) =>
  Effect.scoped(Effect.gen(function* () {
    const label = runners === 0 ? "single serve" : `cluster, ${runners} runner${runners === 1 ? "" : "s"}`
    process.stderr.write(`cluster bench: ${label} ...`)
    const t0 = performance.now()
    const notes: Array<string> = []
    const serves: Array<Served> = []
    const addresses: Array<string> = []
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        await Promise.all(serves.map((s) => stopServe(s).catch(() => void s.child.kill("SIGKILL"))))
      })
    )
    const promise = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => (e instanceof Error ? e : new Error(String(e))) })

    // ---- start
    let db: string | undefined
    if (runners === 0) {
      serves.push(yield* promise(() => spawnServe(ctx, [])))
    } else {
      if (pg === undefined) return yield* Effect.fail(new Error("no PostgreSQL"))
      db = `cluster_n${runners}`
      const url = yield* promise(() => pg.createDatabase(db!))
      const ports = yield* promise(() => Promise.all(Array.from({ length: runners }, () => freePort())))
      addresses.push(...ports.map((p) => `127.0.0.1:${p}`))
      const runner = (k: number) => spawnServe(ctx, ["--cluster", url, "--runner-listen", addresses[k]!], { PGPASSWORD: pg.password })
      // runner 1 first (it creates the tables), the others together
      const first = yield* promise(() => runner(0))
      serves.push(first)
      const firstShards = yield* promise(() => waitShards(pg, db!, [addresses[0]!], true))
      const tJoin = performance.now()
      const rest = yield* promise(() => Promise.allSettled(Array.from({ length: runners - 1 }, (_, k) => runner(k + 1))))
      for (const r of rest) if (r.status === "fulfilled") serves.push(r.value)
      const refused = rest.find((r): r is PromiseRejectedResult => r.status === "rejected")
      if (refused !== undefined) return yield* Effect.fail(refused.reason instanceof Error ? refused.reason : new Error(String(refused.reason)))
      const readyAll = performance.now()
      const balanced = yield* promise(() => waitShards(pg, db!, addresses, true))
      notes.push(
        `${label}: runner 1 listening ${(first.readyMs / 1000).toFixed(2)} s after spawn, all ${SHARDS} shards ${((firstShards.ms) / 1000).toFixed(2)} s later` +
          (runners > 1
            ? `; ${runners === 2 ? "runner 2 spawned" : `runners 2-${runners} spawned together`}: listening after ${((readyAll - tJoin) / 1000).toFixed(2)} s, shards settled ` +
              `${(balanced.ms / 1000).toFixed(2)} s after the last one listened (split ${balanced.split})`
            : "")
      )
    }
    const front = serves[0]!

    // ---- the client, warm-up, idle window
    const client = yield* ControlClient.make({ url: front.url, token: front.token })
    yield* client.Health()
    const sessions = Array.from({ length: o.sessions }, () => crypto.randomUUID())
    const prefix = Ctx.freshPrefix()
    let turnBase = 0
    const prompt = (s: number, i: number) => Ctx.message(prefix, s, turnBase + i)
    const warm = yield* phase(client, sessions, o.warmup, Math.max(...o.concurrency), prompt, Ctx.REPLY)
    turnBase += o.warmup
    const warmFailed = warm.turns.filter((t) => !t.ok)
    if (warmFailed.length > 0) return yield* Effect.fail(new Error(`${warmFailed.length} warm-up turns failed: ${warmFailed[0]!.error}`))
    notes.push(`${label}: warm-up (first turn of each of ${o.sessions} sessions: thread start${runners > 0 ? ", entity start" : ""}) ` +
      `p50 ${percentile(warm.turns.map((t) => t.ms), 50).toFixed(0)} ms [${Math.min(...warm.turns.map((t) => t.ms)).toFixed(0)}-` +
      `${Math.max(...warm.turns.map((t) => t.ms)).toFixed(0)}], ${(warm.wallMs / 1000).toFixed(1)} s in all (concurrency ${Math.max(...o.concurrency)})`)

    const tables = async () =>
      db === undefined || pg === undefined ? {} : JSON.parse(await pg.psql(`SELECT coalesce(json_object_agg(relname,
        json_build_array(pg_total_relation_size(relid), n_tup_ins, n_tup_upd, n_tup_del)), '{}') FROM pg_stat_user_tables`, db)) as Record<string, [number, number, number, number]>

    // PostgreSQL (15 and later) reports a backend's counters to pg_stat_database at most once a second, and one that goes idle within
    // that second only at its idle timeout, up to 10 s later (PGSTAT_MIN_INTERVAL, PGSTAT_IDLE_INTERVAL): so FLUSH_MS of
    // quiet after the warm-up and after the last phase, and pg_stat_database is read once over all measured turns.
    // pg_stat_statements counts as each statement ends, so it is read around each phase.
    yield* promise(() => sleep(db === undefined ? 1_500 : FLUSH_MS))
    const idleCpu0 = cpuSnap(serves, pg)
    const idleDb0 = db !== undefined && pg !== undefined ? yield* promise(() => dbStats(pg, db!)) : undefined
    const idleStmt0 = db !== undefined && pg !== undefined ? yield* promise(() => stmtSnap(pg, db!)) : undefined
    yield* promise(() => sleep(IDLE_MS))
    const idleCpu1 = cpuSnap(serves, pg)
    const idleDb1 = db !== undefined && pg !== undefined ? yield* promise(() => dbStats(pg, db!)) : undefined
    const idleStmt1 = db !== undefined && pg !== undefined ? yield* promise(() => stmtSnap(pg, db!)) : undefined
    const idleMs = idleCpu1.at - idleCpu0.at
    const bgCpu = Object.fromEntries(cpuParts.map((p) => [p, perSecond(idleCpu0[p], idleCpu1[p], idleMs)])) as Record<(typeof cpuParts)[number], number>
    let bgDb: Record<string, number> = {}
    const bgStatements = new Map<string, { calls: number; rows: number }>()
    let background: SetupResult["background"]
    if (idleDb0 !== undefined && idleDb1 !== undefined && idleStmt0 !== undefined && idleStmt1 !== undefined) {
      const ms = idleDb1.at - idleDb0.at
      bgDb = Object.fromEntries(dbFields.map((f) => [f, perSecond(idleDb0.db[f]!, idleDb1.db[f]!, ms)]))
      for (const s of statementDeltas(idleStmt0, idleStmt1, new Map(), (idleStmt1.at - idleStmt0.at) / 1000)) bgStatements.set(s.id, s)
      const calls = [...bgStatements.values()].reduce((a, s) => a + s.calls, 0)
      const rows = [...bgStatements.values()].reduce((a, s) => a + s.rows, 0)
      background = { statements: calls, rows, db: bgDb }
      const top = statementDeltas(idleStmt0, idleStmt1, new Map(), (idleStmt1.at - idleStmt0.at) / 1000)
        .filter((s) => s.calls > 0).sort((a, b) => b.calls - a.calls).slice(0, 8)
        .map((s) => `${s.calls.toFixed(2)}/s (${s.rows.toFixed(1)} rows) ${s.query.slice(0, 100)}`)
      notes.push(
        `${label}: background with no turns (${(ms / 1000).toFixed(1)} s idle): ${calls.toFixed(1)} statements/s (${(calls / runners).toFixed(1)} per runner), ` +
          `${rows.toFixed(0)} rows/s; pg_stat_database ${dbFields.map((f) => `${f} ${bgDb[f]!.toFixed(1)}/s`).join(", ")}; ` +
          `CPU ${cpuParts.map((p) => `${p} ${(bgCpu[p] / 10).toFixed(1)}%`).join(", ")}`,
        `${label}: background statements:\n    ${top.join("\n    ")}`
      )
    } else {
      notes.push(`${label}: background with no turns: CPU ${cpuParts.filter((p) => p !== "pg").map((p) => `${p} ${(bgCpu[p] / 10).toFixed(1)}%`).join(", ")}`)
    }

    // ---- measured phases
    const tablesBefore = yield* promise(tables)
    const dbA = db !== undefined && pg !== undefined ? yield* promise(() => dbStats(pg, db!)) : undefined
    const stmtA = db !== undefined && pg !== undefined ? yield* promise(() => stmtSnap(pg, db!)) : undefined
    const rows: Array<PhaseRow> = []
    const connections = new Map<string, number>()
    let measured = 0
    for (const concurrency of o.concurrency) {
      const cpu0 = cpuSnap(serves, pg)
      const stmt0 = db !== undefined && pg !== undefined ? yield* promise(() => stmtSnap(pg, db!)) : undefined
      const result: PhaseResult = yield* phase(client, sessions, o.turns, concurrency, prompt, Ctx.REPLY)
      turnBase += o.turns
      const cpu1 = cpuSnap(serves, pg)
      const stmt1 = db !== undefined && pg !== undefined ? yield* promise(() => stmtSnap(pg, db!)) : undefined
      const n = result.turns.length
      measured += n
      const cpuDt = cpu1.at - cpu0.at
      const cpu = Object.fromEntries(cpuParts.map((p) => [p, (cpu1[p] - cpu0[p] - (bgCpu[p] * cpuDt) / 1000) / n])) as Record<(typeof cpuParts)[number], number>
      let statements: number | undefined
      let statementRows: number | undefined
      let topStatements: Array<string> | undefined
      if (stmt0 !== undefined && stmt1 !== undefined) {
        const per = statementDeltas(stmt0, stmt1, bgStatements, n)
        statements = per.reduce((a, s) => a + s.calls, 0)
        statementRows = per.reduce((a, s) => a + s.rows, 0)
        topStatements = per.filter((s) => s.calls >= 0.05).sort((a, b) => b.calls - a.calls).slice(0, 12)
          .map((s) => `${s.calls.toFixed(2)} x (${s.rows.toFixed(1)} rows) ${s.query.slice(0, 110)}`)
      }
      // which runner hosted each session (the entity records itself when it starts; the row stays while it runs)
      let routed: number | undefined
      const breakdown = (what: string, ts: ReadonlyArray<TurnResult>) => {
        const ok = ts.filter((t) => t.ok)
        const p = (f: (t: TurnResult) => number | undefined, q: number) => fmt(percentile(ok.map((t) => f(t) ?? NaN), q))
        return ok.length === 0 ? `${what} none` : `${what} ${ok.length}: p50 ${p((t) => t.ms, 50)} ms (p90 ${p((t) => t.ms, 90)}), ` +
          `session.selected at ${p((t) => t.selectedMs, 50)}, turn.started at ${p((t) => t.startedMs, 50)}; ` +
          (() => {
            const slow = ok.reduce((a, t) => (t.ms > a.ms ? t : a))
            return `slowest ${fmt(slow.ms)} ms (session.selected at ${fmt(slow.selectedMs)}, turn.started at ${fmt(slow.startedMs)})`
          })()
      }
      if (db !== undefined && pg !== undefined) {
        const owners = JSON.parse(yield* promise(() =>
          pg.psql(`SELECT coalesce(json_object_agg(session_id, runner), '{}') FROM harness_session_owners`, db!)
        )) as Record<string, string>
        const away = result.turns.filter((t) => owners[t.session] !== undefined && owners[t.session] !== addresses[0])
        const here = result.turns.filter((t) => owners[t.session] === addresses[0])
        const unknown = result.turns.filter((t) => owners[t.session] === undefined).length
        routed = away.length / n
        // connections each process has open right after the phase (a pool keeps its idle connections a while)
        const conns = JSON.parse(yield* promise(() =>
          pg.psql(`SELECT coalesce(json_object_agg(coalesce(application_name, '?'), n), '{}') FROM (SELECT application_name, count(*) AS n
            FROM pg_stat_activity WHERE datname = '${db}' AND usename = '${pg.user}' GROUP BY application_name) t`)
        )) as Record<string, number>
        for (const [name, count] of Object.entries(conns)) connections.set(name, Math.max(connections.get(name) ?? 0, Number(count)))
        if (unknown > 0) notes.push(`${label}, concurrency ${concurrency}: ${unknown} turns' sessions had no owner row after the phase`)
        notes.push(`${label}, concurrency ${concurrency}: ${breakdown("on the front runner", here)}; ${breakdown("routed to another runner", away)}`)
      } else notes.push(`${label}, concurrency ${concurrency}: ${breakdown("turns", result.turns)}`)
      const ok = result.turns.filter((t) => t.ok)
      const failed = result.turns.filter((t) => !t.ok)
      rows.push({
        setup: label,
        concurrency,
        turns: n,
        failed: failed.length,
        firstError: failed[0]?.error,
        throughput: (ok.length * 1000) / result.wallMs,
        p50: percentile(ok.map((t) => t.ms), 50),
        p99: percentile(ok.map((t) => t.ms), 99),
        mean: ok.reduce((a, t) => a + t.ms, 0) / Math.max(1, ok.length),
        routed,
        statements,
        statementRows,
        topStatements,
        cpu
      })
    }
    let database: SetupResult["database"]
    if (db !== undefined && pg !== undefined && dbA !== undefined && stmtA !== undefined) {
      yield* promise(() => sleep(FLUSH_MS))
      const dbB = yield* promise(() => dbStats(pg, db!))
      const stmtB = yield* promise(() => stmtSnap(pg, db!))
      const tablesAfter = yield* promise(tables)
      const dt = (dbB.at - dbA.at) / 1000
      const per = statementDeltas(stmtA, stmtB, bgStatements, measured)
      const growth = Object.entries(tablesAfter).map(([name, after]) => {
        const before = tablesBefore[name] ?? [0, 0, 0, 0]
        return { name, bytes: (after[0] - before[0]) / measured, ins: (after[1] - before[1]) / measured, upd: (after[2] - before[2]) / measured, del: (after[3] - before[3]) / measured, total: after[0] }
      }).filter((g) => g.ins > 0 || g.upd > 0 || g.del > 0 || g.bytes > 0).sort((a, b) => b.ins - a.ins)
      database = {
        turns: measured,
        perTurn: Object.fromEntries(dbFields.map((f) => [f, (dbB.db[f]! - dbA.db[f]! - bgDb[f]! * dt) / measured])),
        statements: per.reduce((a, s) => a + s.calls, 0),
        rows: per.reduce((a, s) => a + s.rows, 0),
        bytes: growth.reduce((a, g) => a + g.bytes, 0),
        windowS: dt
      }
      notes.push(`${label}: PostgreSQL connections open after a phase, most seen, by application_name: ` +
        [...connections.entries()].sort().map(([name, c]) => `${name.replace("codex-harness runner ", "runner ")} ${c}`).join(", "))
      notes.push(`${label}: per measured turn, by table (rows inserted/updated/deleted, bytes grown; size at the end): ` +
        growth.map((g) => `${g.name} ${g.ins.toFixed(2)}/${g.upd.toFixed(2)}/${g.del.toFixed(2)}, ${g.bytes.toFixed(0)} B (${(g.total / 1024).toFixed(0)} kB)`).join("; "))
    }

    for (const [k, sv] of serves.entries()) {
      if (sv.warnings.length === 0) continue
      const distinct = [...new Set(sv.warnings.map((w) => (/message="?([^"]*)/.exec(w)?.[1] ?? w).slice(0, 140)))]
      notes.push(`${label}: ${runners === 0 ? "the serve" : `runner ${k + 1}`} logged ${sv.warnings.length} warning/error line(s) so far, ${distinct.length} distinct: ` +
        distinct.slice(0, 4).map((d) => JSON.stringify(d)).join("; "))
    }

    // ---- a runner leaves: gracefully (2 runners) or killed (3)
    if (pg !== undefined && db !== undefined && runners >= 2 && runners <= 3) {
      const victim = serves[runners - 1]!
      const survivors = addresses.slice(0, runners - 1)
      const below = descendants(victim.pid)
      const how = runners === 2 ? "SIGTERM" : "SIGKILL"
      const tKill = performance.now()
      const exitAt = victim.exited.then(() => performance.now())
      victim.child.kill(how)
      const moved = yield* promise(() => waitShards(pg, db!, survivors, false, 60_000))
      const exit = yield* promise(() => victim.exited)
      const exitMs = (yield* promise(() => exitAt)) - tKill
      // what was below it (its app-server) must go by itself: its stdin closed with its parent
      const deadline = performance.now() + 5_000
      while (below.some((pid) => marked().includes(pid)) && performance.now() < deadline) yield* promise(() => sleep(100))
      const stayed = below.filter((pid) => marked().includes(pid))
      notes.push(
        `${label}: runner ${runners} ${how === "SIGTERM" ? "stopped with SIGTERM (graceful drain)" : "killed with SIGKILL"}: ` +
          `the other${runners - 1 === 1 ? "" : "s"} held all ${SHARDS} shards ${(moved.ms / 1000).toFixed(2)} s later (split ${moved.split}); ` +
          `it exited (${exit.signal ?? exit.code}) after ${(exitMs / 1000).toFixed(2)} s; below it: ${below.length} process(es), ` +
          `${stayed.length === 0 ? "all gone by themselves" : `${stayed.length} still alive after 5 s (${stayed.map((p) => cmdline(p).slice(0, 60)).join("; ")})`}`
      )
      serves.splice(serves.indexOf(victim), 1)
    }
    process.stderr.write(` ${((performance.now() - t0) / 1000).toFixed(0)} s\n`)
    return { label, runners, rows, notes, background, database } satisfies SetupResult
  }))

// ---- the table

const fmt = (x: number | undefined, digits = 0) => (x === undefined || !Number.isFinite(x) ? "-" : x.toFixed(digits))

const markdown = (header: ReadonlyArray<string>, cells: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<string> => {
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  const line = (c: ReadonlyArray<string>) => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(" | ")} |`
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...cells.map(line)]
}

const program = Effect.gen(function* () {
  const o = options()
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(Ctx.REPLY) })
  const ctx = Ctx.make(model)
  let pg: Postgres | undefined
  yield* Effect.addFinalizer(() =>
    Effect.promise(async () => {
      await pg?.stop()
      for (const pid of marked()) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {}
      }
      fs.rmSync(ctx.root, { recursive: true, force: true })
    })
  )
  const started = performance.now()
  const loadStart = `load average ${loadavg()}, CPU pressure ${cpuPressure()}`
  const results: Array<SetupResult> = []
  const failures: Array<string> = []
  const leftovers: Array<string> = []
  const check = async (spared: () => ReadonlySet<number>) => {
    const found = await settle(3_000, spared)
    leftovers.push(...found.left)
  }
  const pgSpared = () => {
    const pm = pg?.postmasterPid()
    return new Set(pm === undefined ? [] : [pm, ...descendants(pm)])
  }
  const run = (runners: number) =>
    measureSetup(ctx, o, runners, pg).pipe(
      Effect.tap((r) => Effect.sync(() => results.push(r))),
      Effect.catchAllCause((cause) =>
        Effect.sync(() => {
          process.stderr.write(" failed\n")
          failures.push(`${runners === 0 ? "single serve" : `cluster, ${runners} runners`}: ${String(cause).split("\n").slice(0, 3).join(" / ")}`)
        })
      ),
      Effect.zipRight(Effect.promise(() => check(pgSpared)))
    )

  if (o.single && o.parts.has("setups")) yield* run(0)
  const tPg = performance.now()
  pg = yield* Effect.tryPromise(() => startPostgres())
  const pgStartMs = performance.now() - tPg
  if (o.parts.has("setups")) for (const n of o.runners) yield* run(n)
  const issue33 = yield* Issue33.run(ctx, pg, o.parts, o.quick, o.sizes, failures, () => check(pgSpared))
  yield* Effect.promise(() => pg!.stop())
  yield* Effect.promise(() => check(() => new Set()))

  const all = results.flatMap((r) => r.rows)
  const single = new Map(all.filter((r) => r.setup === "single serve").map((r) => [r.concurrency, r]))
  const cpus = os.cpus()
  const cpuTotal = (r: PhaseRow) => cpuParts.reduce((a, p) => a + r.cpu[p], 0)
  const clusters = results.filter((r) => r.database !== undefined)
  const oneRunner = results.find((r) => r.runners === 1)
  const out = [
    `cluster bench: ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC; ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? "?"}), Node ${process.version}; ` +
      `instant scripted model; ${o.sessions} sessions x ${o.turns} turns per phase after ${o.warmup} warm-up turn(s) per session; ` +
      `PostgreSQL ${pg.version} (${pg.source === "npm" ? "npm's" : pg.source}, fsync off) started in ${(pgStartMs / 1000).toFixed(2)} s${pg.statements ? ", pg_stat_statements on" : ""}`,
    `at the start: ${loadStart}`,
    "",
    ...markdown(
      ["setup", "conc", "turns ok", "turns/s", "p50 ms", "p99 ms", "p50 vs single", "routed", "stmts/turn", "CPU ms/turn"],
      all.map((r) => {
        const base = single.get(r.concurrency)
        return [
          r.setup,
          String(r.concurrency),
          `${r.turns - r.failed}/${r.turns}`,
          fmt(r.throughput, 1),
          fmt(r.p50),
          fmt(r.p99),
          base === undefined || r.setup === "single serve" ? "-" : `${r.p50 - base.p50 >= 0 ? "+" : ""}${fmt(r.p50 - base.p50)} ms`,
          r.routed === undefined ? "-" : `${(r.routed * 100).toFixed(0)}%`,
          fmt(r.statements, 1),
          fmt(cpuTotal(r))
        ]
      })
    ),
    "",
    ...(clusters.length === 0 ? [] : [
      ...markdown(
        ["database per turn", "turns", "statements (rows)", "xact_commit", "tup_inserted", "tup_updated", "tup_deleted", "tup_fetched", "tup_returned", "bytes grown", "idle: stmts/s per runner"],
        clusters.map((r) => {
          const d = r.database!
          return [
            r.label,
            String(d.turns),
            `${fmt(d.statements, 1)} (${fmt(d.rows, 1)})`,
            fmt(d.perTurn.xact_commit, 1),
            fmt(d.perTurn.tup_inserted, 1),
            fmt(d.perTurn.tup_updated, 1),
            fmt(d.perTurn.tup_deleted, 1),
            fmt(d.perTurn.tup_fetched, 1),
            fmt(d.perTurn.tup_returned, 1),
            `${fmt(d.bytes)} B`,
            r.background === undefined ? "-" : fmt(r.background.statements / r.runners, 1)
          ]
        })
      ),
      ""
    ]),
    "- CPU ms per turn by process (background subtracted; front = the serve the client talks to, others = the other runners' serves): " +
      all.map((r) => `${r.setup} c${r.concurrency}: ${cpuParts.filter((p) => r.cpu[p] !== 0).map((p) => `${p} ${fmt(r.cpu[p])}`).join(", ")}`).join("; "),
    ...all.filter((r) => r.failed > 0).map((r) => `- ${r.setup} c${r.concurrency}: ${r.failed} turns failed, the first: ${r.firstError}`),
    ...o.concurrency.flatMap((c) => {
      const r = oneRunner?.rows.find((x) => x.concurrency === c)
      const s = single.get(c)
      return r === undefined || s === undefined ? [] : [
        `- routing overhead per turn at concurrency ${c}: cluster 1 runner p50 ${fmt(r.p50)} ms - single p50 ${fmt(s.p50)} ms = ${fmt(r.p50 - s.p50)} ms ` +
        `(means: ${fmt(r.mean - s.mean)} ms); CPU ${fmt(cpuTotal(r) - cpuTotal(s))} ms more per turn (front serve ${fmt(r.cpu.front - s.cpu.front)}, ` +
        `PostgreSQL ${fmt(r.cpu.pg)}, app-server ${fmt(r.cpu.appServers - s.cpu.appServers)}, this process ${fmt(r.cpu.bench - s.cpu.bench)})`
      ]
    }),
    ...results.flatMap((r) => r.notes.map((n) => `- ${n}`)),
    ...all.filter((r) => r.topStatements !== undefined && r.concurrency === o.concurrency[0]).map((r) =>
      `- ${r.setup} c${r.concurrency} statements per turn (background subtracted):\n    ${r.topStatements!.join("\n    ")}`),
    ...issue33,
    ...failures.map((f) => `- FAILED ${f}`),
    `- processes left 3 s after their setup or after PostgreSQL stopped: ${leftovers.length}${leftovers.length > 0 ? ` (${leftovers.join("; ")})` : ""}`,
    `- total ${((performance.now() - started) / 1000).toFixed(0)} s; at the end: load average ${loadavg()}, CPU pressure ${cpuPressure()}`
  ]
  for (const line of out) console.log(line)
  if (failures.length > 0 || leftovers.length > 0) return yield* Effect.dieMessage("cluster bench: a setup failed or processes were left behind")
})

NodeRuntime.runMain(program.pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer), Effect.provide(NodeSocket.layerWebSocketConstructor)))
