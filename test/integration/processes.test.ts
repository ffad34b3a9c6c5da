// S25 on the real app-server: sandboxed processes through `command/exec` (never the host). The CLI prints both streams
// and exits with the command's status; --pty gives a terminal; with the option off it refuses in one line (exit 2);
// an app-server whose environment registration failed refuses and the command never runs anywhere (a marker file
// stays absent). The service keeps only the newest output within both buffer bounds, and a process killed through it,
// or left running when its scope closes, is gone from /proc.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { OutputBuffer, Processes } from "../../src/processes/index.js"
import * as ProcessesLive from "../../src/processes/Processes.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { runBin } from "../support/cli.js"
import { eventually, isAlive, leftBehind, tempDir } from "../support/harness.js"

const enabled = JSON.stringify({ appServer: { experimental: { sandboxExecServer: true } } })

/** a private state dir (with a config turning processes on, unless `config` is false), its CODEX_HOME and a workspace */
const dirs = (config = true) =>
  Effect.gen(function* () {
    const stateDir = yield* tempDir("codex-harness-proc-state-")
    const workDir = yield* tempDir("codex-harness-proc-work-")
    fs.chmodSync(stateDir, 0o700)
    const codexHome = path.join(stateDir, "codex-home")
    fs.mkdirSync(codexHome)
    if (config) fs.writeFileSync(path.join(stateDir, "config.json"), enabled, { mode: 0o600 })
    return { stateDir, workDir, codexHome }
  })

const cli = (d: { stateDir: string; workDir: string; codexHome: string }, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runBin(["exec", "--state-dir", d.stateDir, "--cwd", d.workDir, ...args], { env: { CODEX_HOME: d.codexHome, ...env } })

const services = (settings: HarnessSettings, options: ProcessesLive.ProcessesOptions = {}) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      ProcessesLive.layer(options).pipe(Layer.provideMerge(Live.layer(settings)), Layer.provideMerge(RecordingDelivery.layer)),
      scope
    )
    return { processes: Context.get(context, Processes), stop: Scope.close(scope, Exit.void) }
  })

const settingsFor = (d: { stateDir: string; workDir: string; codexHome: string }): HarnessSettings => ({
  stateDir: d.stateDir,
  cwd: d.workDir,
  codexHome: d.codexHome,
  approvalPolicy: "never",
  sandbox: "read-only",
  sandboxExecServer: true
})

/** the first line of output that is a number: the pid the command printed of itself */
const printedPid = (processes: Context.Tag.Service<typeof Processes>, id: string) =>
  processes.follow(id).pipe(
    Stream.map((slice) => OutputBuffer.text(slice.pieces)),
    Stream.scan("", (all, text) => all + text),
    Stream.filter((all) => /^\d+\n/.test(all)),
    Stream.runHead,
    Effect.map((all) => Number(all._tag === "Some" ? all.value.split("\n")[0] : NaN))
  )

describe("codex-harness exec (real app-server)", () => {
  it.scopedLive("[S25] prints the command's stdout and stderr and exits with its status", () =>
    Effect.gen(function* () {
      const d = yield* dirs()
      const ran = yield* cli(d, ["--", "sh", "-c", "echo out; echo err >&2; exit 3"])
      expect(ran.stdout).toBe("out\n")
      expect(ran.stderr).toBe("err\n")
      expect(ran.code).toBe(3)
      expect(yield* leftBehind(d.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S25] --pty runs the command on a terminal", () =>
    Effect.gen(function* () {
      const d = yield* dirs()
      const ran = yield* cli(d, ["--pty", "--", "sh", "-c", "test -t 1 && echo is-a-tty"])
      expect(ran.stdout).toBe("is-a-tty\r\n")
      expect(ran.code).toBe(0)
    }), 240_000)

  it.scopedLive("without appServer.experimental.sandboxExecServer it refuses in one line, exit 2, and runs nothing", () =>
    Effect.gen(function* () {
      const d = yield* dirs(false)
      const ran = yield* cli(d, ["--", "sh", "-c", `touch ${d.workDir}/marker`])
      expect(ran.code).toBe(2)
      expect(ran.stdout).toBe("")
      expect(ran.stderr.trim().split("\n")).toHaveLength(1)
      expect(ran.stderr).toContain("sandboxExecServer")
      expect(fs.existsSync(path.join(d.workDir, "marker"))).toBe(false)
    }), 240_000)

  it.scopedLive("[S25] a failed environment registration is an error, never a run on the host", () =>
    Effect.gen(function* () {
      const d = yield* dirs()
      // the app-server's exec-server unreachable: its local environment is not configured, and it refuses command/exec
      const ran = yield* cli(d, ["--sandbox", "workspace-write", "--", "sh", "-c", `touch ${d.workDir}/marker`], {
        CODEX_EXEC_SERVER_URL: "ws://127.0.0.1:9"
      })
      expect(ran.code).toBe(1)
      expect(ran.stderr).toMatch(/^codex-harness: no sandbox to run the command in: .*local environment is unknown.*nothing was run on the host instead\n$/)
      expect(fs.existsSync(path.join(d.workDir, "marker"))).toBe(false)
      // the same command with the environment there does write it (the marker is a real witness)
      const control = yield* cli(d, ["--sandbox", "workspace-write", "--", "sh", "-c", `touch ${d.workDir}/marker`])
      expect(control.code).toBe(0)
      expect(fs.existsSync(path.join(d.workDir, "marker"))).toBe(true)
      expect(yield* leftBehind(d.stateDir)).toEqual([])
    }), 240_000)
})

describe("chat's /exec, /ps, /logs, /kill (real app-server)", () => {
  it.scopedLive("a background process lives as long as the chat, listed, killed and its logs shown", () =>
    Effect.gen(function* () {
      const d = yield* dirs()
      const ran = yield* runBin(["chat", "--state-dir", d.stateDir, "--cwd", d.workDir], {
        env: { CODEX_HOME: d.codexHome },
        input: "/exec exec sleep 1000\n/ps\n/kill p1\n/logs p1\n/logs p9\n/exec printf 'a\\nb\\n'\n"
      })
      expect(ran.code).toBe(0)
      const lines = ran.stderr.split("\n")
      expect(lines).toContain("started p1: exec sleep 1000")
      expect(lines).toContain("p1 running 0 bytes  sh -c exec sleep 1000")
      expect(lines).toContain("p1 killed (exit 137) 0 bytes  sh -c exec sleep 1000")
      expect(lines).toContain("/logs: no process p9 (/ps lists them)")
      expect(lines).toContain("started p2: printf 'a\\nb\\n'")
      // the chat's end killed what it had started (the second command may still have been running)
      expect(yield* leftBehind(d.stateDir)).toEqual([])
    }), 240_000)
})

describe("Processes (real app-server)", () => {
  it.scopedLive("[S25] keeps only the newest output within both bounds, with what was dropped", () =>
    Effect.gen(function* () {
      const d = yield* dirs()
      const { processes, stop } = yield* services(settingsFor(d), { bounds: { maxBytes: 4096, maxLines: 100 } })
      // one stream: Codex may deliver stdout and stderr deltas in either order relative to each other
      const info = yield* processes.spawn({ command: ["sh", "-c", "seq 1 5000; echo tail"] })
      const ended = yield* processes.awaitExit(info.id)
      expect(ended).toMatchObject({ status: "exited", exitCode: 0 })
      const logs = yield* processes.logs(info.id)
      const kept = OutputBuffer.text(logs.pieces)
      expect(logs.pieces.length).toBeLessThanOrEqual(100)
      expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(4096)
      expect(kept.endsWith("4999\n5000\ntail\n")).toBe(true)
      const written = Buffer.byteLength(Array.from({ length: 5000 }, (_, i) => `${i + 1}\n`).join("")) + "tail\n".length
      expect(logs.next).toBe(written)
      expect(logs.droppedBytes + Buffer.byteLength(kept)).toBe(written)
      expect(logs.droppedLines).toBe(5001 - logs.pieces.length)
      // a poller that had read nothing missed what was dropped; one at `next` gets nothing more
      expect(logs.missedBytes).toBe(logs.droppedBytes)
      expect((yield* processes.logs(info.id, logs.next)).pieces).toEqual([])
      yield* stop
    }), 240_000)

  it.scopedLive("[S25] kill terminates the process in the sandbox, and a scope's close kills what still runs", () =>
    Effect.gen(function* () {
      const d = yield* dirs()
      const { processes, stop } = yield* services(settingsFor(d))
      const killed = yield* processes.spawn({ command: ["sh", "-c", "echo $$; exec sleep 1000"] })
      const pid = yield* printedPid(processes, killed.id)
      // the sandbox has its own pid namespace: find the sleep on the host by its command line instead
      const sleepers = () =>
        fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e)).filter((e) => {
          try {
            return fs.readFileSync(`/proc/${e}/cmdline`, "utf8") === "sleep\u00001000\u0000" && fs.readFileSync(`/proc/${e}/environ`, "utf8").includes(d.codexHome)
          } catch {
            return false
          }
        })
      expect(Number.isInteger(pid)).toBe(true)
      // the shell prints its pid before it execs the sleep
      expect(yield* eventually(Effect.sync(() => sleepers().length === 1))).toBe(true)
      const host = Number(sleepers()[0])
      expect((yield* processes.list).map((p) => [p.id, p.status])).toEqual([[killed.id, "running"]])
      const after = yield* processes.kill(killed.id)
      expect(after.id).toBe(killed.id)
      expect(yield* processes.awaitExit(killed.id)).toMatchObject({ status: "killed", exitCode: 137 })
      // the exec-server reports the exit when it reaps its child; the host's view of that pid can lag a moment behind
      expect(yield* eventually(Effect.sync(() => !isAlive(host)))).toBe(true)
      // a scoped process still running when its scope closes is killed by the finalizer
      const scope = yield* Scope.make()
      const scoped = yield* processes.spawn({ command: ["sh", "-c", "echo $$; exec sleep 1000"] }).pipe(Scope.extend(scope))
      yield* printedPid(processes, scoped.id)
      expect(yield* eventually(Effect.sync(() => sleepers().length === 1))).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect((yield* processes.list).find((p) => p.id === scoped.id)?.status).toBe("killed")
      expect(yield* eventually(Effect.sync(() => sleepers().length === 0))).toBe(true)
      yield* stop
      expect(yield* leftBehind(d.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("writeStdin and resize reach the process; a finished one refuses them", () =>
    Effect.gen(function* () {
      const d = yield* dirs()
      const { processes, stop } = yield* services(settingsFor(d))
      const info = yield* processes.spawn({ command: ["sh", "-c", "stty size; read x; echo got:$x; stty size"], pty: true, size: { rows: 10, cols: 40 } })
      const seen = (needle: string) =>
        processes.follow(info.id).pipe(
          Stream.map((slice) => OutputBuffer.text(slice.pieces)),
          Stream.scan("", (all, text) => all + text),
          Stream.takeUntil((all) => all.includes(needle)),
          Stream.runDrain
        )
      yield* seen("10 40")
      yield* processes.resize(info.id, { rows: 30, cols: 100 })
      yield* processes.writeStdin(info.id, "hello\n")
      expect(yield* processes.awaitExit(info.id)).toMatchObject({ status: "exited", exitCode: 0 })
      const text = OutputBuffer.text((yield* processes.logs(info.id)).pieces)
      expect(text).toContain("got:hello")
      expect(text).toContain("30 100")
      const refused = yield* processes.writeStdin(info.id, "late\n").pipe(Effect.flip)
      expect(refused._tag).toBe("ProcessNotRunning")
      yield* stop
    }), 240_000)
})
