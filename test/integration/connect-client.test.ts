// `run --connect` and `chat --connect` run by their own entry (dist/bundle/connect.cjs, src/cli/remote/), not by the
// CLI: against a real `codex-harness serve` and the real app-server behind it. The package is copied without the CLI's
// bundle and without node_modules, so a command that needed either could not run; Ctrl-C and SIGTERM interrupt this
// command's own turn in the serve (recorded interrupted) and exit 130 / 143 with the line that says how to continue.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parseLines } from "../../src/session/SessionStore.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { bin } from "../support/cli.js"
import { eventually, fixture, leftBehind } from "../support/harness.js"
import { type Served, startServe } from "../support/serve.js"

/** bin/ and dist/bundle/ in a directory of their own, without the CLI (cli.cjs, its cache) and with no node_modules */
const packageWithoutCli = () =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), "connect-entry-"))
      // the bin with its package.json (it is a CommonJS script in an ES module package)
      fs.cpSync(path.resolve("bin"), path.join(root, "bin"), { recursive: true })
      fs.cpSync(path.resolve("dist/bundle"), path.join(root, "dist", "bundle"), { recursive: true })
      for (const file of ["cli.cjs", "cli.cjs.map", "cli.code-cache"]) fs.rmSync(path.join(root, "dist", "bundle", file), { force: true })
      return root
    }),
    (root) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

/** the copy's bin, as a child process (never spawnSync: the scripted model answers from this process's event loop) */
const runIn = (root: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>>, input = "") =>
  Effect.async<{ readonly status: number | null; readonly stdout: string; readonly stderr: string }>((resume) => {
    const child = spawn(process.execPath, [path.join(root, "bin", "codex-harness.js"), ...args], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...env }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")))
    child.stdin.on("error", () => {})
    child.stdin.end(input)
    child.once("close", (status) => resume(Effect.succeed({ status, stdout, stderr })))
    return Effect.sync(() => child.kill("SIGKILL"))
  }).pipe(Effect.timeout("60 seconds"))

const stopped = (s: Served) =>
  Effect.gen(function* () {
    s.serve.child.kill("SIGTERM")
    expect(yield* s.serve.exited.pipe(Effect.timeout("120 seconds"))).toEqual({ code: 143, signal: null })
  })

describe("the --connect entry", () => {
  it.scopedLive("run --connect and chat --connect need neither the CLI's bundle nor node_modules; what the entry does not take goes to the CLI", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("thin reply"), reply.text("chat one"), reply.text("chat two")] })
      const s = yield* startServe(f)
      const root = yield* packageWithoutCli()
      const env = { CODEX_HARNESS_TOKEN: s.token }
      const ran = yield* runIn(root, ["run", "--connect", s.url, "--session", "thin-1", "hello"], env)
      expect({ status: ran.status, stdout: ran.stdout, stderr: ran.stderr }).toEqual({ status: 0, stdout: "thin reply\n", stderr: "" })
      const chat = yield* runIn(root, ["chat", "--connect", `http://127.0.0.1:${s.port}/`, "--session", "thin-2"], env, "first\nsecond\n")
      expect({ status: chat.status, stdout: chat.stdout }).toEqual({ status: 0, stdout: "chat one\nchat two\n" })
      expect(chat.stderr).toBe("session: thin-2\n")
      // a flag the entry does not take (--log-level) is the CLI's, which this copy lacks: it was given back
      const handedBack = yield* runIn(root, ["run", "--log-level=info", "--connect", s.url, "hello"], env)
      expect(handedBack.status).not.toBe(0)
      expect(handedBack.stderr).toContain("cli.cjs")
      expect((yield* f.model.requests).length).toBe(3)
      yield* stopped(s)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    it.scopedLive(`${signal} during a run --connect turn: the serve interrupts that turn, the command exits ${code} and says how to continue`, () =>
      Effect.gen(function* () {
        const f = yield* fixture({ replies: [reply.steps({ type: "hang" })] })
        const s = yield* startServe(f)
        const child = spawn(process.execPath, [bin, "run", "--connect", s.url, "--session", "stop-me", "wait"], {
          stdio: ["ignore", "pipe", "pipe"],
          env: { ...process.env, CODEX_HARNESS_TOKEN: s.token }
        })
        let stderr = ""
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
        const exited = new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)))
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
        // the receipt that the turn runs: the model has its request
        yield* f.model.waitForRequests(1).pipe(Effect.timeout("120 seconds"))
        child.kill(signal)
        expect(yield* Effect.promise(() => exited).pipe(Effect.timeout("120 seconds"))).toBe(code)
        expect(stderr).toBe("interrupted; continue the session with: codex-harness run --session stop-me PROMPT\n")
        // the serve was told: the turn ends interrupted in the session's records
        const file = path.join(f.stateDir, "sessions", "stop-me.jsonl")
        const interrupted = () =>
          Effect.sync(() => fs.existsSync(file) && parseLines(fs.readFileSync(file, "utf8")).records.at(-1)?._tag === "turn")
        expect(yield* eventually(interrupted(), "30 seconds")).toBe(true)
        expect(parseLines(fs.readFileSync(file, "utf8")).records.at(-1)).toMatchObject({ _tag: "turn", status: "interrupted" })
        yield* stopped(s)
        expect(yield* leftBehind(f.stateDir)).toEqual([])
      }))
  }
})
