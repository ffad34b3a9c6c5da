// Processes for bench/figures.ts: timed spawns of fresh `node` processes, /proc readings, and the leftover check.
//
// Every process the bench starts inherits FIGURES_MARK (set once in this process's environment), and so does
// everything those start (the app-server, its shells, hook relays). After each measurement the bench looks through
// /proc for live processes carrying the mark: one still alive a few seconds after its measurement ended is a leftover
// (killed, counted, and the bench exits 1).
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { performance } from "node:perf_hooks"

export const MARK_ENV = "FIGURES_MARK"
export const mark = `figures-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
process.env[MARK_ENV] = mark

const markBytes = Buffer.from(`${MARK_ENV}=${mark}\0`)

/** resident and peak resident memory of a live process, in kB; undefined once it is gone */
export const memoryKb = (pid: number): { readonly rss: number; readonly hwm: number } | undefined => {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0)
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") }
  } catch {
    return undefined
  }
}

const state = (pid: number): string | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3)
  } catch {
    return undefined
  }
}

/** live (not zombie) processes other than this one that carry this run's mark */
export const marked = (): ReadonlyArray<number> => {
  const found: Array<number> = []
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      if (!fs.readFileSync(`/proc/${entry}/environ`).includes(markBytes)) continue
    } catch {
      continue // gone meanwhile, or not ours to read
    }
    const s = state(Number(entry))
    if (s !== undefined && s !== "Z" && s !== "X") found.push(Number(entry))
  }
  return found
}

/** the pids of every live process below `root`, nearest first (read from /proc once) */
export const descendants = (root: number): ReadonlyArray<number> => {
  const children = new Map<number, Array<number>>()
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // gone meanwhile
    }
  }
  const found: Array<number> = []
  const queue = [...(children.get(root) ?? [])]
  while (queue.length > 0) {
    const pid = queue.shift()!
    found.push(pid)
    queue.push(...(children.get(pid) ?? []))
  }
  return found
}

export const cmdline = (pid: number): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim()
  } catch {
    return ""
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export interface Leftovers {
  /** marked processes alive the moment the measurement ended (most go within the grace) */
  readonly atEnd: number
  /** still alive after the grace: killed, and the bench fails */
  readonly left: ReadonlyArray<string>
}

/**
 * waits up to `graceMs` for every marked process to go; kills and names the ones that stay. `spared` (read at each look)
 * are processes meant to outlive the measurement (a running `serve` and everything below it): neither waited for nor
 * killed; they get their own check when they are stopped.
 */
export const settle = async (graceMs = 3_000, spared: () => ReadonlySet<number> = () => new Set()): Promise<Leftovers> => {
  const look = () => {
    const keep = spared()
    return marked().filter((pid) => !keep.has(pid))
  }
  const atEnd = look().length
  const deadline = performance.now() + graceMs
  let alive = look()
  while (alive.length > 0 && performance.now() < deadline) {
    await sleep(50)
    alive = look()
  }
  const left = alive.map((pid) => `${pid} ${cmdline(pid).slice(0, 120)}`)
  for (const pid of alive) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {}
  }
  return { atEnd, left }
}

export interface Timed {
  /** from spawn() to the process's exit, ms */
  readonly ms: number
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
  /** VmHWM of the process as it exited (kB), when it ran with the peak preload */
  readonly peakKb: number | undefined
  /** when each stdout line equal to NodeRun.watchLine arrived, ms after spawn() */
  readonly lineTimes: ReadonlyArray<number>
  /** process.cpuUsage() of the process as it exited (user + system, ms), when it ran with NodeRun.cpu */
  readonly cpuMs: number | undefined
  /** the system (kernel) share of cpuMs: writes, fsyncs, pipes */
  readonly cpuSysMs?: number | undefined
}

let preloadPath: string | undefined
let cpuPreloadPath: string | undefined
let peakCounter = 0

/**
 * A CommonJS preload that writes the process's own CPU time (process.cpuUsage(): this Node process's threads, not its
 * children, so not the app-server's) as `user system` microseconds to $FIGURES_CPU_FILE as it exits.
 */
const cpuPreload = (dir: string): string => {
  if (cpuPreloadPath !== undefined) return cpuPreloadPath
  cpuPreloadPath = path.join(dir, "cpu-preload.cjs")
  fs.writeFileSync(
    cpuPreloadPath,
    `"use strict";const fs=require("fs");const out=process.env.FIGURES_CPU_FILE;` +
      `if(out)process.on("exit",()=>{try{const u=process.cpuUsage();fs.writeFileSync(out,u.user+" "+u.system)}catch{}});`
  )
  return cpuPreloadPath
}

/** a CommonJS preload that writes the process's VmHWM to $FIGURES_PEAK_FILE as it exits */
const preload = (dir: string): string => {
  if (preloadPath !== undefined) return preloadPath
  preloadPath = path.join(dir, "peak-preload.cjs")
  fs.writeFileSync(
    preloadPath,
    `"use strict";const fs=require("fs");const out=process.env.FIGURES_PEAK_FILE;` +
      `if(out)process.on("exit",()=>{try{const m=/VmHWM:\\s+(\\d+)/.exec(fs.readFileSync("/proc/self/status","utf8"));` +
      `fs.writeFileSync(out,m?m[1]:"0")}catch{}});`
  )
  return preloadPath
}

export interface NodeRun {
  /** arguments after `node` */
  readonly args: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
  /** written to stdin at once, then stdin is ended (a piped chat's messages) */
  readonly stdin?: string
  /** with a directory, the process runs with the peak preload (kept in that directory) and reports its VmHWM */
  readonly peakDir?: string
  /** a stdout line whose arrival times are wanted (a reply) */
  readonly watchLine?: string
  /** with a directory, the process runs with the CPU preload (kept there) and reports its own CPU time at exit */
  readonly cpuDir?: string
  /** called with the pid once the process has been spawned */
  readonly onSpawn?: (pid: number) => void
  readonly timeoutMs?: number
}

/**
 * A fresh `node` process, timed from spawn() to its exit (not to the end of its stdio: a grandchild that inherited a
 * pipe must not count).
 */
export const timedNode = (run: NodeRun): Promise<Timed> =>
  new Promise((resolve, reject) => {
    const peakFile = run.peakDir !== undefined ? path.join(run.peakDir, `peak-${peakCounter++}`) : undefined
    const cpuFile = run.cpuDir !== undefined ? path.join(run.cpuDir, `cpu-${peakCounter++}`) : undefined
    const args = [
      ...(peakFile !== undefined ? ["--require", preload(run.peakDir!)] : []),
      ...(cpuFile !== undefined ? ["--require", cpuPreload(run.cpuDir!)] : []),
      ...run.args
    ]
    const env = {
      ...process.env,
      ...run.env,
      ...(peakFile !== undefined ? { FIGURES_PEAK_FILE: peakFile } : {}),
      ...(cpuFile !== undefined ? { FIGURES_CPU_FILE: cpuFile } : {})
    }
    let stdout = ""
    let stderr = ""
    let scanned = 0
    const lineTimes: Array<number> = []
    const t0 = performance.now()
    const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"], env, cwd: run.cwd ?? process.cwd() })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`node ${args.join(" ").slice(0, 200)} took over ${(run.timeoutMs ?? 120_000) / 1000} s; stderr: ${stderr}`))
    }, run.timeoutMs ?? 120_000)
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (c: string) => {
      stdout += c
      if (run.watchLine === undefined) return
      let nl: number
      while ((nl = stdout.indexOf("\n", scanned)) >= 0) {
        if (stdout.slice(scanned, nl) === run.watchLine) lineTimes.push(performance.now() - t0)
        scanned = nl + 1
      }
    })
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", (c: string) => (stderr = (stderr + c).slice(-8000)))
    child.stdin.on("error", () => {})
    child.once("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once("spawn", () => run.onSpawn?.(child.pid!))
    child.once("exit", (code, signal) => {
      const ms = performance.now() - t0
      clearTimeout(timer)
      let peakKb: number | undefined
      if (peakFile !== undefined) {
        try {
          peakKb = Number(fs.readFileSync(peakFile, "utf8"))
        } catch {}
      }
      let cpuMs: number | undefined
      let cpuSysMs: number | undefined
      if (cpuFile !== undefined) {
        try {
          const [user, system] = fs.readFileSync(cpuFile, "utf8").split(" ").map(Number)
          if (Number.isFinite(user) && Number.isFinite(system)) {
            cpuMs = (user! + system!) / 1000
            cpuSysMs = system! / 1000
          }
        } catch {}
      }
      // the rest of its output, but never long: a grandchild that inherited a pipe may hold it open
      let open = 2
      const done = () => resolve({ ms, code, signal, stdout, stderr, peakKb, lineTimes, cpuMs, cpuSysMs })
      const late = setTimeout(done, 1_500)
      const closed = () => {
        if (--open === 0) {
          clearTimeout(late)
          done()
        }
      }
      if (child.stdout.readableEnded) closed()
      else child.stdout.once("end", closed)
      if (child.stderr.readableEnded) closed()
      else child.stderr.once("end", closed)
    })
    if (run.stdin !== undefined) child.stdin.end(run.stdin)
  })

/** Node holding a timer, as a baseline: its RSS once it has settled */
export const nodeBaselineKb = async (): Promise<{ readonly rss: number; readonly hwm: number }> => {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })
  await new Promise<void>((resolve) => child.once("spawn", () => resolve()))
  await sleep(500)
  const mem = memoryKb(child.pid!) ?? { rss: 0, hwm: 0 }
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  child.kill("SIGKILL")
  await gone
  return mem
}

/** CPU time (user + system) of a live process from /proc/PID/stat, ms (clock-tick resolution); undefined once gone */
export const cpuOfPid = (pid: number): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // fields from index 0 = state (field 3); utime is field 14, stime field 15
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks
  } catch {
    return undefined
  }
}
/** CPU ms of a process so far: its own user+system time and that of the children it has waited for (cutime, cstime) */
export const cpuWithChildrenOfPid = (pid: number): number => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / clockTicks
  } catch {
    return 0
  }
}
/** USER_HZ: 100 on every Linux Node runs on in practice */
const clockTicks = 100

/**
 * Two busy loops (`node -e "for(;;){}"`), the "loaded" condition of the hot-path row: started without the run's mark
 * (they are no leftovers of a measurement), SIGKILLed and reaped by `stop`. `running` lists them for a finalizer.
 */
export const busyLoops = {
  running: new Set<number>(),
  start: async (count = 2): Promise<{ readonly pids: ReadonlyArray<number>; readonly stop: () => Promise<void> }> => {
    const env: Record<string, string | undefined> = { ...process.env }
    delete env[MARK_ENV]
    const children = await Promise.all(Array.from({ length: count }, () =>
      new Promise<import("node:child_process").ChildProcess>((resolve, reject) => {
        const child = spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore", env })
        child.once("error", reject)
        child.once("spawn", () => {
          busyLoops.running.add(child.pid!)
          resolve(child)
        })
      })
    ))
    const stop = async () => {
      await Promise.all(children.map((child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve()
          child.once("exit", () => resolve())
          child.kill("SIGKILL")
        }).then(() => void busyLoops.running.delete(child.pid!))
      ))
      const alive = children.filter((c) => {
        try {
          process.kill(c.pid!, 0)
          return true
        } catch {
          return false
        }
      })
      if (alive.length > 0) throw new Error(`busy loops still alive after SIGKILL: ${alive.map((c) => c.pid).join(", ")}`)
    }
    return { pids: children.map((c) => c.pid!), stop }
  },
  /** for a finalizer (Ctrl-C): SIGKILL whatever is still running */
  killAll: () => {
    for (const pid of busyLoops.running) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {}
    }
    busyLoops.running.clear()
  }
}
