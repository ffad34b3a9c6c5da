// What the issue 33 parts of the cluster bench read from PostgreSQL, over the superuser's socket (never the measured
// role's connections): statements by query (pg_stat_statements, the harness role's, in one database), connections by
// application_name, table sizes and live rows, and the shard locks each runner holds.
import { performance } from "node:perf_hooks"
import type { Postgres } from "./postgres.js"
import { sleep } from "./serves.js"

export const SHARDS = 300

export interface StatementSnap {
  readonly at: number
  readonly byQuery: ReadonlyMap<string, { readonly calls: number; readonly rows: number; readonly ms: number; readonly query: string }>
}

export const statementSnap = async (pg: Postgres, db: string): Promise<StatementSnap> => {
  const at = performance.now()
  const out = await pg.psql(`SELECT coalesce(json_agg(json_build_array(s.queryid::text, s.calls, s.rows, s.total_exec_time,
      left(regexp_replace(s.query, '\\s+', ' ', 'g'), 400))), '[]') FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = '${db}' AND s.userid = (SELECT oid FROM pg_roles WHERE rolname = '${pg.user}')`)
  const byQuery = new Map<string, { calls: number; rows: number; ms: number; query: string }>()
  for (const [id, calls, rows, ms, query] of JSON.parse(out) as Array<[string, number, number, number, string]>) {
    const seen = byQuery.get(id)
    byQuery.set(id, { calls: Number(calls) + (seen?.calls ?? 0), rows: Number(rows) + (seen?.rows ?? 0), ms: Number(ms) + (seen?.ms ?? 0), query })
  }
  return { at, byQuery }
}

export interface StatementDelta {
  readonly query: string
  readonly calls: number
  readonly rows: number
  /** the server's execution time per call (pg_stat_statements), ms */
  readonly msPerCall: number
}

/** calls per unit between two snapshots: divided by `per` (turns, or seconds) */
export const statementDelta = (before: StatementSnap, after: StatementSnap, per: number): ReadonlyArray<StatementDelta> =>
  [...after.byQuery.entries()].map(([id, a]) => {
    const b = before.byQuery.get(id) ?? { calls: 0, rows: 0, ms: 0 }
    const calls = a.calls - b.calls
    return { query: a.query, calls: calls / per, rows: (a.rows - b.rows) / per, msPerCall: calls > 0 ? (a.ms - b.ms) / calls : 0 }
  }).filter((d) => d.calls > 0).sort((x, y) => y.calls - x.calls)

/** the total of a delta, less a background rate (per second) over `seconds`, divided by `per` */
export const totalCalls = (delta: ReadonlyArray<StatementDelta>) => delta.reduce((a, d) => a + d.calls, 0)

/** connections open in `db` by application_name, right now */
export const connections = async (pg: Postgres, db: string): Promise<Map<string, number>> => {
  const out = await pg.psql(`SELECT coalesce(json_object_agg(coalesce(application_name, '?'), n), '{}') FROM (SELECT application_name,
    count(*) AS n FROM pg_stat_activity WHERE datname = '${db}' GROUP BY application_name) t`)
  return new Map(Object.entries(JSON.parse(out) as Record<string, number>).map(([k, v]) => [k, Number(v)]))
}

export interface TableSize {
  /** live rows, counted */
  readonly rows: number
  /** the table itself, and with its indexes and TOAST */
  readonly heap: number
  readonly total: number
}

/** rows (count(*)), heap bytes and total bytes of the tables named */
export const tableSizes = async (pg: Postgres, db: string, tables: ReadonlyArray<string>): Promise<Record<string, TableSize>> => {
  const out = await pg.psql(`SELECT json_build_object(${tables.map((t) =>
    `'${t}', json_build_array((SELECT count(*) FROM ${t}), pg_relation_size('${t}'), pg_total_relation_size('${t}'))`).join(", ")})`, db)
  const parsed = JSON.parse(out) as Record<string, [number, number, number]>
  return Object.fromEntries(Object.entries(parsed).map(([name, [rows, heap, total]]) => [name, { rows: Number(rows), heap: Number(heap), total: Number(total) }]))
}

/** the shard locks held in `db`, by runner address (its lock connection's application_name) */
export const shardHolders = async (pg: Postgres, db: string): Promise<Map<string, number>> => {
  const out = await pg.psql(`SELECT coalesce(json_object_agg(name, n), '{}') FROM (
      SELECT a.application_name AS name, count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objsubid = 1
        AND l.database = (SELECT oid FROM pg_database WHERE datname = '${db}')
        AND l.objid::text::bigint BETWEEN 1000001 AND ${1_000_000 + SHARDS}
      GROUP BY a.application_name) t`)
  const prefix = "codex-harness runner "
  return new Map(Object.entries(JSON.parse(out) as Record<string, number>).map(([name, n]) => [name.startsWith(prefix) ? name.slice(prefix.length) : name, Number(n)]))
}

/**
 * Until every shard is held by `addresses` only (each holding some when `all`), unchanged for `stable` ms; the ms from
 * the call until that state was first seen, and the split (min-max shards per runner).
 */
export const waitShards = async (
  pg: Postgres,
  db: string,
  addresses: ReadonlyArray<string>,
  options: { readonly all: boolean; readonly timeoutMs?: number; readonly stable?: number }
) => {
  const t0 = performance.now()
  const timeoutMs = options.timeoutMs ?? 120_000
  const stable = options.stable ?? 1_500
  let since: number | undefined
  let last = ""
  while (performance.now() - t0 < timeoutMs) {
    const h = await shardHolders(pg, db)
    const total = [...h.values()].reduce((a, n) => a + n, 0)
    const ok = total === SHARDS && [...h.keys()].every((a) => addresses.includes(a)) && (!options.all || addresses.every((a) => (h.get(a) ?? 0) > 0))
    const text = addresses.map((a) => h.get(a) ?? 0).join("/")
    if (ok && text === last && since !== undefined) {
      if (performance.now() - since >= stable) {
        const counts = addresses.map((a) => h.get(a) ?? 0)
        return { ms: since - t0, split: `${Math.min(...counts)}-${Math.max(...counts)}` }
      }
    } else if (ok) {
      if (text !== last) since = performance.now()
    } else since = undefined
    last = ok ? text : ""
    await sleep(100)
  }
  throw new Error(`the shards did not settle on ${addresses.length} runners within ${timeoutMs / 1000} s`)
}
