// Cluster runners as real, separate processes for tests: `codex-harness serve --cluster ...` spawned in a process group
// of its own (so kill -9 of the group is the machine's death for the serve), each with its own state dir (serve.lock is
// per state dir) and its own default CODEX_HOME (<state dir>/codex-home), the database password in $PGPASSWORD only.
// Also: a runner's app-server groups (its detached children), `cluster status --json` through the bin, a request's last
// user message (the prompt of the turn that sent it), and a last-resort cleanup that leaves no process behind.
import { Deferred, Effect, FiberId, type Scope } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import type { ClusterStatusReport } from "../../src/cluster/ClusterStatus.js"
import { binArgv, runBin } from "./cli.js"
import { groupMembers, processesMentioning } from "./harness.js"

export interface Runner {
  readonly name: string
  /** HOST:PORT of its runner socket, as `cluster status` names it */
  readonly address: string
  readonly stateDir: string
  readonly workDir: string
  readonly child: ChildProcessWithoutNullStreams
  /** the control API: ws://127.0.0.1:PORT/rpc and its token */
  readonly url: string
  readonly token: string
  readonly stderr: () => string
  readonly exited: Effect.Effect<{ readonly code: number | null; readonly signal: string | null }>
  readonly alive: () => boolean
}

/** a port that was free a moment ago on this loopback address */
export const freePortOn = (host: string) => Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, host, () => {
    const port = (server.address() as net.AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})
export const freePort = freePortOn("127.0.0.1")

/** the URL without its password (serve refuses one in argv) and the password for $PGPASSWORD */
export const splitUrl = (url: string) => {
  const u = new URL(url)
  const password = decodeURIComponent(u.password)
  u.password = ""
  return { url: u.toString(), password }
}

/** for a look into a failing run: each runner's stderr, at debug level, appended to DIR/NAME.log, each line timestamped */
const logDir = process.env["CLUSTER_TEST_LOG_DIR"] || undefined

const listening = /codex-harness serve: listening on (\S+) for /

export interface RunnerOptions {
  readonly name: string
  readonly database: string
  readonly providerUrl: string
  readonly root: string
  /** the loopback address it listens on, for its peers and its control API; default 127.0.0.1 */
  readonly host?: string | undefined
  /** a machine that comes back: the state and work dirs of an earlier runner (its CODEX_HOME, its sessions' homes) */
  readonly reuse?: { readonly stateDir: string; readonly workDir: string } | undefined
  /** the runner port to listen on (a restarted machine keeps its address); default a free one */
  readonly port?: number | undefined
}

/** Starts a runner and waits (bounded) for its receipt: serve's "listening on" line. Fails with its stderr if it exits. */
export const startRunner = (options: RunnerOptions) =>
  Effect.gen(function* () {
    const { password, url } = splitUrl(options.database)
    const host = options.host ?? "127.0.0.1"
    const stateDir = options.reuse?.stateDir ?? fs.mkdtempSync(path.join(options.root, `${options.name}-state-`))
    const workDir = options.reuse?.workDir ?? fs.mkdtempSync(path.join(options.root, `${options.name}-work-`))
    const port = options.port ?? (yield* freePortOn(host))
    const child = spawn(process.execPath, [
      ...binArgv, "serve", ...(logDir === undefined ? [] : ["--log-level", "debug"]), "--cluster", url, "--runner-listen", `${host}:${port}`, "--listen", `${host}:0`,
      "--state-dir", stateDir, "--cwd", workDir, "--provider-url", options.providerUrl
    ], { stdio: ["pipe", "pipe", "pipe"], detached: true, env: { ...process.env, PGPASSWORD: password } })
    let stderr = ""
    const exit = Deferred.unsafeMake<{ readonly code: number | null; readonly signal: string | null }>(FiberId.none)
    const changed = new Set<() => void>()
    const log = logDir === undefined ? undefined : fs.createWriteStream(path.join(logDir, `${options.name}.log`), { flags: "a" })
    let partial = ""
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString("utf8")
      if (log !== undefined) {
        // each line stamped with the time it arrived (the runner's own lines carry none)
        const lines = (partial + c.toString("utf8")).split("\n")
        partial = lines.pop() ?? ""
        for (const line of lines) log.write(`${new Date().toISOString().slice(11, 23)} ${line}\n`)
      }
      for (const f of [...changed]) f()
    })
    child.stdout.resume()
    child.stdin.on("error", () => {})
    child.on("close", (code, signal) => {
      log?.end()
      Deferred.unsafeDone(exit, Effect.succeed({ code, signal }))
      for (const f of [...changed]) f()
    })
    const up = yield* Effect.async<boolean>((resume) => {
      const check = () => {
        if (listening.test(stderr)) done(true)
        else if (child.exitCode !== null || child.signalCode !== null) done(false)
      }
      const timer = setTimeout(() => done(false), 60_000)
      const done = (ok: boolean) => {
        clearTimeout(timer)
        changed.delete(check)
        resume(Effect.succeed(ok))
      }
      changed.add(check)
      check()
    })
    if (!up) return yield* Effect.fail(new Error(`runner ${options.name} did not start:\n${stderr}`))
    return {
      name: options.name,
      address: `${host}:${port}`,
      stateDir,
      workDir,
      child,
      url: listening.exec(stderr)![1]!,
      token: fs.readFileSync(path.join(stateDir, "serve.token"), "utf8").trim(),
      stderr: () => stderr,
      exited: Deferred.await(exit),
      alive: () => child.exitCode === null && child.signalCode === null
    } satisfies Runner
  })

const statOf = (pid: number): { readonly ppid: number; readonly pgrp: number; readonly state: string } | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return { state: fields[0]!, ppid: Number(fields[1]), pgrp: Number(fields[2]) }
  } catch {
    return undefined
  }
}

const pids = () => fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e)).map(Number)

/** the process groups of a runner's app-servers: its children in a group of their own (they are spawned detached) */
export const appServerGroups = (runner: Runner): ReadonlyArray<number> =>
  pids().flatMap((pid) => {
    const s = statOf(pid)
    return s !== undefined && s.ppid === runner.child.pid && s.pgrp === pid && s.state !== "Z" ? [pid] : []
  })

const killGroup = (pgid: number) => {
  try {
    process.kill(-pgid, "SIGKILL")
  } catch {
    // gone
  }
}

/** The machine dies: SIGKILL to the runner's process group and to each of its app-servers' groups, at once. */
export const killMachine = (runner: Runner): ReadonlyArray<number> => {
  const groups = appServerGroups(runner)
  killGroup(runner.child.pid!)
  for (const g of groups) killGroup(g)
  return groups
}

/** true once no live process is left in any of these groups */
export const groupsGone = (groups: ReadonlyArray<number>) => groups.every((g) => groupMembers(g).length === 0)

/** Last resort (a finally): every runner's group, and every process that mentions a runner's state dir, killed. */
export const killEverything = (runners: ReadonlyArray<Runner>) => {
  for (const r of runners) if (r.child.pid !== undefined) killGroup(r.child.pid)
  for (const r of runners) {
    for (const pid of processesMentioning(r.stateDir)) {
      const s = statOf(pid)
      if (s !== undefined) killGroup(s.pgrp)
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // gone
      }
    }
  }
}

/** `codex-harness cluster status --json`, the password in $PGPASSWORD */
export const clusterStatus = (database: string) =>
  Effect.gen(function* () {
    const { password, url } = splitUrl(database)
    const ran = yield* runBin(["cluster", "status", "--json", "--cluster", url], { env: { PGPASSWORD: password } })
    if (ran.code !== 0) return yield* Effect.fail(new Error(`cluster status: exit ${ran.code}: ${ran.stderr}`))
    return JSON.parse(ran.stdout) as ClusterStatusReport
  })

/** the text of a Responses request's last user message: the prompt of the turn that sent it */
export const lastUserText = (json: unknown): string => {
  const input = (json as { input?: ReadonlyArray<{ type?: string; role?: string; content?: unknown }> } | undefined)?.input ?? []
  for (let i = input.length - 1; i >= 0; i--) {
    const item = input[i]!
    if (item.role !== "user") continue
    const content = Array.isArray(item.content) ? item.content as ReadonlyArray<{ text?: string }> : []
    return content.map((c) => c.text ?? "").join("")
  }
  return ""
}

/** a temp root for the runners' dirs, removed (after everything is killed) by the scope */
export const tempRoot = (): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "codex-harness-cluster-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
