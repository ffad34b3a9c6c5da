// Hostile model providers against the real app-server, through the compiled CLI: every wait is bounded. A provider
// that accepts and never answers is ended by the turn's deadline (--timeout) or, without one, by the silence limit
// (turns.silenceSeconds), also when it keeps the stream alive with SSE keepalives; a reply larger than the harness's
// line limit ends the turn at once with a clear line, and the reply (streamed in pieces) is still printed and kept.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { parseLines } from "../../src/session/SessionStore.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind } from "../support/harness.js"

const runArgs = (f: { stateDir: string; workDir: string; model: { url: string } }, ...rest: ReadonlyArray<string>) => [
  "run",
  "--state-dir",
  f.stateDir,
  "--cwd",
  f.workDir,
  "--provider-url",
  f.model.url,
  "--session",
  "s",
  ...rest
]

const silence = (stateDir: string, seconds: number) =>
  fs.writeFileSync(path.join(stateDir, "config.json"), JSON.stringify({ turns: { silenceSeconds: seconds } }))

describe("a hostile provider never holds a turn for long", () => {
  it.scopedLive("a provider that accepts and never answers: --timeout ends the turn, one line, exit 1, nothing left running", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.steps({ type: "hang" })] })
      const started = Date.now()
      const ran = yield* runBin(runArgs(f, "--timeout", "5", "anyone there?"))
      expect(Date.now() - started).toBeLessThan(20_000)
      expect(ran.code).toBe(1)
      expect(ran.stdout).toBe("")
      expect(ran.stderr.trim().split("\n").at(-1)).toBe(
        "codex-harness: the turn ended failed: the turn did not finish within 5 s (turns.timeoutSeconds); it was interrupted"
      )
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("without a deadline, a provider that sends nothing is ended by the silence limit, keepalives or not", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        replies: [reply.steps({ type: "hang" }), reply.steps({ type: "message", text: "one moment" }, { type: "keepalive", everyMs: 500 })]
      })
      silence(f.stateDir, 4)
      const hung = yield* runBin(runArgs(f, "silent?"))
      expect(hung.code).toBe(1)
      expect(hung.stderr).toMatch(/the model provider sent nothing for \d+ s while the turn waited on it \(turns.silenceSeconds\)/)
      const kept = yield* runBin(runArgs(f, "still silent?"))
      expect(kept.code).toBe(1)
      expect(kept.stderr).toMatch(/the model provider sent nothing for \d+ s/)
      // the reply it did complete before going quiet is printed, and kept in the transcript
      expect(kept.stdout).toBe("one moment\n")
      const records = parseLines(fs.readFileSync(path.join(f.stateDir, "sessions", "s.jsonl"), "utf8")).records
      expect(records.filter((r) => r._tag === "assistant").map((r) => (r as { text: string }).text)).toEqual(["one moment"])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a reply over the line limit ends the turn at once; the reply, streamed in pieces, is printed and kept", () =>
    Effect.gen(function* () {
      const big = "abcdefgh".repeat(1_200_000) // 9.6 MB, over the 8 MiB line limit once Codex puts it in one message
      const f = yield* fixture({ replies: [reply.steps({ type: "message", text: big, chunk: 65_536 })] })
      const started = Date.now()
      const ran = yield* runBin(runArgs(f, "say a lot"))
      expect(Date.now() - started).toBeLessThan(30_000)
      expect(ran.code).toBe(1)
      expect(ran.stderr).toContain("over the harness's line limit")
      // what had streamed when the oversized line came is printed and kept (on a quiet machine all of it; under load
      // Codex may put more of the text into the line that is too long, so only a prefix is promised)
      const printed = ran.stdout.slice(0, -1)
      expect(ran.stdout.endsWith("\n")).toBe(true)
      expect(printed.length).toBeGreaterThan(1_000_000)
      expect(big.startsWith(printed)).toBe(true)
      const records = parseLines(fs.readFileSync(path.join(f.stateDir, "sessions", "s.jsonl"), "utf8")).records
      expect(records.filter((r) => r._tag === "assistant").map((r) => (r as { text: string }).text)).toEqual([printed])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a provider that sends malformed events fails the turn in one line, soon; the session goes on with the next run", () =>
    Effect.gen(function* () {
      const garbage = reply.steps({ type: "raw", data: "event: response.output_text.delta\ndata: {not json at all\n\n" })
      // Codex retries a broken stream once (the harness's provider sets stream_max_retries=1)
      const f = yield* fixture({ replies: [garbage, garbage, reply.text("a proper answer")] })
      const started = Date.now()
      const ran = yield* runBin(runArgs(f, "hello?"))
      expect(Date.now() - started).toBeLessThan(30_000)
      expect(ran.code).toBe(1)
      expect(ran.stdout).toBe("")
      expect(ran.stderr.trim().split("\n")).toHaveLength(1)
      expect(ran.stderr).toMatch(/^codex-harness: the turn ended failed: /)
      const records = parseLines(fs.readFileSync(path.join(f.stateDir, "sessions", "s.jsonl"), "utf8")).records
      expect(records.at(-1)).toMatchObject({ _tag: "turn", status: "failed" })
      expect(yield* runBin(runArgs(f, "try again"))).toMatchObject({ code: 0, stdout: "a proper answer\n" })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})
