// A setup file for `scripts/file-cpu.ts` only (vitest.config.ts adds it when CODEX_HARNESS_FILE_CPU names a log): the
// machine's busy CPU time (/proc/stat: user, nice, system, irq, softirq, all cores) from a file's first hook to its last,
// appended to that log as "CPU-SECONDS WALL-SECONDS FILE". With one file at a time (the script runs one worker) that is
// the file's own cost, with everything it started (app-servers, CLIs, PostgreSQL) and whatever else the machine ran.
import * as fs from "node:fs"
import { afterAll, beforeAll, expect } from "vitest"

const log = process.env["CODEX_HARNESS_FILE_CPU"]
/** /proc/stat's first line, in clock ticks (100 a second on Linux) */
const busyTicks = (): number => {
  const fields = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  return fields[0]! + fields[1]! + fields[2]! + fields[5]! + fields[6]!
}

if (log !== undefined && log !== "") {
  let ticks = 0
  let started = 0
  beforeAll(() => {
    ticks = busyTicks()
    started = Date.now()
  })
  afterAll(() => {
    const cpu = (busyTicks() - ticks) / 100
    fs.appendFileSync(log, `${cpu.toFixed(1)} ${((Date.now() - started) / 1000).toFixed(1)} ${expect.getState().testPath ?? "(unknown)"}\n`)
  })
}
