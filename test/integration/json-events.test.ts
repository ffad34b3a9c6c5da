// The `--json` event stream of `run` through the real bin, app-server and a scripted model: every line decodes as an
// event of schemas/events.ts (the schema `events schema` prints), the first names the session and thread, commands
// and approvals are events, the last carries the usage; a turn that cannot run still names its session.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { HarnessEvent } from "../../schemas/events.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind, tempDir } from "../support/harness.js"

const decodeEvent = Schema.decodeUnknownSync(HarnessEvent)
const eventsOf = (stdout: string) => stdout.trim().split("\n").map((line) => decodeEvent(JSON.parse(line)))

describe("run --json", () => {
  it.scopedLive("[S18] one schema-valid event per line: thread first, the command and its approval, the reply, usage last", () =>
    Effect.gen(function* () {
      const touch = reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch made.txt" } })
      const f = yield* fixture({ replies: [touch, reply.text("json answer")] })
      const ran = yield* runBin([
        "run",
        "--json",
        "--provider-url", f.model.url,
        "--state-dir", f.stateDir,
        "-C", f.workDir,
        "--approval-policy", "untrusted",
        "--sandbox", "workspace-write",
        "--approvals", "allow",
        "--session", "json-1",
        "make the file"
      ])
      expect(ran.code).toBe(0)
      const events = eventsOf(ran.stdout)
      expect(events[0]).toMatchObject({ type: "thread.started", version: 1, session_id: "json-1", resumed: false })
      const threadId = (events[0] as { thread_id: string }).thread_id
      expect(threadId).not.toBe("")
      expect(events).toContainEqual(expect.objectContaining({
        type: "approval.decided",
        kind: "command",
        decision: "allow_once",
        by: "policy",
        subject: expect.stringContaining("touch made.txt")
      }))
      expect(events).toContainEqual(expect.objectContaining({
        type: "item.completed",
        item: expect.objectContaining({ kind: "command", command: expect.stringContaining("touch made.txt"), exit_code: 0 })
      }))
      expect(events).toContainEqual(expect.objectContaining({ type: "reply", source: "final", text: "json answer" }))
      const completed = events.find((e) => e.type === "turn.completed")
      expect(completed).toMatchObject({ session_id: "json-1", thread_id: threadId, final_text: "json answer" })
      expect((completed as { usage: { total_tokens: number } | null }).usage?.total_tokens).toBeGreaterThan(0)
      // nothing but the harness's own events: no raw notifications
      expect(ran.stdout).not.toContain('"method"')
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("a turn that cannot run ends with turn.failed naming the session", () =>
    Effect.gen(function* () {
      const state = yield* tempDir()
      const ran = yield* runBin(["run", "--json", "--codex-bin", "/nonexistent/codex", "--state-dir", state, "--session", "json-2", "hi"])
      expect(ran.code).toBe(1)
      const events = eventsOf(ran.stdout)
      expect(events).toEqual([expect.objectContaining({ type: "turn.failed", session_id: "json-2", status: "error", error: expect.stringContaining("codex binary not found") })])
    })
  )

  it.scopedLive("events schema prints the JSON Schema the stream is held to", () =>
    Effect.gen(function* () {
      const ran = yield* runBin(["events", "schema"])
      expect(ran.code).toBe(0)
      const schema = JSON.parse(ran.stdout) as { anyOf?: ReadonlyArray<unknown> }
      expect(JSON.stringify(schema)).toContain('"thread.started"')
      expect(JSON.stringify(schema)).toContain('"turn.failed"')
    })
  )
})
