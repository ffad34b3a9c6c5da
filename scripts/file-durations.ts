// Writes test/file-durations.json, the table the suite's file order comes from (test/support/sequencer.ts), from a
// vitest JSON report (`npm test -- --reporter=json --outputFile.json=REPORT`, as .ci/run writes one): each test file's
// wall time in whole seconds. Run it from the repository's root after a whole run when files were added or changed much.
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
const timed: Array<{ readonly file: string; readonly seconds: number }> = []
for (const result of report.testResults ?? []) {
  const { endTime, name, startTime } = result
  if (typeof name !== "string" || typeof startTime !== "number" || typeof endTime !== "number") continue
  timed.push({ file: name.split(path.sep).join("/"), seconds: Math.max(1, Math.round((endTime - startTime) / 1000)) })
}
// the report names files by absolute path in the clone that ran them, which need not be this one: the table names
// them from the clone's root, the directory that holds their common test/ folder
const common = timed.reduce((prefix, { file }) => {
  let i = 0
  while (i < prefix.length && i < file.length && prefix[i] === file[i]) i++
  return prefix.slice(0, i)
}, timed[0]?.file ?? "")
const root = common.slice(0, common.lastIndexOf("/test/") + 1)
const rows: Array<[string, number]> = timed.map(({ file, seconds }) => [file.slice(root.length), seconds])
if (rows.length === 0 || root === "") {
  process.stderr.write(`file-durations: ${reportPath} names no file under a test/ folder with its times\n`)
  process.exit(1)
}
rows.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
const out = path.join(process.cwd(), "test", "file-durations.json")
fs.writeFileSync(out, `${JSON.stringify(Object.fromEntries(rows), null, 2)}\n`)
process.stdout.write(`${out}: ${rows.length} files, longest ${rows[0]![0]} ${rows[0]![1]} s\n`)
