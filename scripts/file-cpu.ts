// Each test file's CPU time, for finding what makes the suite slow on a machine whose CPU is the limit (README: Tests).
// Runs Vitest with one file at a time (vitest.config.ts, under CODEX_HARNESS_FILE_CPU) and a setup file that reads the
// machine's busy time around each file (test/support/fileCpu.ts), then prints the files by CPU, most first. Linux only
// (/proc/stat); the figure counts everything the machine ran meanwhile, so run it on a quiet machine. The whole suite
// one file at a time takes several times as long as `npm test` (files wait on their processes one after another); name
// files (as for `vitest run`) to measure only those.
//
//   npm run build && node dist/scripts/file-cpu.js [VITEST_FILE_FILTER...]
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

if (!fs.existsSync("/proc/stat")) {
  process.stderr.write("file-cpu: needs Linux's /proc/stat\n")
  process.exit(1)
}
const log = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "file-cpu-")), "files.log")
const vitest = path.join("node_modules", "vitest", "vitest.mjs")
const ran = spawnSync(process.execPath, [vitest, "run", ...process.argv.slice(2)], {
  stdio: "inherit",
  env: { ...process.env, CODEX_HARNESS_FILE_CPU: log }
})
const rows = (fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "").split("\n").filter((line) => line !== "").map((line) => {
  const [cpu, wall, ...file] = line.split(" ")
  return { cpu: Number(cpu), wall: Number(wall), file: path.relative(process.cwd(), file.join(" ")) }
}).sort((a, b) => b.cpu - a.cpu)
const total = rows.reduce((sum, row) => sum + row.cpu, 0)
process.stdout.write(`\nCPU-s  wall s  share  file (${rows.length} files, ${total.toFixed(0)} CPU-s in all)\n`)
for (const row of rows) {
  const share = total > 0 ? `${((100 * row.cpu) / total).toFixed(1)}%` : "-"
  process.stdout.write(`${row.cpu.toFixed(1).padStart(6)}  ${row.wall.toFixed(1).padStart(6)}  ${share.padStart(5)}  ${row.file}\n`)
}
fs.rmSync(path.dirname(log), { recursive: true, force: true })
process.exit(ran.status ?? 1)
