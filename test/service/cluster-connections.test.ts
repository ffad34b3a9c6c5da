// How many connections a cluster process opens, against a real throwaway PostgreSQL with a small max_connections: the
// pool keeps to its bound (`serve --cluster --database-connections N`) however many statements wait, and a runner whose
// bound the database has no room for is told so in one warning naming the numbers (the first limit a growing cluster
// meets, issue 33), and one that fits is told nothing.
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Logger } from "effect"
import * as ClusterDatabase from "../../src/cluster/ClusterDatabase.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres({ settings: { max_connections: 20 } })

describe("a cluster process's database connections", () => {
  it.scopedLive("the pool opens at most its bound while more statements wait, and all of them run", () =>
    Effect.gen(function* () {
      const url = yield* Effect.orDie(pg().createDatabase("bound"))
      const ctx = yield* Layer.build(ClusterDatabase.pgLayer(url, undefined, 2))
      const sql = yield* Effect.provide(SqlClient.SqlClient, ctx)
      // each statement counts the pool's connections open while it runs, then holds its own a moment
      const seen = yield* Effect.forEach(Array.from({ length: 6 }, (_, i) => i), () =>
        sql<{ n: number }>`SELECT (SELECT count(*)::integer FROM pg_stat_activity WHERE application_name = ${ClusterDatabase.applicationNameOf(undefined)}) AS n,
          pg_sleep(0.05)`.pipe(Effect.map(([row]) => Number(row!.n))), { concurrency: "unbounded" })
      expect(seen).toHaveLength(6)
      // the later statements ran once both connections were open: never a third
      expect(Math.max(...seen)).toBe(2)
    }))

  it.scopedLive("a runner is warned when the database has less room than its bound, with the numbers, and not otherwise", () =>
    Effect.gen(function* () {
      const url = yield* Effect.orDie(pg().createDatabase("room"))
      const ctx = yield* Layer.build(ClusterDatabase.pgLayer(url, "127.0.0.1:1", 4))
      const room = yield* Effect.provide(ClusterDatabase.connectionRoom, ctx)
      expect(room.max).toBe(20)
      expect(room.reserved).toBeGreaterThanOrEqual(3)
      expect(room.open).toBeGreaterThanOrEqual(1)
      expect(room.room).toBe(room.max - room.reserved - room.open)

      const warnings: Array<string> = []
      const logger = Logger.replace(Logger.defaultLogger, Logger.make(({ logLevel, message }) => {
        if (logLevel._tag === "Warning") warnings.push(String(Array.isArray(message) ? message.join(" ") : message))
      }))
      const warn = (connections: number) => Effect.provide(ClusterDatabase.warnWhenShort(connections), Layer.merge(Layer.succeedContext(ctx), logger))
      yield* warn(1)
      expect(warnings).toEqual([])
      yield* warn(room.room + 5)
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain(`max_connections ${room.max}`)
      expect(warnings[0]).toContain(`may open ${room.room + 5}`)
      expect(warnings[0]).toContain("--database-connections")
    }))
})
