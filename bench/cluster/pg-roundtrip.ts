// A statement's round trip from Node on the cluster's own PgClient (ClusterDatabase.pgLayer): SELECT 1 and a one-row
// upsert, sequential, p50 and p99, against raw `pg` on the same server. A diagnostic for issue 33's routing overhead.
//
// Build and run: npm run build && node dist/bench/cluster/pg-roundtrip.js [--n 300]
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import pg from "pg"
import { pgLayer } from "../../src/cluster/ClusterDatabase.js"
import { benchArgs } from "../args.js"
import { startPostgres } from "./postgres.js"

const n = benchArgs("pg-roundtrip", "usage: node dist/bench/cluster/pg-roundtrip.js [--n 300]", { counts: ["n"] }).count("n", 300)
const pct = (xs: Array<number>, p: number) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)]!

const timeEach = async (label: string, once: () => Promise<unknown>) => {
  for (let i = 0; i < 20; i++) await once()
  const ms: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await once()
    ms.push(performance.now() - t)
  }
  console.log(`${label.padEnd(40)} p50 ${pct(ms, 0.5).toFixed(2)} ms  p99 ${pct(ms, 0.99).toFixed(2)} ms`)
}

const main = async () => {
  const server = await startPostgres()
  try {
    const url = await server.createDatabase("roundtrip")
    // both clients read the password where the runners do ($PGPASSWORD), never from the URL
    process.env.PGPASSWORD = server.password
    const raw = new pg.Client({ connectionString: url })
    let i = 0
    try {
      await raw.connect()
      await raw.query("CREATE TABLE t (k text PRIMARY KEY, v int)")
      await timeEach("pg: SELECT 1", () => raw.query("SELECT 1"))
      await timeEach("pg: upsert", () => raw.query("INSERT INTO t (k, v) VALUES ($1, 1) ON CONFLICT (k) DO UPDATE SET v = t.v + 1", [`k${i++ % 50}`]))
    } finally {
      await raw.end()
    }
    await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const run = <A>(effect: Effect.Effect<A, unknown>) => () => Effect.runPromise(Effect.ignore(effect))
      yield* Effect.promise(() => timeEach("PgClient: SELECT 1", run(sql`SELECT 1`)))
      yield* Effect.promise(() => timeEach("PgClient: upsert", run(sql`INSERT INTO t (k, v) VALUES (${`k${i++ % 50}`}, 1) ON CONFLICT (k) DO UPDATE SET v = t.v + 1`)))
    }).pipe(Effect.provide(pgLayer(url, "127.0.0.1:1")))))
  } finally {
    await server.stop()
  }
}

void main()
