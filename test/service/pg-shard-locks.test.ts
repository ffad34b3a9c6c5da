// PgShardLocks against a real throwaway PostgreSQL: a refresh answers for the shards it is asked about and also names
// every other shard lock its connection holds, so the cluster (which releases a shard a refresh returns that is not
// assigned to it) never leaves a lock behind that nobody asks about. Such a lock made a shard unservable in the chaos
// test: assigned to one runner, its lock kept by another that no longer knew it had it.
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as ShardId from "@effect/cluster/ShardId"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as PgShardLocks from "../../src/cluster/PgShardLocks.js"
import * as PgSessionStore from "../../src/session/PgSessionStore.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()
const address = RunnerAddress.make("127.0.0.9", 4000)
const [one, two, three] = [1, 2, 3].map((n) => ShardId.make("default", n))

/** the storage, its layer built in the test's scope (its lock connection lives as long) */
const storageIn = (url: string) =>
  Effect.gen(function* () {
    const context = yield* Layer.build(PgShardLocks.layer.pipe(
      Layer.provideMerge(Layer.mergeAll(PgSessionStore.pgClientLayer(url), ShardingConfig.layer({ shardsPerGroup: 300 })))
    ))
    const sql = Context.get(context, SqlClient.SqlClient)
    yield* sql`CREATE TABLE IF NOT EXISTS cluster_runners (address text PRIMARY KEY, runner text, last_heartbeat timestamptz, healthy boolean)`
    yield* sql`INSERT INTO cluster_runners VALUES (${"127.0.0.9:4000"}, '{}', now(), true) ON CONFLICT DO NOTHING`
    return Context.get(context, RunnerStorage.RunnerStorage)
  })

describe("PgShardLocks", () => {
  it.scopedLive("a refresh names the shards it was asked about that it holds, and every other one its connection holds", () =>
    Effect.gen(function* () {
      const url = yield* Effect.orDie(pg().createDatabase("locks"))
      const storage = yield* Effect.orDie(storageIn(url))
      const names = (ids: ReadonlyArray<ShardId.ShardId>) => ids.map(String).sort()
      expect(names(yield* Effect.orDie(storage.acquire(address, [one!, two!])))).toEqual(["default:1", "default:2"])
      // the cluster asks about 1 and 3 only (it let 2 go, and a late operation took it again): 2 is named too
      expect(names(yield* Effect.orDie(storage.refresh(address, [one!, three!])))).toEqual(["default:1", "default:2", "default:3"])
      // once released, a shard is named no more (two released at once: they go in one statement)
      yield* Effect.orDie(Effect.all([storage.release(address, two!), storage.release(address, three!)], { concurrency: 2, discard: true }))
      expect(names(yield* Effect.orDie(storage.refresh(address, [one!])))).toEqual(["default:1"])
      const held = yield* Effect.orDie(pg().psql(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted`, "locks"))
      expect(held.trim()).toBe("1")
    }))
})
