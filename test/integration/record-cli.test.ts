// `codex-harness run --record FILE` through the real bin: an operator's recording of a turn on the real app-server, its
// file private and free of the provider key, replayed by the MockAppServer under the Test composition; a file that
// cannot be made is a usage error said before anything reaches the model; a serve cannot record.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Test from "../../layers/internal/Test.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { MockAppServer, readRecording } from "../../src/testing/MockAppServer.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind } from "../support/harness.js"

describe("codex-harness run --record", () => {
  it.scopedLive("records the turn to a private file an operator can hand to a test, which replays it on the mock", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "pwd" } }), reply.text("recorded reply")] })
      const file = path.join(f.stateDir, "turn.jsonl")
      const key = "cli-provider-key-0123456789"
      const ran = yield* runBin(
        ["run", "--provider-url", f.model.url, "--state-dir", f.stateDir, "-C", f.workDir, "--session", "rec", "--record", file, "say something"],
        { env: { OPENAI_API_KEY: key } }
      )
      expect(ran).toMatchObject({ code: 0, stdout: "recorded reply\n" })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      const text = fs.readFileSync(file, "utf8")
      expect(text).not.toContain(key)
      expect(text).not.toContain(f.workDir)
      const recording = yield* readRecording(file).pipe(Effect.provide(NodeFileSystem.layer))
      // the harness closed its side, and after that only the app-server's own exit may be recorded: `run` ends the
      // app-server's input once its turn is over, and on a loaded machine Codex exits before the recording is closed
      const closedAt = recording.entries.findIndex((e) => e.from === "harness" && "event" in e && e.event === "close")
      expect(closedAt).toBeGreaterThan(0)
      for (const after of recording.entries.slice(closedAt + 1)) expect(after).toMatchObject({ from: "app-server", event: "exit", exitCode: 0 })

      // the test side: the same prompt through the Test composition, in its own directories, delivers the same reply
      const replayed = yield* Effect.scoped(
        Effect.gen(function* () {
          const context = yield* Layer.build(Test.layer({ script: { replay: { recording } } }))
          const result = yield* Context.get(context, CodexHarness).runTurn({ sessionId: "rec", prompt: "say something" })
          const replies = yield* Context.get(context, RecordingDelivery.RecordingDelivery).replies
          return { result, replies, mock: Context.get(context, MockAppServer) }
        })
      )
      expect(replayed.result).toMatchObject({ status: "completed", finalText: "recorded reply" })
      expect(replayed.replies.map((r) => r.text)).toEqual(["recorded reply"])
      yield* replayed.mock.verifyReplay
    }))

  it.scopedLive("a file that cannot be made, or --record with --connect, is one usage line and nothing reaches the model", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("never")] })
      const common = ["--provider-url", f.model.url, "--state-dir", f.stateDir, "-C", f.workDir]
      const missing = path.join(f.stateDir, "no", "such", "turn.jsonl")
      const link = path.join(f.stateDir, "link.jsonl")
      fs.symlinkSync(path.join(f.stateDir, "elsewhere.txt"), link)
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
        [["run", ...common, "--record", missing, "hi"], `codex-harness: --record ${missing}: no such directory\n`],
        [["run", ...common, "--record", f.workDir, "hi"], `codex-harness: --record ${f.workDir}: illegal operation on a directory, open '${f.workDir}'\n`],
        [["run", ...common, "--record", link, "hi"], `codex-harness: --record ${link}: it is a symbolic link\n`],
        [["run", "--record", missing, "--connect", "ws://127.0.0.1:9/rpc", "hi"], "codex-harness: --record: not with --connect (the service runs with its own settings)\n"]
      ]
      for (const [args, stderr] of cases) {
        const ran = yield* runBin(args)
        expect({ args, ...ran }).toEqual({ args, code: 2, stdout: "", stderr })
      }
      expect(fs.existsSync(path.join(f.stateDir, "elsewhere.txt"))).toBe(false)
      expect(yield* f.model.requests).toEqual([])
    }))
})
