// The suite's file order (test/support/sequencer.ts): longest first from the checked-in table, unknown files before them.
import { describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { durationsFile, longestFirst, readDurations } from "../support/sequencer.js"

describe("the suite's file order", () => {
  it("starts unknown files first, in the order they came, then the known ones longest first", () => {
    const durations = new Map([["a", 5], ["b", 200], ["c", 40], ["d", 40]])
    expect(longestFirst(["a", "x", "b", "c", "y", "d"], (f) => f, durations)).toEqual(["x", "y", "b", "c", "d", "a"])
  })

  it("reads the table as seconds by file, and an unreadable table as none", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "durations-"))
    try {
      const good = path.join(dir, "good.json")
      fs.writeFileSync(good, JSON.stringify({ "test/a.test.ts": 12, "test/b.test.ts": "slow" }))
      expect([...readDurations(good)]).toEqual([["test/a.test.ts", 12]])
      const bad = path.join(dir, "bad.json")
      fs.writeFileSync(bad, "{ not json")
      expect(readDurations(bad).size).toBe(0)
      expect(readDurations(path.join(dir, "missing.json")).size).toBe(0)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("has a table that names only files that exist", () => {
    const table = readDurations(durationsFile)
    expect(table.size).toBeGreaterThan(0)
    for (const file of table.keys()) expect(fs.existsSync(file), file).toBe(true)
  })
})
