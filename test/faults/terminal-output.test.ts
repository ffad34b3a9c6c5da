// What the compiled CLI prints when the input or the model misbehaves: warnings go to stderr only (stdout carries
// replies or JSON events and nothing else), a reply's escape sequences never reach the terminal raw (while --json keeps
// the text as it was), piped chat splits messages at "\n" only and refuses a line over its bound, and a provider URL
// with a credential in it is refused without repeating the secret.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { RecordedRequest } from "../../src/testing/ScriptedModel.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { type Fixture, fixture, leftBehind, tempDir } from "../support/harness.js"
import { startBin } from "../support/process.js"

const common = (f: Fixture) => ["--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url]

/** the text of the last user message the model received in this request */
const lastUserText = (request: RecordedRequest): string => {
  const input = (request.json as { input?: ReadonlyArray<{ role?: string; content?: ReadonlyArray<{ text?: string }> }> }).input ?? []
  const users = input.filter((item) => item.role === "user")
  return (users.at(-1)?.content ?? []).map((c) => c.text ?? "").join("")
}

const jsonLines = (stdout: string) => stdout.split("\n").filter((l) => l !== "")

describe("stdout carries replies and events only", () => {
  it.scoped("a warning goes to stderr, once, and never to stdout", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir("codex-fault-state-")
      // a directory where a session file should be: `sessions list` skips it with a warning
      fs.mkdirSync(path.join(stateDir, "sessions", "odd.jsonl"), { recursive: true })
      const ran = yield* runBin(["sessions", "list", "--json", "--state-dir", stateDir])
      expect(ran.code).toBe(0)
      expect(ran.stdout).toBe("[]\n")
      expect(ran.stderr.match(/skipped .*odd\.jsonl: not a session file/g)).toHaveLength(1)
    }))

  it.scopedLive("run --json on a session with a corrupt line: the warning is on stderr, every stdout line is JSON", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("first"), reply.text("second")] })
      expect((yield* runBin(["run", ...common(f), "--session", "s", "hello"])).stdout).toBe("first\n")
      fs.appendFileSync(path.join(f.stateDir, "sessions", "s.jsonl"), "{this is not a record\n")
      const ran = yield* runBin(["run", "--json", ...common(f), "--session", "s", "again"])
      expect(ran.code).toBe(0)
      expect(ran.stderr).toMatch(/codex-harness: warn: .*s\.jsonl:\d+: skipped a corrupt record/)
      const lines = jsonLines(ran.stdout)
      expect(lines.length).toBeGreaterThan(0)
      const events = lines.map((line) => JSON.parse(line) as { type?: string; text?: string })
      expect(events.filter((e) => e.type === "reply").map((e) => e.text)).toEqual(["second"])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})

describe("model text at a terminal", () => {
  const hostile = "\u001b[2J\u001b]0;pwned\u0007hello"

  it.scopedLive("a reply that would clear the screen and retitle the window prints as its text; --json keeps it as it was", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text(hostile), reply.text(hostile)] })
      const plain = yield* runBin(["run", ...common(f), "--session", "s", "say hello"])
      expect(plain).toMatchObject({ code: 0, stdout: "hello\n" })
      expect(plain.stdout).not.toContain("\u001b")
      const json = yield* runBin(["run", "--json", ...common(f), "--session", "s", "again"])
      expect(json.code).toBe(0)
      const replies = jsonLines(json.stdout).map((l) => JSON.parse(l) as { type?: string; text?: string }).filter((e) => e.type === "reply")
      expect(replies.map((e) => e.text)).toEqual([hostile])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})

describe("piped chat lines", () => {
  it.scopedLive("a bare CR stays inside its message: 'a\\rb\\nc\\n' is two messages", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("one"), reply.text("two")] })
      const ran = yield* runBin(["chat", ...common(f), "--session", "s"], { input: "a\rb\nc\n" })
      expect(ran.code).toBe(0)
      expect(ran.stdout).toBe("one\ntwo\n")
      const requests = yield* f.model.requests
      expect(requests.map(lastUserText)).toEqual(["a\rb", "c"])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a line over 1 MiB is refused with one line on stderr; the lines around it are sent", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("one"), reply.text("two")] })
      const long = "x".repeat(1024 * 1024 + 10)
      const ran = yield* runBin(["chat", ...common(f), "--session", "s"], { input: `first\r\n${long}\nlast\n` })
      expect(ran.code).toBe(1)
      expect(ran.stdout).toBe("one\ntwo\n")
      expect(ran.stderr).toContain(`codex-harness: message 2 was not sent: its line is ${long.length} bytes, over the limit of 1048576 bytes\n`)
      expect(ran.stderr.trim().split("\n").at(-1)).toBe("codex-harness: 1 of 3 messages got no reply (#2)")
      expect((yield* f.model.requests).map(lastUserText)).toEqual(["first", "last"])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})

describe("piped chat ends when it is told to", () => {
  it.scopedLive("/quit ends the chat at once, while stdin stays open", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const chat = yield* startBin(["chat", ...common(f)], { input: "/quit\n" })
      const exit = yield* chat.exited.pipe(Effect.timeout("120 seconds"), Effect.option)
      expect(exit).toMatchObject({ _tag: "Some", value: { code: 0 } })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})

describe("credentials in the provider URL", () => {
  it.scoped("a --provider-url with a password is refused in one line that hides it", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir("codex-fault-state-")
      const ran = yield* runBin(["run", "--state-dir", stateDir, "--provider-url", "http://me:s3cr3t-value@127.0.0.1:9/v1", "hi"])
      expect(ran.code).not.toBe(0)
      expect(ran.stdout).toBe("")
      expect(ran.stderr).not.toContain("s3cr3t")
      expect(ran.stderr.trim().split("\n")).toHaveLength(1)
      expect(ran.stderr).toContain("--provider-url: http://***@127.0.0.1:9/v1 carries a credential")
      expect(ran.stderr).toContain("$OPENAI_API_KEY, or the variable --provider-key-env names")
      expect(fs.existsSync(path.join(stateDir, "sessions"))).toBe(false)
    }))
})
