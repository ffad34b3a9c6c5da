// What the session store's write fence costs as a cluster grows (issue 33, item 3). Every write of a held session
// checks, in its own statement, that the session's advisory lock is still held by this process's lock connection,
// by reading pg_locks (PgSessionStore.ts `fence`). pg_locks is a snapshot of the whole lock table, so the check costs
// in proportion to the locks held across the database: every runner's session locks and the cluster's shard locks.
// This holds N advisory locks on one connection (as runners' lock connections do, in the store's namespace) and times
// the fence's condition from another connection, as a runner's pooled write would run it, with a primary-key lookup
// on a table of N rows beside it (what a check that does not read the lock table costs).
//
// Build and run: npm run build && node dist/bench/cluster/pg-locks.js [--n 200]
import pg from "pg"
import { lockNamespace } from "../../src/session/PgSessionStore.js"
import { benchArgs } from "../args.js"
import { startPostgres } from "./postgres.js"

const n = benchArgs("pg-locks", "usage: node dist/bench/cluster/pg-locks.js [--n 200]", { counts: ["n"] }).count("n", 200)
const lockCounts = [10, 300, 1_000, 3_000, 10_000]
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** round trip p50 from Node, and the server's own execution time (EXPLAIN ANALYZE, median of 5) */
const time = async (client: pg.Client, text: string) => {
  for (let i = 0; i < 20; i++) await client.query(text)
  const ms: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await client.query(text)
    ms.push(performance.now() - t)
  }
  const server: Array<number> = []
  for (let i = 0; i < 5; i++) {
    const plan = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ANALYZE ${text}`)
    const line = plan.rows.map((r) => r["QUERY PLAN"]).find((l) => l.startsWith("Execution Time"))
    server.push(Number(/([\d.]+) ms/.exec(line ?? "")?.[1] ?? NaN))
  }
  return { roundTrip: median(ms), server: median(server) }
}

const main = async () => {
  const server = await startPostgres()
  try {
    const url = await server.createDatabase("locks")
    process.env.PGPASSWORD = server.password
    const holder = new pg.Client({ connectionString: url })
    const writer = new pg.Client({ connectionString: url })
    try {
      await holder.connect()
      await writer.connect()
      const pid = (await holder.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid
      await writer.query("CREATE TABLE holders (session_id text PRIMARY KEY, token text NOT NULL)")
      console.log(`pg-locks: PostgreSQL ${server.version} (${server.source}), ${n} checks per row\n`)
      console.log("| advisory locks held | fence (pg_locks): round trip / server | key lookup: round trip / server |")
      console.log("|---|---|---|")
      let held = 0
      for (const count of lockCounts) {
        await holder.query(`SELECT count(pg_advisory_lock(${lockNamespace}, hashtext('s' || g))) FROM generate_series(${held + 1}, ${count}) g`)
        await writer.query(`INSERT INTO holders SELECT 's' || g, 't' FROM generate_series(${held + 1}, ${count}) g`)
        held = count
        // the store's fence for one held session, as PgSessionStore writes it
        const fence = await time(writer, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = ${lockNamespace}
          AND objid = hashtext('s7')::oid AND objsubid = 2 AND pid = ${pid} AND granted) AS held`)
        const lookup = await time(writer, "SELECT EXISTS (SELECT 1 FROM holders WHERE session_id = 's7' AND token = 't') AS held")
        const ms = (x: number) => `${x.toFixed(2)} ms`
        console.log(`| ${count.toLocaleString("en")} | ${ms(fence.roundTrip)} / ${ms(fence.server)} | ${ms(lookup.roundTrip)} / ${ms(lookup.server)} |`)
      }
    } finally {
      await holder.end().catch(() => {})
      await writer.end().catch(() => {})
    }
  } finally {
    await server.stop()
  }
}

void main()
