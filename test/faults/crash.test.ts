// Signals and crashes mid-turn and mid-compaction, on the real app-server through the compiled CLI: an interrupted
// turn (SIGINT) still prints and keeps the reply it had completed; after a SIGKILL of the harness, the next run settles
// what was left open (the prompt without an outcome, the compaction with no terminal status) and goes on with the
// same thread; nothing is left running.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { parseLines } from "../../src/session/SessionStore.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind } from "../support/harness.js"
import { startBin } from "../support/process.js"

const COMPACTION = "CONTEXT CHECKPOINT COMPACTION"
const recordsOf = (stateDir: string, sessionId: string) =>
  parseLines(fs.readFileSync(path.join(stateDir, "sessions", `${sessionId}.jsonl`), "utf8")).records

describe("signals and crashes lose nothing", () => {
  it.scopedLive("SIGINT mid-turn: the reply that had completed is printed and kept; the turn is recorded interrupted", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.steps({ type: "message", text: "the part I finished" }, { type: "hang" })] })
      const common = ["--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "--session", "s"]
      const running = yield* startBin(["run", "--json", ...common, "work on it"])
      // the receipt: the completed message reached the harness (its item/completed event is printed)
      expect(yield* running.waitFor(({ stdout }) => stdout.includes('"kind":"agent_message"') && stdout.includes("the part I finished"))).toBe(true)
      running.child.kill("SIGINT")
      const exit = yield* running.exited
      expect(exit.code).not.toBe(0)
      const replies = running.stdout().trim().split("\n").map((l) => JSON.parse(l)).filter((e) => e.type === "reply")
      expect(replies).toEqual([{ type: "reply", version: 1, session_id: "s", text: "the part I finished", media: [], source: "final" }])
      const records = recordsOf(f.stateDir, "s")
      expect(records.filter((r) => r._tag === "assistant").map((r) => (r as { text: string }).text)).toEqual(["the part I finished"])
      expect(records.at(-1)).toMatchObject({ _tag: "turn", status: "interrupted" })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("SIGKILL of the harness mid-compaction and mid-turn: the next run settles what was open and continues the thread", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        rules: [{ whenRequestIncludes: COMPACTION, reply: reply.steps({ type: "hang" }), once: true }],
        replies: [reply.text("first answer"), reply.steps({ type: "hang" }), reply.text("after the crashes")]
      })
      const common = ["--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "--session", "s"]
      expect((yield* runBin(["run", ...common, "hello"])).stdout).toBe("first answer\n")

      const compacting = yield* startBin(["compact", ...common])
      yield* f.model.waitForRequests(2)
      expect(yield* Effect.promise(async () => {
        for (let i = 0; i < 100; i++) {
          if (recordsOf(f.stateDir, "s").some((r) => r._tag === "compaction")) return true
          await new Promise((r) => setTimeout(r, 50))
        }
        return false
      })).toBe(true)
      compacting.child.kill("SIGKILL")
      yield* compacting.exited

      const turning = yield* startBin(["run", ...common, "this turn dies with its harness"])
      yield* f.model.waitForRequests(3)
      turning.child.kill("SIGKILL")
      yield* turning.exited

      const after = yield* runBin(["run", ...common, "are we still here?"])
      expect(after).toMatchObject({ code: 0, stdout: "after the crashes\n" })
      const records = recordsOf(f.stateDir, "s")
      const compactions = records.filter((r) => r._tag === "compaction").map((r) => (r as { status: string }).status)
      expect(compactions).toEqual(["started", "failed"])
      expect(records.filter((r) => r._tag === "settled")).toHaveLength(1)
      const bindings = new Set(records.flatMap((r) => (r._tag === "binding" ? [r.threadId] : [])))
      expect(bindings.size).toBe(1)
      // the lock files of the killed processes were taken over, and none is left
      expect(fs.readdirSync(path.join(f.stateDir, "sessions")).filter((n) => n.endsWith(".lock"))).toEqual([])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})
