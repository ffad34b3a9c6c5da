// `doctor`'s leftover checks: what a harness that was killed (SIGKILL, a crash, a closed terminal) can leave behind.
// - app-servers of this state dir whose harness is gone (an app-server ends when its stdin closes, so one still
//   running without its harness is stuck), and hook relays whose harness is gone (a relay has its own deadline, so one
//   still running is stuck too). Processes are read from /proc (Linux); elsewhere the check is skipped. An app-server
//   of a harness that is still running (a `chat` in another terminal) is not a leftover: it is named, not failed.
// - relay directories (`codex-hr-<pid>-*` in the temp dir, and the old `codex-hr-XXXXXX` without a pid: RelayDirs.ts)
//   of this user whose owner process is gone. Every harness removes those when it starts its relay; they are reported,
//   not removed, here.
import type { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as RelayDirs from "../../approvals/RelayDirs.js"
import { describeFileError } from "../../platform/fileErrors.js"
import { isAlive } from "../../platform/processAlive.js"
import { type CheckFailed, type CheckSkipped, failed, type Passed, passed, skipped } from "./check.js"

interface Proc {
  readonly pid: number
  readonly ppid: number
  readonly args: ReadonlyArray<string>
  readonly env: ReadonlyMap<string, string>
  readonly cwd: string | undefined
}

const me = () => (typeof process.getuid === "function" ? process.getuid() : undefined)

const readProc = (pid: number): Proc | undefined => {
  try {
    if (fs.statSync(`/proc/${pid}`).uid !== me()) return undefined
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // fields after the parenthesised command: state ppid ...; a zombie holds nothing
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (fields[0] === "Z") return undefined
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((a) => a !== "")
    const env = new Map<string, string>()
    for (const entry of fs.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")) {
      const eq = entry.indexOf("=")
      if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1))
    }
    let cwd: string | undefined
    try {
      cwd = fs.readlinkSync(`/proc/${pid}/cwd`)
    } catch {
      cwd = undefined
    }
    return { pid, ppid: Number(fields[1]), args, env, cwd }
  } catch {
    // gone since the listing, or not ours to read
    return undefined
  }
}

const isAppServer = (p: Proc) => p.args.includes("app-server") && p.args.some((a) => /(^|\/)codex(\.exe|\.js)?$/.test(a))
const isHookRelay = (p: Proc) => p.args.includes("hook-relay") && p.args.includes("--socket")
// the package's bin, or the CLI's own entry points (the bundle, the tsc output)
const isHarness = (p: Proc) =>
  p.args.some((a) => /(^|\/)(codex-harness(\.js)?|bundle\/cli\.cjs|cli\/main\.js)$/.test(a)) && !isHookRelay(p)

/** The state dir a harness process runs with: `--state-dir`, else $CODEX_HARNESS_HOME, else ~/.codex-harness. */
const stateDirOfHarness = (p: Proc): string => {
  const base = p.cwd ?? "/"
  for (let i = 0; i < p.args.length; i++) {
    const arg = p.args[i]!
    if (arg === "--state-dir" && i + 1 < p.args.length) return path.resolve(base, p.args[i + 1]!)
    if (arg.startsWith("--state-dir=")) return path.resolve(base, arg.slice("--state-dir=".length))
  }
  const home = p.env.get("CODEX_HARNESS_HOME")
  if (home !== undefined && home !== "") return path.resolve(base, home)
  return path.join(p.env.get("HOME") ?? os.homedir(), ".codex-harness")
}

const within = (dir: string, value: string | undefined) => value !== undefined && (value === dir || value.startsWith(dir + path.sep))

const listed = (items: ReadonlyArray<string>, max = 3) =>
  items.length <= max ? items.join(", ") : `${items.slice(0, max).join(", ")} and ${items.length - max} more`

export const leftoverProcesses = (stateDir: string): Effect.Effect<Passed<void>, CheckFailed | CheckSkipped> =>
  Effect.gen(function* () {
    if (process.platform !== "linux" || !fs.existsSync("/proc/self/cmdline")) return yield* skipped("needs /proc (Linux)")
    const procs = fs.readdirSync("/proc")
      .filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid)
      .map((e) => readProc(Number(e)))
      .filter((p): p is Proc => p !== undefined)
    const byPid = new Map(procs.map((p) => [p.pid, p]))
    const running: Array<string> = []
    const stuck: Array<{ readonly pid: number; readonly what: string }> = []
    for (const p of procs.filter(isAppServer)) {
      const parent = byPid.get(p.ppid)
      const harness = parent !== undefined && isHarness(parent) ? parent : undefined
      if (harness !== undefined) {
        if (stateDirOfHarness(harness) === stateDir) running.push(`app-server ${p.pid} of harness ${harness.pid}`)
      } else if (within(stateDir, p.env.get("CODEX_HOME")) || p.env.get("CODEX_HARNESS_HOME") === stateDir) {
        // its harness is gone, and its environment says it was started for this state dir
        stuck.push({ pid: p.pid, what: `app-server ${p.pid}` })
      }
    }
    for (const p of procs.filter(isHookRelay)) {
      const socket = p.args[p.args.indexOf("--socket") + 1] ?? ""
      const owner = RelayDirs.ownerOf(path.basename(path.dirname(socket)))
      if (owner !== undefined && !isAlive(owner)) stuck.push({ pid: p.pid, what: `hook relay ${p.pid} of harness ${owner}` })
    }
    if (stuck.length > 0) {
      const what = listed(stuck.map((s) => s.what))
      return yield* failed(`still running without their harness: ${what}; end them with: kill ${stuck.map((s) => s.pid).join(" ")}`)
    }
    return passed(`no leftover app-servers or hook relays${running.length > 0 ? ` (running with a live harness: ${listed(running)})` : ""}`)
  })

export const staleRelayDirs = (tmp: string = os.tmpdir()): Effect.Effect<Passed<void>, CheckFailed, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    // the same entries a starting relay would remove (RelayDirs.ts): reported here, never removed
    const stale = yield* RelayDirs.staleDirs(tmp).pipe(
      Effect.mapError((e) => failed(`cannot read ${tmp}: ${describeFileError(e)}`))
    )
    if (stale.length > 0) {
      const what = stale.length === 1 ? "1 hook relay directory of a harness that is gone" : `${stale.length} hook relay directories of harnesses that are gone`
      return yield* failed(`${what}: ${listed(stale)} (the next harness to start its relay removes them; so does the hook relay check)`)
    }
    return passed(`no stale hook relay directories in ${tmp}`)
  })
