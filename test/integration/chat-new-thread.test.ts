// `/new --carry` and `/new --thread` in a piped chat: the compiled bin (npm test builds it first) against the real
// app-server and a scripted model. The session stays, its Codex thread is fresh; --carry brings the conversation along.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type RecordedRequest, reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { type Fixture, fixture, leftBehind } from "../support/harness.js"

const common = (f: Fixture) => ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir]

interface InputMessage {
  readonly role?: string
  readonly content?: ReadonlyArray<{ readonly text?: string }>
}

/** The conversation a request carried: role and text of every user or assistant message in its input. */
const conversation = (request: RecordedRequest) =>
  ((request.json as { input?: ReadonlyArray<InputMessage> }).input ?? [])
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => `${m.role}: ${(m.content ?? []).map((c) => c.text ?? "").join("")}`)
    .filter((m) => /: (first|second|third|fourth|reply \w+)$/.test(m))

describe("codex-harness chat (piped): /new --carry and /new --thread", () => {
  it.scopedLive("[S38] /new --carry keeps the session on a fresh thread carrying the conversation; /new --thread on an empty one; /new is a new session", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        replies: [reply.text("reply one"), reply.text("reply two"), reply.text("reply three"), reply.text("reply four")]
      })
      const ran = yield* runBin(["chat", ...common(f), "--session", "chat-carry"], {
        input: "first\n/new --carry\nsecond\n/new --thread\nthird\n/new --bogus\n/help\n/new\nfourth\n"
      })
      expect(ran.code).toBe(0)
      expect(ran.stdout).toBe("reply one\nreply two\nreply three\nreply four\n")
      const said = ran.stderr.trim().split("\n")
      expect(said).toContain("session: chat-carry continues on a fresh thread from the next message, carrying this conversation")
      expect(said).toContain("session: chat-carry continues on a fresh thread from the next message, without this conversation")
      expect(said).toContain('/new: expected --carry, --thread or nothing, got "--bogus"')
      expect(said.some((l) => /^ {2}\/new --carry +stay in this session on a fresh Codex thread that carries/.test(l))).toBe(true)
      expect(said.some((l) => /^ {2}\/new --thread +stay in this session on a fresh, empty Codex thread/.test(l))).toBe(true)
      expect(said.at(-1)).toMatch(/^session: [0-9a-f-]{36}$/)

      const requests = yield* f.model.requests
      expect(requests).toHaveLength(4)
      // --carry: the fresh thread's request carries the first exchange before the new prompt
      expect(conversation(requests[1]!)).toEqual(["user: first", "assistant: reply one", "user: second"])
      // --thread: a fresh, empty thread
      expect(conversation(requests[2]!)).toEqual(["user: third"])
      // /new: a new session
      expect(conversation(requests[3]!)).toEqual(["user: fourth"])

      // one session for the first three messages, on three threads
      const records = fs.readFileSync(path.join(f.stateDir, "sessions", "chat-carry.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
      const threads = records.filter((r) => r._tag === "binding").map((r) => r.threadId)
      expect(new Set(threads).size).toBe(3)
      expect(records.filter((r) => r._tag === "detached").map((r) => [r.threadId, r.carry])).toEqual([[threads[0], true], [threads[1], undefined]])
      expect(records.filter((r) => r._tag === "user").map((r) => r.text)).toEqual(["first", "second", "third"])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )
})
