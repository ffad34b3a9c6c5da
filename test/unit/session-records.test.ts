import { describe, expect, it } from "@effect/vitest"
import { parseLines } from "../../src/session/SessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"

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
})
