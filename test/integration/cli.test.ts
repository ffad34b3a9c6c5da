// The command line as a user meets it: the compiled `codex-harness` bin (npm test builds it first) against the real
// app-server and a scripted model.
import { packageVersion } from "../../src/cli/version.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind, tempDir } from "../support/harness.js"
import { runBin } from "../support/cli.js"

const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => runBin(args, { env })

const noStackTrace = (text: string) => expect(text).not.toMatch(/^\s+at /m)

describe("codex-harness CLI", () => {
  it.scopedLive("[S39] run prints the reply, records it, and --session continues the same thread", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("first answer"), reply.text("second answer")] })
      const common = ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir, "--session", "cli-1"]
      const first = yield* cli(["run", ...common, "remember the word tangerine"])
      expect(first).toMatchObject({ code: 0, stdout: "first answer\n" })
      const second = yield* cli(["run", ...common, "what was the word?"])
      expect(second).toMatchObject({ code: 0, stdout: "second answer\n" })
      // the resumed thread carries the first exchange to the model
      const requests = yield* f.model.requests
      expect(requests[1]!.body).toContain("remember the word tangerine")
      expect(requests[1]!.body).toContain("first answer")
      const records = fs.readFileSync(path.join(f.stateDir, "sessions", "cli-1.jsonl"), "utf8")
      expect(records).toContain("second answer")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("[S27] run answers approvals with --approvals (deny by default) and prints each decision on stderr", () =>
    Effect.gen(function* () {
      const touch = reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch approved.txt" } })
      const f = yield* fixture({ replies: [touch, reply.text("tried"), touch, reply.text("done")] })
      const args = ["run", "--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir]
      const policy = ["--approval-policy", "untrusted", "--sandbox", "workspace-write"]
      const denied = yield* cli([...args, ...policy, "--session", "a1", "touch it"])
      expect(denied.code).toBe(0)
      expect(denied.stderr).toMatch(/approval: denied command .*touch approved\.txt/)
      expect(fs.existsSync(path.join(f.workDir, "approved.txt"))).toBe(false)
      const allowed = yield* cli([...args, ...policy, "--approvals", "allow", "--session", "a2", "touch it"])
      expect(allowed.code).toBe(0)
      expect(allowed.stderr).toMatch(/approval: allowed command .*touch approved\.txt/)
      expect(fs.existsSync(path.join(f.workDir, "approved.txt"))).toBe(true)
    })
  )

  it.scopedLive("[cli] a missing codex binary is one clear line on stderr and exit 1", () =>
    Effect.gen(function* () {
      const state = yield* tempDir()
      const ran = yield* cli(["run", "--codex-bin", "/nonexistent/codex", "--state-dir", state, "x"])
      expect(ran.code).toBe(1)
      // the new session's id comes first, so a run that fails still says where its conversation would be
      expect(ran.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^session: /), expect.stringContaining("codex binary not found")])
      noStackTrace(ran.stderr)
    })
  )

  it.scopedLive("[cli] an unusable state dir is one line and exit 1; bad flags are usage errors (exit 2)", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const file = path.join(dir, "a-file")
      fs.writeFileSync(file, "")
      const unwritable = yield* cli(["run", "--state-dir", path.join(file, "state"), "--provider-url", "http://127.0.0.1:9/v1", "x"])
      expect(unwritable.code).toBe(1)
      expect(unwritable.stderr.trim().split("\n")).toEqual([expect.stringContaining("not a directory")])
      noStackTrace(unwritable.stderr)
      const badChoice = yield* cli(["run", "--sandbox", "everything", "x"])
      expect(badChoice.code).toBe(2)
      noStackTrace(badChoice.stderr)
      const badUrl = yield* cli(["run", "--provider-url", "ftp://example", "--state-dir", dir, "x"])
      expect(badUrl.code).toBe(1)
      expect(badUrl.stderr).toContain("--provider-url")
    })
  )

  it.scopedLive("[cli] an unreachable provider fails the turn with a clear line instead of waiting forever", () =>
    Effect.gen(function* () {
      const state = yield* tempDir()
      const ran = yield* cli(["run", "--provider-url", "http://127.0.0.1:9/v1", "--state-dir", state, "x"])
      expect(ran.code).toBe(1)
      expect(ran.stderr).toContain("cannot be reached")
      noStackTrace(ran.stderr)
      // the prompt was kept even though the turn failed
      const sessions = fs.readdirSync(path.join(state, "sessions"))
      expect(fs.readFileSync(path.join(state, "sessions", sessions[0]!), "utf8")).toContain('"text":"x"')
      expect(yield* leftBehind(state)).toEqual([])
    })
  )

  it.scopedLive("[cli] demo shows a conversation with a tool call, offline", () =>
    Effect.gen(function* () {
      const ran = yield* cli(["demo"])
      expect(ran.code).toBe(0)
      expect(ran.stdout).toContain("you   › What is in this workspace?")
      expect(ran.stdout).toMatch(/tool {2}› .*ls/)
      expect(ran.stdout).toContain("codex › Two files")
    })
  )

  it.scopedLive("[cli] --help prints a plain page; an unknown command is a usage error naming it", () =>
    Effect.gen(function* () {
      const ran = yield* cli(["run", "--model", "x", "--help"])
      expect(ran.code).toBe(0)
      expect(ran.stdout).toMatch(/^codex-harness run: /)
      expect(ran.stdout).toContain("--provider-url")
      expect(ran.stdout).not.toMatch(/\u001b/)
      const version = yield* cli(["--version"])
      expect(version).toMatchObject({ code: 0, stdout: `${packageVersion()}\n` })
      const unknown = yield* cli(["nosuch", "--help"])
      expect(unknown).toMatchObject({ code: 2, stdout: "" })
      expect(unknown.stderr).toBe("codex-harness: unknown command 'nosuch' (`codex-harness --help` lists the commands)\n")
    })
  )
})
