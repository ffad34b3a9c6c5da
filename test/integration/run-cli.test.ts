// `run` as a script and a person use it, through the real bin, app-server and a scripted model: the prompt from stdin,
// usage errors that never reach the model, the reply written to a file, and an interrupted turn that says how to
// continue its session, with the exit code of the signal.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { reply } from "../../src/testing/ScriptedModel.js"
import { bin, runBin } from "../support/cli.js"
import { fixture, leftBehind } from "../support/harness.js"

describe("codex-harness run", () => {
  it.scopedLive("the prompt comes from stdin with `-` or no PROMPT; -m, -C and --output-last-message apply", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("from stdin"), reply.text("from dash"), reply.text("from last"), reply.text("by prefix")] })
      const common = ["--provider-url", f.model.url, "--state-dir", f.stateDir, "-C", f.workDir]
      const long = `piped prompt ${"x".repeat(200_000)} end of the piped prompt`
      const out = path.join(f.stateDir, "last.txt")
      const first = yield* runBin(["run", ...common, "-m", "chosen-model", "-o", out], { input: long })
      expect(first).toMatchObject({ code: 0, stdout: "from stdin\n" })
      expect(fs.readFileSync(out, "utf8")).toBe("from stdin\n")
      const second = yield* runBin(["run", ...common, "-"], { input: "the dash prompt\n" })
      expect(second).toMatchObject({ code: 0, stdout: "from dash\n" })
      // --last continues the session written last; a unique prefix names a session (and the whole id is said)
      const last = yield* runBin(["run", ...common, "--last", "and the last one"])
      expect(last).toMatchObject({ code: 0, stdout: "from last\n" })
      const firstId = /^session: (\S+)$/m.exec(first.stderr)![1]!
      const prefixed = yield* runBin(["run", ...common, "--session", firstId.slice(0, 8), "by prefix"])
      expect(prefixed).toMatchObject({ code: 0, stdout: "by prefix\n", stderr: `session: ${firstId}\n` })
      const requests = yield* f.model.requests
      expect(requests[0]!.body).toContain("end of the piped prompt")
      expect(JSON.parse(requests[0]!.body).model).toBe("chosen-model")
      expect(requests[1]!.body).toContain("the dash prompt")
      expect(requests[2]!.body).toContain("the dash prompt")
      expect(requests[2]!.body).not.toContain("end of the piped prompt")
      expect(requests[3]!.body).toContain("end of the piped prompt")
    })
  )

  it.scopedLive("usage errors exit 2 with one line naming the flag, and nothing reaches the model", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("never")] })
      const common = ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir]
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string, string]> = [
        [["run", ...common, "--frobnicate"], "", "codex-harness: unknown option '--frobnicate' for `codex-harness run` (`codex-harness run --help` lists them)\n"],
        [["run", ...common, "--frobnicate", "hi"], "", "codex-harness: unknown option '--frobnicate' for `codex-harness run` (`codex-harness run --help` lists them)\n"],
        [["run", ...common, "--timeout", "soon", "hi"], "", "codex-harness: --timeout wants a whole number, not 'soon'\n"],
        [["run", ...common], "  \n", "codex-harness: the prompt on stdin is empty\n"],
        [["run", ...common, ""], "", "codex-harness: the prompt is empty\n"],
        [["run", ...common, "--last", "--session", "x", "hi"], "", "codex-harness: --last and --session both name the session to continue: give one\n"]
      ]
      for (const [args, input, stderr] of cases) {
        const ran = yield* runBin(args, { input })
        expect({ args, ...ran }).toEqual({ args, code: 2, stdout: "", stderr })
      }
      expect(yield* f.model.requests).toEqual([])
    })
  )

  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    it.scopedLive(`${signal} during a turn exits ${code} and says how to continue the session`, () =>
      Effect.gen(function* () {
        const f = yield* fixture({ replies: [reply.steps({ type: "pause", ms: 120_000 })] })
        const child = spawn(process.execPath, [
          bin, "run", "--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir, "--session", "stopped-1", "wait"
        ], { stdio: ["ignore", "pipe", "pipe"] })
        let stderr = ""
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
        const exited = new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)))
        yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
        // the receipt that the turn is running: the model has the request
        yield* f.model.waitForRequests(1)
        child.kill(signal)
        const exitCode = yield* Effect.promise(() => exited)
        expect(exitCode).toBe(code)
        expect(stderr).toContain("interrupted; continue the session with: codex-harness run --session stopped-1 PROMPT")
        expect(yield* leftBehind(f.stateDir)).toEqual([])
      })
    )
  }
})
