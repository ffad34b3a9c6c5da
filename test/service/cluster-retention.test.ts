// The cluster's retention job (src/cluster/Retention.ts) against a real throwaway PostgreSQL with every cluster table:
// one pass deletes what is older than the retention period and nothing else: ledger rows, processed cluster messages and
// their replies (by snowflake id), and the records behind a session's snapshot, which it moves for a session nobody
// holds; the session keeps its state and its recent records; a session another process holds is left to its holder; and
// only one runner's pass runs at a time.
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Scope } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import * as ClusterRunner from "../../src/cluster/ClusterRunner.js"
import * as Retention from "../../src/cluster/Retention.js"
import * as PgSessionStore from "../../src/session/PgSessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()

const now = Date.now()
const day = 86_400_000
const binding: SessionRecord = {
  _tag: "binding",
  at: new Date(now - 3 * day).toISOString(),
  threadId: "th1",
  model: "m",
  modelProvider: "p",
  runtime: { transport: "stdio", codexHome: "/h", poolKey: "k", locked: false }
}
const turn = (i: number, at: number): ReadonlyArray<SessionRecord> => [
  { _tag: "user", at: new Date(at).toISOString(), text: `question ${i}` },
  { _tag: "assistant", at: new Date(at).toISOString(), threadId: "th1", turnId: `u${i}`, text: `answer ${i}`, delivered: true },
  { _tag: "turn", at: new Date(at).toISOString(), threadId: "th1", turnId: `u${i}`, status: "completed" }
]

describe("the cluster's retention job", () => {
  it.scopedLive("deletes what is older than the period: ledger rows, processed messages and replies, records behind a snapshot", () =>
    Effect.gen(function* () {
      const url = yield* Effect.orDie(pg().createDatabase("retention"))
      const db = url.slice(url.lastIndexOf("/") + 1)
      const psql = (text: string) => Effect.orDie(pg().psql(text, db))
      const count = (text: string) => Effect.map(psql(text), (out) => Number(out.trim()))
      // every table in place, as a runner's bootstrap makes them
      const config = ClusterRunner.shardingConfig({ databaseUrl: url })
      const ctx = yield* Effect.orDie(Layer.build(ClusterRunner.databaseLayer({ databaseUrl: url }, config, "127.0.0.1:1")))
      const sql = yield* Effect.provide(SqlClient.SqlClient, ctx)
      const store = yield* Effect.orDie(Layer.build(PgSessionStore.pgStoreLayer({ retention: "1 day" })).pipe(Effect.provide(ctx)))
      const s = Effect.runSync(Effect.provide(SessionStore, store))

      // the ledger: 30 rows two days old, 5 from now
      yield* psql(`INSERT INTO harness_turn_messages (message_id, session_id, status, created_at, updated_at)
        SELECT 'old-' || i, 'x', 'completed', now() - interval '2 days', now() - interval '2 days' FROM generate_series(1, 30) i;
        INSERT INTO harness_turn_messages (message_id, session_id, status) SELECT 'new-' || i, 'x', 'completed' FROM generate_series(1, 5) i`)
      // cluster messages and replies: processed two days ago, processed now, and one old one never processed
      const oldId = BigInt(Retention.snowflakeAt(now - 2 * day))
      const newId = BigInt(Retention.snowflakeAt(now))
      const message = (id: bigint, processed: boolean) =>
        `INSERT INTO cluster_messages (id, shard_id, entity_type, entity_id, kind, request_id, processed) VALUES (${id}, 'default:1', 'Session', 'e', 0, ${id}, ${processed});
         INSERT INTO cluster_replies (id, kind, request_id, payload) VALUES (${id + 1n}, 0, ${id}, '{}');`
      yield* psql([message(oldId, true), message(oldId + 10n, true), message(oldId + 20n, false), message(newId, true)].join("\n"))

      // a session nobody holds: 30 turns two days old, then 3 from now
      yield* s.append("idle", binding)
      for (let i = 0; i < 30; i++) for (const r of turn(i, now - 2 * day)) yield* s.append("idle", r)
      yield* psql(`UPDATE harness_records SET at = now() - interval '2 days' WHERE session_id = 'idle'`)
      for (let i = 30; i < 33; i++) for (const r of turn(i, now)) yield* s.append("idle", r)
      const before = (yield* s.read("idle")).records
      // a session another process holds: left to its holder
      const other = yield* Effect.orDie(Layer.build(PgSessionStore.pgLayer(url)))
      const holder = Effect.runSync(Effect.provide(SessionStore, other))
      const held = yield* Scope.make()
      yield* holder.hold("busy").pipe(Scope.extend(held))
      for (let i = 0; i < 5; i++) for (const r of turn(i, now - 2 * day)) yield* holder.append("busy", r)
      yield* psql(`UPDATE harness_records SET at = now() - interval '2 days' WHERE session_id = 'busy'`)

      const result = yield* Retention.pass({ retention: "1 day", batch: 7 }).pipe(Effect.provide(ctx), Effect.provide(store))
      expect(result).toMatchObject({ ledger: 30, messages: 2, replies: 3, records: 90, snapshots: 1 })
      expect(yield* count(`SELECT count(*) FROM harness_turn_messages`)).toBe(5)
      // the unprocessed one stays, with nothing else of two days ago
      expect(yield* psql(`SELECT string_agg(id::text, ',' ORDER BY id) FROM cluster_messages`)).toBe(`${oldId + 20n},${newId}\n`)
      expect(yield* count(`SELECT count(*) FROM cluster_replies`)).toBe(1)
      // the idle session: its binding (the state's record) and the recent turns; the same state
      const after = (yield* s.read("idle")).records
      expect(after).toEqual([binding, ...before.slice(-9)])
      expect(sessionState(after)).toEqual(sessionState(before))
      expect(yield* psql(`SELECT snapshot_seq || '/' || array_to_string(snapshot_keep, ',') FROM harness_sessions WHERE id = 'idle'`)).toBe("91/1\n")
      // the pass let the idle session go at once: another process takes it
      yield* Effect.scoped(holder.hold("idle"))
      expect(yield* count(`SELECT count(*) FROM harness_records WHERE session_id = 'busy'`)).toBe(15)

      // a second pass finds nothing; one pass at a time across runners
      expect(yield* Retention.pass({ retention: "1 day" }).pipe(Effect.provide(ctx), Effect.provide(store))).toMatchObject({ ledger: 0, records: 0 })
      const conn = yield* Effect.orDie(sql.reserve)
      yield* Effect.orDie(conn.execute(`SELECT pg_advisory_lock(${Retention.retentionLockKey})`, [], undefined))
      expect(yield* Retention.passIfFirst({ retention: "1 day" }).pipe(Effect.provide(ctx), Effect.provide(store))).toBeUndefined()
      yield* Effect.orDie(conn.execute(`SELECT pg_advisory_unlock(${Retention.retentionLockKey})`, [], undefined))
      expect(yield* Retention.passIfFirst({ retention: "1 day" }).pipe(Effect.provide(ctx), Effect.provide(store))).toBeDefined()
    }), 120_000)
})
