// A session's working set (SessionSnapshot.ts): whatever records a session has, a snapshot is taken only where its keep
// and the tail after it give the state of the whole transcript, and only at a quiet point (no prompt waiting for its
// turn's end, no compaction without its status, no branch before its first turn), leaving the conversation a bootstrap
// projection needs. Random transcripts, and the cases that matter spelled out.
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import { settlements } from "../../src/session/JournalRepair.js"
import { choose, due, type Entry, keepOf } from "../../src/session/SessionSnapshot.js"
import { sessionState } from "../../src/session/SessionState.js"

const runtime = (home: string) => ({ transport: "stdio" as const, codexHome: home, poolKey: `pool-${home}`, locked: false })
const thread = fc.constantFrom("t1", "t2", "t3")
const at = fc.constantFrom("2026-01-01T00:00:00.000Z", "2026-06-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z")

const record: fc.Arbitrary<SessionRecord> = fc.oneof(
  fc.record({ at, text: fc.constant("hi") }).map((r): SessionRecord => ({ _tag: "user", ...r })),
  fc.record({ at, threadId: thread }).map((r): SessionRecord => ({ _tag: "assistant", ...r, turnId: "u", text: "reply" })),
  fc.record({ at, threadId: thread }).map((r): SessionRecord => ({ _tag: "turn", ...r, turnId: "u", status: "completed" })),
  fc.record({ at, threadId: thread, home: fc.constantFrom("a", "b") }).map(({ home, ...r }): SessionRecord => ({
    _tag: "binding",
    ...r,
    model: "m",
    modelProvider: "p",
    runtime: runtime(home)
  })),
  // a binding of an older file, without a runtime
  fc.record({ at, threadId: thread }).map((r): SessionRecord => ({ _tag: "binding", ...r })),
  fc.record({ at, threadId: thread, carry: fc.boolean() }).map((r): SessionRecord => ({ _tag: "detached", ...r, reason: "asked" })),
  fc.record({ at, model: fc.constantFrom("m1", "m2") }).map((r): SessionRecord => ({ _tag: "model", ...r })),
  fc.record({ at, threadId: thread, status: fc.constantFrom("open" as const, "closed" as const, "cleanupFailed" as const) }).map((r): SessionRecord =>
    ({ _tag: "probe", ...r, sourceThreadId: "src" })),
  fc.record({ at, turnId: fc.constantFrom("c1", "c2"), status: fc.constantFrom("started" as const, "completed" as const, "failed" as const) }).map((r): SessionRecord => ({
    _tag: "compaction",
    ...r,
    threadId: "t1"
  })),
  fc.record({ at }).map((r): SessionRecord => ({ _tag: "settled", ...r, status: "interrupted", reason: "crash" })),
  fc.record({ at, home: fc.constantFrom("a", "b") }).map(({ home, ...r }): SessionRecord =>
    ({ _tag: "branch", ...r, sourceThreadId: "src", lastTurnId: "l", messages: 0, runtime: runtime(home) }))
)

const entries = (records: ReadonlyArray<SessionRecord>): Array<Entry> => records.map((record, i) => ({ seq: i + 1, record }))
const states = (records: ReadonlyArray<SessionRecord>) => {
  const s = sessionState(records)
  return { ...s, pendingProbes: [...(s.pendingProbes ?? [])].sort((a, b) => a.threadId.localeCompare(b.threadId)) }
}

describe("a session's snapshot", () => {
  it("[property] a keep gives the state of all the records it stands for, whatever follows", () => {
    fc.assert(fc.property(fc.array(record, { maxLength: 60 }), fc.array(record, { maxLength: 20 }), (before, after) => {
      const keep = keepOf(entries(before))
      if (keep === undefined) return
      // a subsequence, in order
      expect(keep.map((e) => e.seq)).toEqual([...keep.map((e) => e.seq)].sort((a, b) => a - b))
      expect(states([...keep.map((e) => e.record), ...after])).toEqual(states([...before, ...after]))
    }), { numRuns: 400 })
  })

  it("[property] a snapshot moves to a quiet point: the tail after it holds every state and settlement of the whole", () => {
    fc.assert(fc.property(fc.array(record, { maxLength: 80 }), fc.integer({ min: 0, max: 6 }), (records, keepConversation) => {
      const all = entries(records)
      const snapshot = choose([], all, { keepConversation, maxTail: 0 })
      if (snapshot === undefined) return
      const tail = all.filter((e) => e.seq > snapshot.seq)
      const working = [...snapshot.keep, ...tail].map((e) => e.record)
      expect(states(working)).toEqual(states(records))
      // what a crash left open (a prompt, a compaction) is in the tail: the same settlements either way
      expect(settlements(working, "now")).toEqual(settlements(records, "now"))
      // the conversation a projection carries stays in the tail
      const conversation = (rs: ReadonlyArray<SessionRecord>) => rs.filter((r) => ["user", "assistant", "message", "tool"].includes(r._tag)).length
      expect(conversation(tail.map((e) => e.record))).toBeGreaterThanOrEqual(Math.min(keepConversation, conversation(records)))
      // and it moves no further than a tail that keeps that many
      expect(snapshot.seq).toBeLessThanOrEqual(all.length)
    }), { numRuns: 400 })
  })

  it("a compaction's settlement keeps its place by its latest record, cut at a snapshot or not (a case the property once found)", () => {
    const c = (turnId: string, status: "started" | "failed"): SessionRecord =>
      ({ _tag: "compaction", at: "2026-01-01T00:00:00.000Z", turnId, status, threadId: "t1" })
    const records = [c("c1", "failed"), c("c2", "started"), c("c1", "started")]
    const all = entries(records)
    const snapshot = choose([], all, { keepConversation: 0, maxTail: 0 })!
    const working = [...snapshot.keep, ...all.filter((e) => e.seq > snapshot.seq)].map((e) => e.record)
    expect(settlements(working, "now")).toEqual(settlements(records, "now"))
    expect(settlements(records, "now").map((r) => (r._tag === "compaction" ? r.turnId : r._tag))).toEqual(["c2", "c1"])
  })

  it("a long session keeps its binding, its model choice and its last 200 conversation records; old records go by the cutoff", () => {
    const binding: SessionRecord = { _tag: "binding", at: "2026-01-01T00:00:00.000Z", threadId: "t1", model: "m", modelProvider: "p", runtime: runtime("a") }
    const model: SessionRecord = { _tag: "model", at: "2026-01-01T00:00:00.000Z", model: "m2" }
    const turn = (i: number, day: string): ReadonlyArray<SessionRecord> => [
      { _tag: "user", at: `2026-01-${day}T00:00:00.000Z`, text: `q${i}` },
      { _tag: "assistant", at: `2026-01-${day}T00:00:00.000Z`, threadId: "t1", turnId: `u${i}`, text: `a${i}` },
      { _tag: "turn", at: `2026-01-${day}T00:00:00.000Z`, threadId: "t1", turnId: `u${i}`, status: "completed" }
    ]
    const records = [binding, model, ...Array.from({ length: 500 }, (_, i) => turn(i, "02")).flat()]
    const all = entries(records)
    expect(due(all, { keepConversation: 200, maxTail: 600 })).toBe(true)
    const snapshot = choose([], all, { keepConversation: 200, maxTail: 600 })!
    expect(snapshot.keep.map((e) => e.record)).toEqual([binding, model])
    const tail = all.filter((e) => e.seq > snapshot.seq)
    // 100 turns of user and assistant: exactly the 200 conversation records, starting at a prompt
    expect(tail).toHaveLength(300)
    expect(tail[0]!.record).toMatchObject({ _tag: "user", text: "q400" })
    // past the retention cutoff, everything older than it may go behind the snapshot
    const later = [...records, ...turn(500, "20")]
    const aged = choose([], entries(later), { keepConversation: 200, maxTail: 600, cutoff: Date.parse("2026-01-10T00:00:00.000Z") })!
    expect(later.slice(aged.seq).map((r) => r._tag)).toEqual(["user", "assistant", "turn"])
    expect(aged.keep.map((e) => e.record)).toEqual([binding, model])
  })

  it("never moves past a prompt whose turn has not ended, nor past a branch before its first turn", () => {
    const user: SessionRecord = { _tag: "user", at: "2026-01-01T00:00:00.000Z", text: "waiting" }
    const old = (r: SessionRecord) => ({ ...r, at: "2026-01-01T00:00:00.000Z" }) as SessionRecord
    const cutoff = Date.parse("2027-01-01T00:00:00.000Z")
    expect(choose([], entries([user]), { keepConversation: 0, maxTail: 0, cutoff })).toBeUndefined()
    const branch = old({ _tag: "branch", at: "", sourceThreadId: "src", lastTurnId: "l", messages: 0, runtime: runtime("a") })
    const bound = old({ _tag: "binding", at: "", threadId: "t9", model: "m", modelProvider: "p", runtime: runtime("a") })
    expect(choose([], entries([branch, bound]), { keepConversation: 0, maxTail: 0, cutoff })).toBeUndefined()
    // once the branch's thread had its turn, the snapshot may move past all of it
    const done = choose([], entries([branch, bound, old({ _tag: "turn", at: "", threadId: "t9", turnId: "u", status: "completed" })]), {
      keepConversation: 0,
      maxTail: 0,
      cutoff
    })
    expect(done?.seq).toBe(3)
  })
})
