// Signalling and inspecting the app-server's process group after it has exited.
//
// "Is the group empty?" cannot be asked with kill(-pgid, 0) alone: a zombie still counts as a member until its parent
// reaps it, and an orphan's parent is PID 1 (or a subreaper), which in containers and VMs may reap late: hundreds of
// milliseconds were seen here for a `git` the app-server had started. A zombie holds nothing (no pipes, no files, no
// CPU), so on Linux the members are counted from /proc, zombies left out; elsewhere the signal probe stays.
import * as fs from "node:fs"

export const signalGroup = (pgid: number | undefined, signal: NodeJS.Signals): void => {
  if (pgid === undefined) return
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: the group is already gone
  }
}

/** one buffer for every stat read: a /proc stat line is a short name and 50-odd numbers, far under 4 KB */
const statBuffer = Buffer.allocUnsafe(4096)

/**
 * State letter, parent and group of one process from /proc/PID/stat; undefined when it is gone or unreadable. One
 * open, read and close into a buffer kept for it: readFileSync reads a /proc file (size 0 to stat) in a growing loop,
 * which made a scan of 70 processes take 8 ms here against 1-2.
 */
const readStat = (pid: string): { readonly state: string; readonly pgrp: number } | undefined => {
  let text: string
  try {
    const fd = fs.openSync(`/proc/${pid}/stat`, "r")
    try {
      text = statBuffer.toString("latin1", 0, fs.readSync(fd, statBuffer, 0, statBuffer.length, 0))
    } finally {
      fs.closeSync(fd)
    }
  } catch {
    return undefined
  }
  // the command name is in parentheses and may itself contain spaces or ')': the fields start after the last ')'
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ")
  const pgrp = Number(fields[2])
  return fields[0] !== undefined && Number.isInteger(pgrp) ? { state: fields[0], pgrp } : undefined
}

const procReadable = (() => {
  let known: boolean | undefined
  return () => (known ??= fs.existsSync("/proc/self/stat"))
})()

/**
 * The pids of the group's members that are still running (not zombies). Undefined where /proc cannot be read, so the
 * caller falls back to the signal probe.
 */
export const liveMembers = (pgid: number): ReadonlyArray<number> | undefined => {
  if (!procReadable()) return undefined
  let entries: Array<string>
  try {
    entries = fs.readdirSync("/proc")
  } catch {
    return undefined
  }
  const live: Array<number> = []
  for (const entry of entries) {
    const first = entry.charCodeAt(0)
    if (first < 48 || first > 57) continue
    const stat = readStat(entry)
    if (stat !== undefined && stat.pgrp === pgid && stat.state !== "Z" && stat.state !== "X") live.push(Number(entry))
  }
  return live
}

/** True while some process of the group is still running; zombies waiting for a late reaper do not count. */
export const groupAlive = (pgid: number | undefined): boolean => {
  if (pgid === undefined) return false
  // the signal probe first: a group with no member at all (the usual end: the app-server exited and was reaped, and
  // had no children left) is known empty without reading /proc, which takes a stat of every process on the machine
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    // ESRCH: no such group. EPERM: members this process may not signal (another user's), which /proc still shows
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false
  }
  const members = liveMembers(pgid)
  return members === undefined || members.length > 0
}
