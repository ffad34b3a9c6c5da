// The order the suite's files start in: the longest first (longest processing time first, the classic rule for
// packing jobs onto a few workers). Vitest's own order uses the durations of the last run on this machine, which a
// fresh clone (CI, a newcomer) does not have; it then starts the largest files first, and a small file that runs for
// minutes (embed-package: an npm pack, two installs and tsc) started last and ran alone at the end while the other
// workers sat idle. So the durations come from a table checked in with the tests (test/file-durations.json, seconds
// from a whole run; `node dist/scripts/file-durations.js REPORT` writes it from a vitest JSON report). A file the table
// does not know (a new one) goes first: it may be long, and a short one costs little wherever it runs.
import * as fs from "node:fs"
import * as path from "node:path"
import type { TestSpecification } from "vitest/node"
import { BaseSequencer } from "vitest/node"

export const durationsFile = path.resolve("test", "file-durations.json")

/** seconds by file path relative to the repository; empty when the table is missing or unreadable (Vitest's order) */
export const readDurations = (file: string = durationsFile): ReadonlyMap<string, number> => {
  try {
    const table = JSON.parse(fs.readFileSync(file, "utf8")) as unknown
    if (typeof table !== "object" || table === null) return new Map()
    return new Map(Object.entries(table).filter((entry): entry is [string, number] => typeof entry[1] === "number"))
  } catch {
    return new Map()
  }
}

/** longest first; unknown files before every known one, in the order they came */
export const longestFirst = <A>(items: ReadonlyArray<A>, keyOf: (item: A) => string, durations: ReadonlyMap<string, number>): Array<A> =>
  items
    .map((item, index) => ({ item, index, seconds: durations.get(keyOf(item)) ?? Number.POSITIVE_INFINITY }))
    .sort((a, b) => (b.seconds === a.seconds ? a.index - b.index : b.seconds > a.seconds ? 1 : -1))
    .map(({ item }) => item)

export class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const durations = readDurations()
    if (durations.size === 0) return super.sort(files)
    const root = this.ctx.config.root
    return longestFirst(files, (spec) => path.relative(root, spec.moduleId).split(path.sep).join("/"), durations)
  }
}
