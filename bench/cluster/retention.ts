// Issue 33, item 1: the tables a cluster's turns write stay flat under retention. One runner (`serve --cluster`, the
// default retention of a day) runs REAL turns (1,000) over a few dozen sessions; then the tables' rows and sizes are
// read and the next SAMPLE turns (100) timed. Then the database is given old history up to TOTAL turns (10,000) the
// quick way, as rows two days old written straight into it: ledger rows, processed cluster messages with their replies,
// and transcripts of sessions whose last turn was two days ago. The runner's own retention job (a pass a minute) is
// what removes them: the bench waits for it, then reads the tables and times SAMPLE turns again. Flat: the same rows
// and heap sizes, the same per-turn time. An index keeps the size it once had (PostgreSQL reuses an index's emptied
// pages but does not give them back), so the total with indexes is bounded by the most a retention period held.
import { Effect } from "effect"
import * as crypto from "node:crypto"
import { performance } from "node:perf_hooks"
import * as Retention from "../../src/cluster/Retention.js"
import * as ControlClient from "../../src/control/ControlClient.js"
import { stopServe } from "../figures/connect.js"
import * as Ctx from "../figures/context.js"
import { type TableSize, tableSizes } from "./dbstats.js"
import { percentile, phase } from "./load.js"
import { freePort, type Postgres } from "./postgres.js"
import { sleep, spawnServe } from "./serves.js"

export interface RetentionOptions {
  readonly real: number
  readonly total: number
  readonly sample: number
  readonly sessions: number
  readonly concurrency: number
}

export const tables = ["harness_turn_messages", "harness_records", "harness_sessions", "cluster_messages", "cluster_replies"] as const

export interface RetentionPoint {
  readonly turns: number
  readonly sizes: Record<string, TableSize>
  readonly p50: number
  readonly p99: number
  readonly ok: number
}

export const measureRetention = (ctx: Ctx.Context, pg: Postgres, o: RetentionOptions) =>
  Effect.gen(function* () {
    const promise = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => (e instanceof Error ? e : new Error(String(e))) })
    const db = "retention"
    const url = yield* promise(() => pg.createDatabase(db))
    const port = yield* promise(() => freePort())
    const serve = yield* promise(() => spawnServe(ctx, ["--cluster", url, "--runner-listen", `127.0.0.1:${port}`], { PGPASSWORD: pg.password }))
    yield* Effect.addFinalizer(() => Effect.promise(() => stopServe(serve).catch(() => void serve.child.kill("SIGKILL"))))
    const client = yield* ControlClient.make({ url: serve.url, token: serve.token })
    const sessions = Array.from({ length: o.sessions }, () => crypto.randomUUID())
    const prefix = Ctx.freshPrefix()
    let turn = 0
    const run = (turns: number, concurrency: number) =>
      Effect.gen(function* () {
        const perSession = Math.max(1, Math.round(turns / sessions.length))
        const base = turn
        turn += perSession
        return yield* phase(client, sessions, perSession, concurrency, (s, i) => Ctx.message(prefix, s, base + i), Ctx.REPLY)
      })
    const point = (turns: number) =>
      Effect.gen(function* () {
        const sizes = yield* promise(() => tableSizes(pg, db, tables))
        const sample = yield* run(o.sample, 1)
        const ok = sample.turns.filter((t) => t.ok)
        return { turns, sizes, p50: percentile(ok.map((t) => t.ms), 50), p99: percentile(ok.map((t) => t.ms), 99), ok: ok.length } satisfies RetentionPoint
      })

    const tReal = performance.now()
    const real = yield* run(o.real, o.concurrency)
    const realFailed = real.turns.filter((t) => !t.ok)
    if (realFailed.length > 0) return yield* Effect.fail(new Error(`${realFailed.length} of ${real.turns.length} turns failed: ${realFailed[0]!.error}`))
    const realS = (performance.now() - tReal) / 1000
    const first = yield* point(real.turns.length)

    // old history up to `total` turns, two days old: ledger rows, processed cluster messages and replies, transcripts
    const old = o.total - real.turns.length - first.ok
    const perOldSession = 250
    const oldSessions = Math.ceil(old / perOldSession)
    const snowflake = Retention.snowflakeAt(Date.now() - 2 * 86_400_000)
    const tInsert = performance.now()
    yield* promise(() => pg.psql(`
      INSERT INTO harness_turn_messages (message_id, session_id, status, runner, outcome, created_at, updated_at)
        SELECT 'old-' || i, 'old-session-' || (i % ${oldSessions}), 'completed', '127.0.0.1:1/old',
          jsonb_build_array(jsonb_build_object('type', 'turn.completed', 'final_text', repeat('x', 600))),
          now() - interval '2 days', now() - interval '2 days' FROM generate_series(1, ${old}) i;
      INSERT INTO cluster_messages (id, message_id, shard_id, entity_type, entity_id, kind, tag, payload, processed, request_id)
        SELECT ${snowflake}::bigint + i, 'old-' || i, 'default:1', 'Session', 'old', 0, 'Turn', repeat('p', 400), true, ${snowflake}::bigint + i
        FROM generate_series(1, ${old}) i;
      INSERT INTO cluster_replies (id, kind, request_id, payload)
        SELECT ${snowflake}::bigint + ${old} + i, 0, ${snowflake}::bigint + i, repeat('r', 400) FROM generate_series(1, ${old}) i;
      INSERT INTO harness_sessions (id, last_seq, created_at, updated_at)
        SELECT 'old-session-' || k, ${perOldSession * 3}, now() - interval '3 days', now() - interval '2 days' FROM generate_series(0, ${oldSessions - 1}) k;
      INSERT INTO harness_records (session_id, seq, tag, record, at)
        SELECT 'old-session-' || k, t * 3 + part, (ARRAY['user', 'assistant', 'turn'])[part],
          CASE part
            WHEN 1 THEN json_build_object('_tag', 'user', 'at', '2026-01-01T00:00:00.000Z', 'text', 'an old question ' || t)::text
            WHEN 2 THEN json_build_object('_tag', 'assistant', 'at', '2026-01-01T00:00:00.000Z', 'threadId', 'old', 'turnId', 'u' || t,
              'text', repeat('an old answer ', 40))::text
            ELSE json_build_object('_tag', 'turn', 'at', '2026-01-01T00:00:00.000Z', 'threadId', 'old', 'turnId', 'u' || t, 'status', 'completed')::text
          END, now() - interval '2 days'
        FROM generate_series(0, ${oldSessions - 1}) k, generate_series(0, ${perOldSession - 1}) t, generate_series(1, 3) part;`, db))
    const insertedS = (performance.now() - tInsert) / 1000
    const grown = yield* promise(() => tableSizes(pg, db, tables))

    // the runner's retention job removes them: a pass a minute (bounded wait)
    const tWait = performance.now()
    const gone = async () => {
      const out = await pg.psql(`SELECT (SELECT count(*) FROM harness_turn_messages WHERE created_at < now() - interval '1 day')
        + (SELECT count(*) FROM cluster_messages WHERE processed AND id < ${Retention.snowflakeAt(Date.now() - 86_400_000)}::bigint)
        + (SELECT count(*) FROM harness_records WHERE at < now() - interval '1 day')`, db)
      return Number(out.trim()) === 0
    }
    while (!(yield* promise(gone))) {
      if (performance.now() - tWait > 200_000) return yield* Effect.fail(new Error("the retention job did not remove the old rows within 200 s"))
      yield* promise(() => sleep(2_000))
    }
    const waitedS = (performance.now() - tWait) / 1000
    const passLine = /retention: deleted [^"]*/.exec(serve.stderr())?.[0] ?? "(no line logged)"
    const second = yield* point(o.total)
    return {
      realTurnsPerS: real.turns.length / realS,
      old,
      oldSessions,
      insertedS,
      grown,
      waitedS,
      passLine,
      points: [first, second] as const
    }
  })
