// `sessions list` as a table: a header, the shortest unique id prefix (at least 8), a one-line title from the first
// prompt that a terminal shows as it is, a compact local time, turns and model / provider, within 80 columns.
import { describe, expect, it } from "@effect/vitest"
import type { SessionRecord } from "../../schemas/session.js"
import { compactTime, oneLine, renderTable, rowOf, type SessionRow, titleOf, uniquePrefixLength } from "../../src/session/SessionTable.js"

const at = "2026-01-05T09:07:00.000Z"
const user = (text: string, kind?: "heartbeat"): SessionRecord => ({ _tag: "user", at, text, ...(kind !== undefined ? { kind } : {}) })
const turn: SessionRecord = { _tag: "turn", at, threadId: "th", turnId: "tu", status: "completed" }
const binding = (model: string, modelProvider: string, providerUrl?: string): SessionRecord => ({
  _tag: "binding",
  at,
  threadId: "thread-1",
  model,
  modelProvider,
  ...(providerUrl !== undefined
    ? { runtime: { transport: "stdio" as const, codexHome: "/h", providerUrl, poolKey: "k", locked: false } }
    : {})
})

const row = (sessionId: string, overrides: Partial<SessionRow> = {}): SessionRow => ({
  sessionId,
  updatedAt: new Date(2026, 0, 5, 9, 7),
  threadId: null,
  turns: 0,
  title: null,
  model: null,
  modelProvider: null,
  providerUrl: null,
  ...overrides
})
const now = new Date(2026, 5, 1, 12, 0)

describe("session titles", () => {
  it("the first prompt a person wrote, on one line, without escape sequences, controls or bidi overrides", () => {
    expect(titleOf([user("beat", "heartbeat"), user("  summarise\nREADME.md\tplease  "), user("second")])).toBe("summarise README.md please")
    expect(titleOf([user("\u001b]0;pwned\u0007\u001b[2Jhello\u0007 there\u202e txt.exe")])).toBe("hello there txt.exe")
    expect(titleOf([turn])).toBeNull()
    expect(titleOf([user(" \n ")])).toBeNull()
  })

  it("a long prompt is cut with an ellipsis, never mid-character", () => {
    const title = oneLine("é".repeat(300), 10)
    expect(title).toBe(`${"é".repeat(9)}…`)
    expect(oneLine("😀".repeat(20), 5)).toBe("😀😀😀😀…")
  })
})

describe("id prefixes", () => {
  it("at least 8 characters; more when two listed ids share a longer start; an id shorter than that shown whole", () => {
    expect(uniquePrefixLength(["3f2a9c1e-aaaa", "77b0c0de-bbbb"])).toBe(8)
    expect(uniquePrefixLength(["3f2a9c1e0-aaaa", "3f2a9c1e1-bbbb", "0"])).toBe(9)
    expect(uniquePrefixLength(["3f2a9c1e0a-aaaa", "3f2a9c1e0b-bbbb", "3f2a"])).toBe(10)
    expect(uniquePrefixLength(["notes", "notes-2"])).toBe(8)
    expect(uniquePrefixLength([])).toBe(8)
  })
})

describe("the table", () => {
  it("a header, then a row per session in the order given, with model / provider and a right-aligned turn count", () => {
    const lines = renderTable(
      [
        row("3f2a9c1e-5d0b-4c7e-9a51-0e6f1d2c3b4a", { title: "summarise README.md", turns: 12, model: "gpt-5", modelProvider: "openai" }),
        row("77b0c0de-0000-4000-8000-000000000000", { updatedAt: new Date(2025, 11, 31, 23, 59), turns: 3 })
      ],
      { now }
    )
    expect(lines).toEqual([
      "ID        TITLE                UPDATED      TURNS  RUNTIME",
      "3f2a9c1e  summarise README.md  01-05 09:07     12  gpt-5 / openai",
      "77b0c0de  -                    2025-12-31       3  -"
    ])
  })

  it("fits 80 columns: the title is cut first down to its share, the runtime after it", () => {
    const long = "a prompt far longer than any terminal column would ever have room for, and then some more words"
    const lines = renderTable(
      [
        row("3f2a9c1e-5d0b-4c7e-9a51-0e6f1d2c3b4a", {
          title: long,
          turns: 1234,
          model: "a-model-with-a-very-long-name-indeed",
          modelProvider: "codex_harness",
          providerUrl: "http://127.0.0.1:8080/v1"
        })
      ],
      { now }
    )
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(80)
    expect(lines[1]).toMatch(/^3f2a9c1e {2}a prompt far .*… {2}01-05 09:07 {2} 1234 {2}a-model-with-.*…$/)
  })

  it("the harness's own provider is shown as the host of the recorded URL", () => {
    const r = rowOf("s1", new Date(), [user("hi"), binding("local-model", "codex_harness", "http://127.0.0.1:8080/v1"), turn, turn])
    expect(r).toMatchObject({ title: "hi", turns: 2, model: "local-model", modelProvider: "codex_harness", threadId: "thread-1" })
    expect(renderTable([r], { now })[1]).toMatch(/ {2}local-model \/ 127\.0\.0\.1:8080$/)
  })

  it("an explicit model choice is the model later turns ask for; a detached session keeps its last runtime", () => {
    const records: Array<SessionRecord> = [
      binding("m1", "openai"),
      { _tag: "model", at, model: "m2" },
      { _tag: "detached", at, threadId: "thread-1", reason: "compaction unconfirmed" }
    ]
    expect(rowOf("s", new Date(), records)).toMatchObject({ threadId: null, model: "m2", modelProvider: "openai" })
  })

  it("local time: month-day hour:minute within the year, the date alone before it", () => {
    expect(compactTime(new Date(2026, 2, 4, 5, 6), now)).toBe("03-04 05:06")
    expect(compactTime(new Date(2024, 10, 9, 23, 0), now)).toBe("2024-11-09")
  })
})
