// `codex-harness chat` with piped input and `codex-harness sessions`: the compiled bin (npm test builds it first)
// against the real app-server and a scripted model.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type RecordedRequest, reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { type Fixture, fixture, leftBehind } from "../support/harness.js"

/** Runs the bin with `input` piped to stdin (stdin is not a terminal) and waits for it to exit. */
const cli = (args: ReadonlyArray<string>, input = "") => runBin(args, { input })

const common = (f: Fixture) => ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir]

interface InputMessage {
  readonly role?: string
  readonly content?: ReadonlyArray<{ readonly text?: string }>
}

/** The conversation a request carried: role and text of every message in its input. */
const conversation = (request: RecordedRequest) =>
  ((request.json as { input?: ReadonlyArray<InputMessage> }).input ?? [])
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => ({ role: m.role, text: (m.content ?? []).map((c) => c.text ?? "").join("") }))

const lastUserText = (request: RecordedRequest) => conversation(request).filter((m) => m.role === "user").at(-1)?.text

const noStackTrace = (text: string) => expect(text).not.toMatch(/^\s+at /m)

describe("codex-harness chat (piped) and sessions", () => {
  it.scopedLive("[S18] piped lines are three follow-up messages, each answered in order; exit 0", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("reply one"), reply.text("reply two"), reply.text("reply three")] })
      const ran = yield* cli(["chat", ...common(f)], "a\nb\nc\n")
      expect(ran.code).toBe(0)
      expect(ran.stdout).toBe("reply one\nreply two\nreply three\n")
      expect(ran.stderr).toMatch(/^session: [0-9a-f-]{36}\n$/)
      const requests = yield* f.model.requests
      expect(requests.map(lastUserText)).toEqual(["a", "b", "c"])
      // each message went after the previous reply: the model saw that reply before the next prompt
      expect(conversation(requests[1]!).slice(-3)).toEqual([
        { role: "user", text: "a" },
        { role: "assistant", text: "reply one" },
        { role: "user", text: "b" }
      ])
      expect(conversation(requests[2]!).slice(-3)).toEqual([
        { role: "user", text: "b" },
        { role: "assistant", text: "reply two" },
        { role: "user", text: "c" }
      ])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("[S18] chat --json prints JSONL: the turn events and one reply event per message", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("reply one"), reply.text("reply two"), reply.text("reply three")] })
      const ran = yield* cli(["chat", "--json", ...common(f)], "a\nb\nc\n")
      expect(ran.code).toBe(0)
      const events = ran.stdout.trim().split("\n").map((line) => JSON.parse(line))
      expect(events.filter((e) => e.type === "reply")).toEqual([
        expect.objectContaining({ source: "final", text: "reply one" }),
        expect.objectContaining({ source: "final", text: "reply two" }),
        expect.objectContaining({ source: "final", text: "reply three" })
      ])
      // the event stream of schemas/events.ts: each turn opens with its thread and session, and completes
      expect(events.filter((e) => e.type === "turn.completed").map((e) => e.final_text)).toEqual(["reply one", "reply two", "reply three"])
      const opened = events.filter((e) => e.type === "thread.started")
      expect(opened).toHaveLength(3)
      expect(new Set(opened.map((e) => e.session_id)).size).toBe(1)
      expect(events.some((e) => "method" in e)).toBe(false)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("[S18] a message whose turn fails is named on stderr, the next is still answered, exit 1", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("reply one"), reply.httpError(400), reply.text("reply three")] })
      const ran = yield* cli(["chat", ...common(f)], "a\nb\nc\n")
      expect(ran.code).toBe(1)
      expect(ran.stdout).toBe("reply one\nreply three\n")
      const lines = ran.stderr.trim().split("\n")
      expect(lines.filter((l) => l.includes("message 2"))).toHaveLength(1)
      expect(lines.some((l) => /message [13]\b/.test(l))).toBe(false)
      expect(lines.at(-1)).toContain("1 of 3 messages got no reply")
      noStackTrace(ran.stderr)
      const requests = yield* f.model.requests
      expect(requests.map(lastUserText)).toEqual(["a", "b", "c"])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("[S12] /model between lines reaches the model; blank lines are skipped; /quit stops reading", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("reply one"), reply.text("reply two")] })
      const ran = yield* cli(["chat", ...common(f), "--session", "chat-model"], "a\n\n   \n/model other-model\nb\n/quit\nnever sent\n")
      expect(ran.code).toBe(0)
      expect(ran.stdout).toBe("reply one\nreply two\n")
      expect(ran.stderr).toContain("model: other-model")
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect((requests[0]!.json as { model?: string }).model).not.toBe("other-model")
      expect(requests[1]!.body).toContain('"model":"other-model"')
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("[S37] /compact compacts the session's thread natively between messages; /queue switches the mode", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        rules: [{ whenRequestIncludes: "CONTEXT CHECKPOINT COMPACTION", reply: reply.text("checkpoint summary") }],
        replies: [reply.text("before compaction"), reply.text("after compaction")]
      })
      const ran = yield* cli(
        ["chat", ...common(f), "--session", "chat-compact"],
        "first\n/compact\n/queue collect\n/queue\nsecond\n"
      )
      expect(ran.code).toBe(0)
      expect(ran.stdout).toBe("before compaction\nafter compaction\n")
      expect(ran.stderr).toMatch(/compacted thread \S+ in \d+\.\d s/)
      expect(ran.stderr).toContain("queue: collect")
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(3)
      expect(requests[1]!.body).toContain("CONTEXT CHECKPOINT COMPACTION")
      const records = fs.readFileSync(path.join(f.stateDir, "sessions", "chat-compact.jsonl"), "utf8")
      expect(records).toContain('"_tag":"compaction"')
      expect(records).toContain('"status":"completed"')
      expect(records).not.toContain("checkpoint summary")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("[S39] sessions list and show: the session, its binding and its transcript; a missing one is exit 1", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("reply one"), reply.text("reply two")] })
      const chat = yield* cli(["chat", ...common(f), "--session", "chat-s"], "first question\nsecond question\n")
      expect(chat.code).toBe(0)

      const list = yield* cli(["sessions", "list", "--state-dir", f.stateDir])
      expect(list.code).toBe(0)
      const row = list.stdout.trim().split("\n")
      // a header, then the session: id, title from its first prompt, updated, turns, model / provider
      expect(row).toHaveLength(2)
      expect(row[1]).toMatch(/^chat-s +first question +\d\d-\d\d \d\d:\d\d +2 {2}\S+ \/ 127\.0\.0\.1:\d+$/)
      const listJson = yield* cli(["sessions", "list", "--json", "--state-dir", f.stateDir])
      const [summary] = JSON.parse(listJson.stdout)
      expect(summary).toMatchObject({ sessionId: "chat-s", turns: 2 })
      expect(summary.threadId).toEqual(expect.any(String))

      const show = yield* cli(["sessions", "show", "--state-dir", f.stateDir, "chat-s"])
      expect(show.code).toBe(0)
      const lines = show.stdout.split("\n")
      expect(lines.find((l) => l.startsWith("thread: "))).toMatch(new RegExp(`^thread: ${summary.threadId} \\(model \\S+, provider \\S+\\)$`))
      expect(lines).toContain("model choice: - (the default)")
      const transcript = lines.filter((l) => /^(you|codex|turn)\b/.test(l))
      expect(transcript).toEqual([
        "you: first question",
        "codex: reply one",
        "turn completed",
        "you: second question",
        "codex: reply two",
        "turn completed"
      ])
      const showJson = yield* cli(["sessions", "show", "--json", "--state-dir", f.stateDir, "chat-s"])
      const records = showJson.stdout.trim().split("\n").map((line) => JSON.parse(line))
      expect(records.filter((r) => r._tag === "user").map((r) => r.text)).toEqual(["first question", "second question"])

      // a corrupt line is reported on stderr and the rest still shows
      const file = path.join(f.stateDir, "sessions", "chat-s.jsonl")
      const good = fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").length
      fs.appendFileSync(file, "{not json\n")
      const damaged = yield* cli(["sessions", "show", "--state-dir", f.stateDir, "chat-s"])
      expect(damaged.code).toBe(0)
      // the same one-line warning a run or chat on the session gives
      expect(damaged.stderr).toBe(
        `codex-harness: warn: ${file}:${good + 1}: skipped a corrupt record (not JSON (a torn or hand-edited line)); ` +
          "`codex-harness sessions repair chat-s` removes it, keeping a backup\n"
      )
      expect(damaged.stdout).toContain("codex: reply two")

      const missing = yield* cli(["sessions", "show", "--state-dir", f.stateDir, "missing"])
      expect(missing.code).toBe(1)
      expect(missing.stdout).toBe("")
      expect(missing.stderr.trim().split("\n")).toEqual([expect.stringContaining("no session missing")])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )
})
