// Runs the compiled `codex-harness` bin (npm test builds it first) the way a user would: stdin piped (never a
// terminal), stdout and stderr collected, a hard 150 s limit: a bound that only ends a hang (on two cores at load 50 a
// plain `run` took more than 60 s). Interrupting the effect kills the process.
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

export const bin = path.resolve("bin/codex-harness.js")

/** the node flags of the bin's shebang, which the installed command runs with (and its code cache was written under) */
export const shebangFlags: ReadonlyArray<string> = (/^#!.*?\bnode\b(.*)$/.exec(fs.readFileSync(bin, "utf8").split("\n")[0]!)?.[1] ?? "")
  .trim().split(/\s+/).filter((a) => a !== "")

/** node's arguments that run the bin as the installed command does */
export const binArgv: ReadonlyArray<string> = [...shebangFlags, bin]

export interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

export interface RunOptions {
  /** written to stdin, which is then closed */
  readonly input?: string | undefined
  /** added to this process's environment */
  readonly env?: Readonly<Record<string, string>> | undefined
}

export const runBin = (args: ReadonlyArray<string>, options: RunOptions = {}) =>
  Effect.async<Ran>((resume) => {
    const child = spawn(process.execPath, [...binArgv, ...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...options.env }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const timer = setTimeout(() => child.kill("SIGKILL"), 150_000)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code: code ?? (signal !== null ? 128 : 1), stdout, stderr }))
    })
    child.stdin.on("error", () => {}) // a command that exits early may not read everything
    child.stdin.end(options.input ?? "")
    return Effect.sync(() => child.kill("SIGKILL"))
  })
