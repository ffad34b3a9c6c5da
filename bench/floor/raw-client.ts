// The raw floor: the least a Node program must do to run turns on the native `codex app-server`. No Effect, no schema
// decoding: node:child_process, JSON.stringify and JSON.parse, nothing else (so its start costs what Node's does).
//
// One JSON argument configures it (bench/figures.ts builds it, with the binary and `-c` provider overrides the harness
// uses and a fresh CODEX_HOME):
//   spawn the binary in its own process group, initialize / initialized; then `threads` sessions at once, each a
//   thread/start and `turns` turns one after the other (turn/start, read stdout lines until that turn's
//   turn/completed); then SIGKILL every process group below it (no orphan can outlive it, see killTree) and exit.
// With `report` it prints one JSON line on stdout: the time of the turns phase, the longest wait from asking for a turn
// to its turn/start answer (a session's first wait includes its thread/start), command executions seen, and the
// app-server's RSS and peak RSS after the turns.
//
// Usage: node dist/bench/floor/raw-client.js '<json config>'
import { spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { performance } from "node:perf_hooks"

export interface RawConfig {
  readonly command: string
  readonly args: ReadonlyArray<string>
  /** added to this process's environment (CODEX_HOME, the provider key) */
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  readonly threads: number
  readonly turns: number
  /** the text of turn i of thread t is `${prefix}${t}m${i}]`: the bench's model scripts replies by it */
  readonly prefix: string
  readonly model: string
  readonly approvalPolicy: string
  readonly sandbox: string
  readonly report: boolean
  /** thread/start's `config` (bench/hook-floor.ts: the harness's no-op hooks); none by default */
  readonly threadConfig?: Readonly<Record<string, unknown>> | undefined
}

export interface RawReport {
  /** since this process started: initialize answered, then every turn done */
  readonly initializedAtMs: number
  readonly doneAtMs: number
  readonly turnsMs: number
  readonly maxWaitMs: number
  /** the most turns running at once (answered turn/start, no turn/completed yet) */
  readonly maxInFlight: number
  readonly turnMsMedian: number
  readonly commands: number
  readonly hooksRun: number
  readonly serverRequests: number
  readonly appServerRssKb: number
  readonly appServerHwmKb: number
  readonly userAgent: string
}

interface Message {
  readonly id?: number | string
  readonly method?: string
  readonly result?: any
  readonly error?: { readonly message?: string }
  readonly params?: any
}

const config = JSON.parse(process.argv[2] ?? "{}") as RawConfig
const child = spawn(config.command, [...config.args], {
  stdio: ["pipe", "pipe", "pipe"],
  env: { ...process.env, ...config.env },
  cwd: config.cwd,
  detached: true // its own process group: one kill ends it and everything it started
})

let stderrTail = ""
let exited = false
const fail = (message: string): never => {
  process.stderr.write(`raw-client: ${message}\nstderr of codex: ${stderrTail.slice(-1500)}\n`)
  killTree()
  process.exit(1)
}

const pending = new Map<number, (message: Message) => void>()
const turnEnds = new Map<string, (status: string) => void>()
const endedEarly = new Map<string, string>()
let nextId = 0
let buffer = ""
let commands = 0
/** hooks Codex ran (hook/completed), with a `threadConfig` that injects some */
let hooksRun = 0
let serverRequests = 0

const write = (message: unknown) => child.stdin.write(JSON.stringify(message) + "\n")

const onLine = (line: string) => {
  const message = JSON.parse(line) as Message
  if (message.method === undefined) {
    const waiter = pending.get(message.id as number)
    pending.delete(message.id as number)
    waiter?.(message)
  } else if (message.id !== undefined) {
    // a server request (an approval, say): none is expected with approvalPolicy never; refused so nothing hangs
    serverRequests++
    write({ id: message.id, error: { code: -32601, message: "the raw floor answers no requests" } })
  } else if (message.method === "turn/completed") {
    const turnId = message.params?.turn?.id as string
    const status = (message.params?.turn?.status as string | undefined) ?? "unknown"
    const waiter = turnEnds.get(turnId)
    if (waiter !== undefined) {
      turnEnds.delete(turnId)
      waiter(status)
    } else endedEarly.set(turnId, status)
  } else if (message.method === "item/completed" && message.params?.item?.type === "commandExecution") {
    commands++
  } else if (message.method === "hook/completed") {
    hooksRun++
  }
}

child.stdout.setEncoding("utf8")
child.stdout.on("data", (chunk: string) => {
  buffer += chunk
  let nl: number
  while ((nl = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, nl)
    buffer = buffer.slice(nl + 1)
    if (line.length > 0) onLine(line)
  }
})
child.stderr.setEncoding("utf8")
child.stderr.on("data", (text: string) => (stderrTail = (stderrTail + text).slice(-4000)))
child.stdin.on("error", () => {})
child.once("error", (error) => fail(`cannot spawn ${config.command}: ${error.message}`))
child.once("exit", (code, signal) => {
  exited = true
  fail(`codex exited early (${signal ?? code})`)
})

const request = (method: string, params: unknown): Promise<any> => {
  if (exited) return Promise.reject(new Error(`codex exited before ${method}`))
  const id = nextId++
  return new Promise((resolve, reject) => {
    pending.set(id, (message) =>
      message.error !== undefined ? reject(new Error(`${method}: ${message.error.message ?? "?"}`)) : resolve(message.result))
    write({ id, method, params })
  })
}

const turnEnd = (turnId: string): Promise<string> => {
  const early = endedEarly.get(turnId)
  if (early !== undefined) {
    endedEarly.delete(turnId)
    return Promise.resolve(early)
  }
  return new Promise((resolve) => turnEnds.set(turnId, resolve))
}

const memory = (pid: number) => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0)
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") }
  } catch {
    return { rss: 0, hwm: 0 }
  }
}

/**
 * Ends the app-server and everything below it. Its own group is not enough: Codex starts its login-shell snapshot in a
 * session of its own (setsid), which would live on after the app-server for as long as the user's shell rc files run.
 * So every process group found below it goes too (read from /proc before anything is killed, while the tree is whole).
 */
function killTree(): void {
  const children = new Map<number, Array<{ readonly pid: number; readonly pgid: number }>>()
  for (const entry of readdirSync("/proc")) {
    if (entry.charCodeAt(0) > 57) continue // not a pid
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const ppid = Number(fields[1])
      const list = children.get(ppid) ?? []
      list.push({ pid: Number(entry), pgid: Number(fields[2]) })
      children.set(ppid, list)
    } catch {}
  }
  const groups = new Set<number>([child.pid!])
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      groups.add(c.pgid)
      walk(c.pid)
    }
  }
  walk(child.pid!)
  for (const group of groups) {
    try {
      process.kill(-group, "SIGKILL")
    } catch {}
  }
}

const main = async () => {
  const timer = setTimeout(() => fail("no result within 300 s"), 300_000)
  const init = await request("initialize", {
    clientInfo: { name: "raw-floor", title: "raw-floor", version: "0.0.0" },
    capabilities: { experimentalApi: true }
  })
  const initializedAtMs = performance.now()
  write({ method: "initialized" })
  const threadOptions = {
    cwd: config.cwd,
    approvalPolicy: config.approvalPolicy,
    sandbox: config.sandbox,
    personality: "none",
    model: config.model,
    ...(config.threadConfig !== undefined ? { config: config.threadConfig } : {})
  }
  const waits: Array<number> = []
  const turnTimes: Array<number> = []
  let inFlight = 0
  let maxInFlight = 0
  const session = async (t: number) => {
    let asked = performance.now()
    const threadId = (await request("thread/start", threadOptions)).thread.id as string
    for (let i = 0; i < config.turns; i++) {
      if (i > 0) asked = performance.now()
      const started = await request("turn/start", {
        threadId,
        input: [{ type: "text", text: `${config.prefix}${t}m${i}]` }],
        approvalPolicy: config.approvalPolicy,
        model: config.model
      })
      waits.push(performance.now() - asked)
      maxInFlight = Math.max(maxInFlight, ++inFlight)
      const status = await turnEnd(started.turn.id)
      inFlight--
      turnTimes.push(performance.now() - asked)
      if (status !== "completed") fail(`turn ${i} of thread ${t} ended ${status}`)
    }
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: config.threads }, (_, t) => session(t)))
  const turnsMs = performance.now() - t0
  clearTimeout(timer)
  if (config.report) {
    const mem = memory(child.pid!)
    const sorted = [...turnTimes].sort((a, b) => a - b)
    const report: RawReport = {
      initializedAtMs,
      doneAtMs: performance.now(),
      turnsMs,
      maxWaitMs: Math.max(...waits),
      maxInFlight,
      turnMsMedian: sorted[Math.floor(sorted.length / 2)] ?? 0,
      commands,
      hooksRun,
      serverRequests,
      appServerRssKb: mem.rss,
      appServerHwmKb: mem.hwm,
      userAgent: (init?.userAgent as string | undefined) ?? ""
    }
    process.stdout.write(JSON.stringify(report) + "\n")
  } else {
    process.stdout.write("done\n")
  }
  child.removeAllListeners("exit")
  killTree()
  process.exit(0)
}

main().catch((error: Error) => fail(error.message))
