import { describe, expect, it } from "@effect/vitest"
import { parseLines } from "../../src/session/SessionStore.js"
import { growingStates, sessionState } from "../../src/session/SessionState.js"

describe("session records", () => {
  it("[S39] a corrupt line is reported with its line number and skipped; the records around it survive", () => {
    const body = [
      JSON.stringify({ _tag: "user", at: "t1", text: "hello" }),
      "{\"_tag\":\"binding\",\"at\":\"t2\",\"threadId\":", // torn write
      JSON.stringify({ _tag: "mystery", at: "t3" }),
      JSON.stringify({ _tag: "assistant", at: "t4", threadId: "th", turnId: "tu", text: "hi" }),
      ""
    ].join("\n")
    const parsed = parseLines(body)
    expect(parsed.records.map((r) => r._tag)).toEqual(["user", "assistant"])
    expect(parsed.corrupt.map((c) => c.line)).toEqual([2, 3])
  })

  it("[S12] a torn last binding never loses the previous one; the latest model choice wins", () => {
    const body = [
      JSON.stringify({ _tag: "binding", at: "t1", threadId: "old-thread" }),
      JSON.stringify({ _tag: "model", at: "t2", model: "a" }),
      JSON.stringify({ _tag: "model", at: "t3", model: "b" }),
      "{\"_tag\":\"binding\",\"at\":\"t4\",\"thread"
    ].join("\n")
    const state = sessionState(parseLines(body).records)
    expect(state.binding?.threadId).toBe("old-thread")
    expect(state.modelChoice).toBe("b")
  })

  it("a session read again as it grows folds only its new records, and gives the state a whole fold gives", () => {
    const line = (record: object) => JSON.stringify(record)
    const records = parseLines([
      line({ _tag: "binding", at: "t1", threadId: "first" }),
      line({ _tag: "model", at: "t2", model: "a" }),
      line({ _tag: "probe", at: "t3", threadId: "p1", sourceThreadId: "first", status: "open" }),
      line({ _tag: "detached", at: "t4", threadId: "first", reason: "gone" }),
      line({ _tag: "binding", at: "t5", threadId: "second" }),
      line({ _tag: "model", at: "t6", model: "b" })
    ].join("\n")).records
    expect(records).toHaveLength(6)
    const states = growingStates()
    // the same record objects, read again with more of them each time (a held journal's copies)
    for (let n = 1; n <= records.length; n++) expect(states("s", records.slice(0, n))).toEqual(sessionState(records.slice(0, n)))
    expect(states("s", records).binding?.threadId).toBe("second")
    // records that do not extend the last read (a rewritten file, other objects) are folded whole, not on top of it
    const rewritten = parseLines(line({ _tag: "binding", at: "t7", threadId: "rewritten" })).records
    expect(states("s", rewritten)).toEqual(sessionState(rewritten))
    const lastDropped = records.slice(0, 3)
    expect(states("s", records)).toEqual(sessionState(records))
    expect(states("s", lastDropped)).toEqual(sessionState(lastDropped))
    expect(states("s", lastDropped).modelChoice).toBe("a")
    // another session's records are its own
    expect(states("t", rewritten).binding?.threadId).toBe("rewritten")
  })
})
