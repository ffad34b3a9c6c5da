// Writes test/file-durations.json, the table the suite's file order comes from (test/support/sequencer.ts), from a
// vitest JSON report (`npm test -- --reporter=json --outputFile.json=REPORT`, as .ci/run writes one): each test file's
// wall time in whole seconds. Run it after a whole run on a quiet machine when files were added or changed much.
//
//   node dist/scripts/file-durations.js .vitest-report.json
import * as fs from "node:fs"
import * as path from "node:path"

interface Report {
  readonly testResults?: ReadonlyArray<{ readonly name?: unknown; readonly startTime?: unknown; readonly endTime?: unknown }>
}

const reportPath = process.argv[2]
if (reportPath === undefined) {
  process.stderr.write("usage: node dist/scripts/file-durations.js VITEST_JSON_REPORT\n")
  process.exit(2)
}
let report: Report
try {
  report = JSON.parse(fs.readFileSync(reportPath, "utf8")) as Report
} catch (error) {
  process.stderr.write(`file-durations: ${reportPath} is not a readable JSON report: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
}
const root = process.cwd()
const rows: Array<[string, number]> = []
for (const result of report.testResults ?? []) {
  const { endTime, name, startTime } = result
  if (typeof name !== "string" || typeof startTime !== "number" || typeof endTime !== "number") continue
  rows.push([path.relative(root, name).split(path.sep).join("/"), Math.max(1, Math.round((endTime - startTime) / 1000))])
}
if (rows.length === 0) {
  process.stderr.write(`file-durations: ${reportPath} names no test file with its times\n`)
  process.exit(1)
}
rows.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
const out = path.join(root, "test", "file-durations.json")
fs.writeFileSync(out, `${JSON.stringify(Object.fromEntries(rows), null, 2)}\n`)
process.stdout.write(`${out}: ${rows.length} files, longest ${rows[0]![0]} ${rows[0]![1]} s\n`)
