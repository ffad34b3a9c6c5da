// TurnLedger against a real throwaway PostgreSQL: a message sent again while its first turn's outcome is on its way to
// the database (waiting behind another write of its session, as under load or in a stall) waits for that outcome and
// replays it. Found by the chaos test: the ledger forgot the running turn as soon as `finish` was called, before the
// write began, so a retry arriving meanwhile reported a turn that was completing lost. `unknownWait: 0` turns off the
// fallback that reads the record again, so this holds the ledger's own bookkeeping.
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Option, Schedule } from "effect"
import type { ControlEvent } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import type { SessionRecord } from "../../schemas/session.js"
import * as TurnLedger from "../../src/cluster/TurnLedger.js"
import * as PgSessionStore from "../../src/session/PgSessionStore.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()
const at = new Date().toISOString()
const notice: SessionRecord = { _tag: "notice", at, text: "a write of the session's own" }
const outcome: ReadonlyArray<ControlEvent> = [
  { type: "reply", version: eventsVersion, session_id: "s1", source: "final", text: "done", media: [] },
  { type: "turn.completed", version: eventsVersion, session_id: "s1", thread_id: "t1", turn_id: "u1", final_text: "done", usage: null }
]

describe("TurnLedger", () => {
  it.scopedLive("a message sent again while its turn's outcome is on its way waits for that outcome and replays it, never reports it lost", () =>
    Effect.gen(function* () {
      const url = yield* Effect.orDie(pg().createDatabase("ledger"))
      const context = yield* Layer.build(TurnLedger.layer({ address: "127.0.0.9:4000", unknownWait: "0 millis" }).pipe(
        Layer.provideMerge(PgSessionStore.pgStoreLayer()),
        Layer.provideMerge(PgSessionStore.pgClientLayer(url))
      ))
      const ledger = Context.get(context, TurnLedger.TurnLedger)
      const store = Context.get(context, SessionStore)
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* Effect.orDie(store.hold!("s1"))
      yield* Effect.orDie(store.append("s1", notice))
      expect((yield* ledger.claim("m1", "s1"))._tag).toBe("Fresh")

      // another transaction holds the session's row: a write of the session waits on it, and the outcome behind that
      const locked = yield* Deferred.make<void>()
      const unlock = yield* Deferred.make<void>()
      const holder = yield* sql.withTransaction(
        sql`SELECT 1 FROM harness_sessions WHERE id = 's1' FOR UPDATE`.pipe(
          Effect.zipRight(Deferred.succeed(locked, undefined)),
          Effect.zipRight(Deferred.await(unlock))
        )
      ).pipe(Effect.orDie, Effect.fork)
      yield* Deferred.await(locked)
      const writing = yield* Effect.fork(Effect.orDie(store.append("s1", notice)))
      // the receipt: that write waits on the row lock
      yield* Effect.repeat(
        Effect.orDie(pg().psql(`SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%harness_sessions%'`, "ledger")),
        { until: (n) => n.trim() !== "0", schedule: Schedule.spaced("20 millis") }
      ).pipe(Effect.timeout("30 seconds"))
      const finishing = yield* Effect.fork(ledger.finish("m1", outcome))

      // the same message again: it must wait for the outcome (it is this runner's, and still on its way)
      const again = yield* Effect.fork(ledger.claim("m1", "s1"))
      // not answered while the outcome waits (answered at once, it was a `lost` report: the row is not locked)
      expect(Option.isNone(yield* Fiber.await(again).pipe(Effect.timeoutOption("2 seconds")))).toBe(true)
      yield* Deferred.succeed(unlock, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(writing)
      yield* Fiber.join(finishing)
      expect(yield* Fiber.join(again)).toEqual({ _tag: "Replay", status: "completed", events: outcome })
    }).pipe(Effect.timeout("90 seconds")))
})
