// What a turn costs the PostgreSQL store (issue 33), against a real throwaway server with pg_stat_statements, each test in
// a database of its own, statements counted in that database:
// - a held session is read once (its working set) and then served from memory: no statement per read;
// - a long session's snapshot moves forward as it is written, in the statements of its appends, and a session taken over
//   by another process reads the snapshot's keep and its tail, not the whole transcript, with the same state;
// - a staged turn's records are written in one statement with the caller's (the ledger's outcome); those before its
//   reply also on their own within `stageFor`; a prompt is never held back;
// - a session reference is an index lookup (a whole id once, then from memory; a prefix; an ambiguous one counted).
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Schedule } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import * as PgSessionStore from "../../src/session/PgSessionStore.js"
import { resolveIn } from "../../src/session/SessionRef.js"
import { sessionState } from "../../src/session/SessionState.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres({ statements: true })
let databases = 0
const freshDb = () => Effect.suspend(() => Effect.orDie(pg().createDatabase(`w${++databases}`)))
const open = (url: string, options: PgSessionStore.PgStoreOptions = {}) =>
  Effect.flatMap(Effect.orDie(Layer.build(PgSessionStore.pgClientLayer(url))), (ctx) =>
    Effect.orDie(Effect.all([PgSessionStore.pgStore(options), SqlClient.SqlClient]).pipe(Effect.provide(ctx))))
const dbOf = (url: string) => url.slice(url.lastIndexOf("/") + 1)
const psql = (db: string, sql: string) => Effect.suspend(() => Effect.orDie(pg().psql(sql, db)))
/** statements run in the database so far (pg_stat_statements, every role) */
/**
 * The statements run in `db` so far, but the lock connection's ping (`SELECT 1` every few seconds, in the background):
 * on a busy machine one landed inside a counted window now and then, and it is not what the window measures.
 */
const statements = (db: string) =>
  Effect.map(psql("postgres", `SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname = '${db}' AND s.query NOT IN ('SELECT 1', 'SELECT $1')`), Number)

const at = new Date().toISOString()
const binding: SessionRecord = {
  _tag: "binding",
  at,
  threadId: "th1",
  model: "m",
  modelProvider: "p",
  runtime: { transport: "stdio", codexHome: "/h", poolKey: "k", locked: false }
}
const turn = (i: number): ReadonlyArray<SessionRecord> => [
  { _tag: "user", at, text: `question ${i}` },
  { _tag: "assistant", at, threadId: "th1", turnId: `u${i}`, text: `answer ${i}`, delivered: true },
  { _tag: "turn", at, threadId: "th1", turnId: `u${i}`, status: "completed" }
]

/** a store in a fresh database holding s1, whose turn (message m1) is staged whole: its prompt written, its reply and end waiting */
const stagedTurn = (options: PgSessionStore.PgStoreOptions) =>
  Effect.gen(function* () {
    const url = yield* freshDb()
    const [s, sql] = yield* open(url, options)
    yield* Effect.orDie(sql`CREATE TABLE outcome (id text PRIMARY KEY, done boolean NOT NULL DEFAULT false)`)
    yield* Effect.orDie(sql`INSERT INTO outcome VALUES ('m1')`)
    yield* s.hold("s1")
    yield* s.append("s1", binding)
    yield* s.workingSets.stage("s1", "m1")
    for (const record of turn(1)) yield* s.append("s1", record)
    return { url, db: dbOf(url), s, sql }
  })

describe("the PostgreSQL store's working sets", () => {
  it.scopedLive("a held session is read once, then from memory; a session taken over reads its snapshot's keep and tail", () =>
    Effect.gen(function* () {
      expect(pg().statements).toBe(true)
      const url = yield* freshDb()
      const db = dbOf(url)
      const [a] = yield* open(url, { heldIdleTimeToLive: "1 minute" })
      yield* a.hold("s1")
      yield* a.append("s1", binding)
      for (let i = 0; i < 400; i++) for (const r of turn(i)) yield* a.append("s1", r)
      const before = yield* statements(db)
      for (let i = 0; i < 20; i++) yield* a.readRecent!("s1")
      // a read this process can answer from memory asks the database nothing
      expect((yield* statements(db)) - before).toBe(0)
      const snapshot = yield* psql(db, `SELECT snapshot_seq || ' ' || array_to_string(snapshot_keep, ',') FROM harness_sessions WHERE id = 's1'`)
      const [seq, keep] = snapshot.trim().split(" ")
      // it moved as the session was written (no statement of its own), keeping the binding and 200 conversation records
      expect(Number(seq)).toBeGreaterThan(0)
      expect(keep).toBe("1")

      // another process takes the session over: one statement, the keep and the tail, the whole transcript's state
      yield* Effect.orDie(a.release!("s1"))
      const [b] = yield* open(url)
      const whole = (yield* b.read("s1")).records
      expect(whole).toHaveLength(1201)
      const beforeTake = yield* statements(db)
      const recent = (yield* b.readRecent!("s1")).records
      expect((yield* statements(db)) - beforeTake).toBe(1)
      expect(recent.length).toBeLessThan(700)
      expect(recent[0]).toEqual(binding)
      expect(recent.filter((r) => r._tag === "user" || r._tag === "assistant").length).toBeGreaterThanOrEqual(200)
      expect(recent.slice(1)).toEqual(whole.slice(whole.length - recent.length + 1))
      expect(sessionState(recent)).toEqual(sessionState(whole))
    }))

  it.scopedLive("a staged turn's records go in one statement with the caller's; a prompt never waits; what precedes the reply goes within stageFor, the reply only with the outcome", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const db = dbOf(url)
      // staged until the caller writes its statement: nothing here may flush them on its own however slow the machine
      const [s, sql] = yield* open(url, { stageFor: "1 hour" })
      yield* Effect.orDie(sql`CREATE TABLE outcome (id text PRIMARY KEY, done boolean NOT NULL DEFAULT false)`)
      yield* Effect.orDie(sql`INSERT INTO outcome VALUES ('m1'), ('m2')`)
      const countOf = (session: string) => Effect.map(psql(db, `SELECT count(*) FROM harness_records WHERE session_id = '${session}'`), Number)
      const count = countOf("s1")
      yield* s.hold("s1")
      yield* s.append("s1", binding)
      yield* s.workingSets.stage("s1", "m1")
      const [user, reply, end] = turn(1)
      yield* s.append("s1", user!)
      // the prompt is stored at once; the reply and the turn's end wait for the outcome
      expect(yield* count).toBe(2)
      yield* s.append("s1", reply!)
      yield* s.append("s1", end!)
      expect(yield* count).toBe(2)
      // served from memory meanwhile, in order
      expect((yield* s.readRecent!("s1")).records).toEqual([binding, user, reply, end])
      const before = yield* statements(db)
      expect(yield* s.workingSets.flushWith("s1", "m1", (guard) => sql`UPDATE outcome SET done = true WHERE id = 'm1' AND ${guard} RETURNING id`)).toBe(1)
      expect((yield* statements(db)) - before).toBe(1)
      expect(yield* count).toBe(4)
      expect(yield* psql(db, `SELECT done FROM outcome WHERE id = 'm1'`)).toBe("t\n")
      expect((yield* s.read("s1")).records).toEqual([binding, user, reply, end])

      // staged: what comes before the turn's reply is written within stageFor without the caller (a store of its own, a
      // short one; the prompt is there as soon as its append returns); the reply and the end wait for the outcome, so a
      // runner that dies before its outcome is written leaves no reply of a turn the ledger reports lost
      const [quick] = yield* open(url, { stageFor: "200 millis" })
      yield* quick.hold("s2")
      yield* quick.append("s2", binding)
      yield* quick.workingSets.stage("s2", "m2")
      const [user2, reply2, end2] = turn(2)
      yield* quick.append("s2", user2!)
      expect(yield* countOf("s2")).toBe(2)
      yield* quick.append("s2", { _tag: "reasoning", at, threadId: "th1", turnId: "u2", text: "thinking" })
      yield* quick.append("s2", reply2!)
      yield* quick.append("s2", end2!)
      yield* Effect.repeat(countOf("s2"), { until: (n) => n >= 3, schedule: Schedule.spaced("50 millis") }).pipe(Effect.timeout("60 seconds"))
      // one statement wrote the reasoning alone: the reply and the end were not in it
      expect(yield* countOf("s2")).toBe(3)
      expect(yield* quick.workingSets.flushWith("s2", "m2", (guard) => sql`UPDATE outcome SET done = true WHERE id = 'm2' AND ${guard} RETURNING id`)).toBe(1)
      expect(yield* countOf("s2")).toBe(5)
      expect(yield* psql(db, `SELECT done FROM outcome WHERE id = 'm2'`)).toBe("t\n")
      // no turn staged: a record is written at once
      yield* quick.append("s2", { _tag: "notice", at, text: "after" })
      expect(yield* countOf("s2")).toBe(6)
      // a session not held here: the caller runs its statement itself
      expect(yield* s.workingSets.flushWith("other", "m3", () => sql`SELECT 1`)).toBeUndefined()
    }))

  it.scopedLive("a lock taken again by one caller is not lost to the next who saw the same dead connection: the staged turn still goes with its outcome", () =>
    Effect.gen(function* () {
      const { db, s, sql } = yield* stagedTurn({ stageFor: "1 hour", lockPingInterval: "1 hour" })
      // the lock connection dies (a restart, as far as this store can tell), and the store finds out on its next lock
      yield* psql(db, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted`)
      yield* s.hold("s2")
      // two callers see s1's lock on a dead connection before either takes the gate: the first takes it again
      yield* Effect.all([s.hold("s1"), s.hold("s1")], { concurrency: 2, discard: true })
      // the hold the turn's records wait in was kept: they go with the outcome
      expect(yield* s.workingSets.flushWith("s1", "m1", (guard) => sql`UPDATE outcome SET done = true WHERE id = 'm1' AND ${guard} RETURNING id`)).toBe(1)
      expect(yield* psql(db, `SELECT string_agg(tag, ',' ORDER BY seq) FROM harness_records WHERE session_id = 's1'`)).toBe("binding,user,assistant,turn\n")
      expect(yield* psql(db, `SELECT done FROM outcome WHERE id = 'm1'`)).toBe("t\n")
    }))

  it.scopedLive("an outcome goes only where its records go: not past a fence that failed; after the hold is lost, with the records, unfenced", () =>
    Effect.gen(function* () {
      const { db, s: a, sql, url } = yield* stagedTurn({ stageFor: "1 hour", lockPingInterval: "1 hour", writeRetryBound: "1 second" })
      // a's lock connection dies unnoticed, and another process takes the session
      yield* psql(db, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted`)
      const [b] = yield* open(url)
      yield* b.hold("s1")
      const outcome = () => psql(db, `SELECT done FROM outcome WHERE id = 'm1'`)
      // the fenced write is refused, and its outcome with it: the hold is lost
      const refused = yield* Effect.either(a.workingSets.flushWith("s1", "m1", (guard) => sql`UPDATE outcome SET done = true WHERE id = 'm1' AND ${guard} RETURNING id`))
      expect(refused._tag).toBe("Left")
      expect(yield* outcome()).toBe("f\n")
      // told again (the ledger retries): the turn's records and its outcome go together, after what the session had
      // (b found the prompt without an end when it took the session, and settled it)
      expect(yield* a.workingSets.flushWith("s1", "m1", (guard) => sql`UPDATE outcome SET done = true WHERE id = 'm1' AND ${guard} RETURNING id`)).toBe(1)
      expect(yield* outcome()).toBe("t\n")
      expect(yield* psql(db, `SELECT string_agg(tag, ',' ORDER BY seq) FROM harness_records WHERE session_id = 's1'`)).toBe("binding,user,settled,assistant,turn\n")
    }))

  it.scopedLive("a session reference is an index lookup: a whole id (then known), a unique prefix, an ambiguous one with its count", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const db = dbOf(url)
      const [s] = yield* open(url)
      for (const id of ["abcd-1111", "abcd-2222", "abce-3333", "abcd-1111-x", "ab_d-1"]) yield* s.append(id, binding)
      const resolve = (ref: string) => Effect.either(resolveIn(s, ref, "the cluster"))
      expect(yield* resolve("abcd-1111")).toMatchObject({ _tag: "Right", right: "abcd-1111" })
      expect(yield* resolve("abce")).toMatchObject({ _tag: "Right", right: "abce-3333" })
      expect(yield* resolve("abcd-2")).toMatchObject({ _tag: "Right", right: "abcd-2222" })
      const ambiguous = yield* resolve("abcd")
      expect(ambiguous).toMatchObject({ _tag: "Left", left: { _tag: "AmbiguousSessionRef", matches: 3 } })
      expect(yield* resolve("nope")).toMatchObject({ _tag: "Left", left: { _tag: "SessionNotFound", tooShort: false } })
      expect(yield* resolve("ab")).toMatchObject({ _tag: "Left", left: { _tag: "SessionNotFound", tooShort: true } })
      // `_` is an id character here, never a pattern
      expect(yield* resolve("ab_d")).toMatchObject({ _tag: "Right", right: "ab_d-1" })
      // an id seen whole is known from then on; the lookup uses the index, not a scan of every session
      const before = yield* statements(db)
      for (let i = 0; i < 10; i++) expect(yield* resolve("abcd-1111")).toMatchObject({ _tag: "Right" })
      expect((yield* statements(db)) - before).toBe(0)
      const plan = yield* psql(db, `SET enable_seqscan = off; EXPLAIN SELECT id FROM harness_sessions WHERE id COLLATE "C" >= 'abcd' AND id COLLATE "C" < 'abcd~'`)
      expect(plan).toContain("harness_sessions_id_bytes")
    }))
})
