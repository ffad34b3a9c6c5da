// The wire recorder and the replay's comparison, without an app-server: what reaches the file (secrets masked,
// directories as placeholders, mode 0600), how the file is opened and what a failed write does, and how a replay
// compares the harness's messages with the recorded ones.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { FramedLine } from "../../src/appserver/LineFramer.js"
import type { TransportHandle } from "../../src/appserver/Transport.js"
import * as WireRecorder from "../../src/appserver/WireRecorder.js"
import * as WireRecording from "../../src/appserver/WireRecording.js"
import { compare, expand } from "../../src/testing/mock/ReplayMatch.js"

/** a transport that keeps what is sent and yields `incoming` as the app-server's lines */
const fakeHandle = (incoming: ReadonlyArray<string>) => {
  const sent: Array<string> = []
  let ended = false
  const handle: TransportHandle = {
    pid: undefined,
    incoming: Stream.fromIterable(incoming.map((text): FramedLine => ({ _tag: "Line", text }))),
    send: (line) => Effect.sync(() => (sent.push(line), true)),
    exited: Effect.never,
    stderrTail: Effect.succeed(""),
    endInput: Effect.sync(() => void (ended = true))
  }
  return { handle, sent, ended: () => ended }
}

const scratch = () => fs.mkdtempSync(path.join(os.tmpdir(), "codex-harness-wire-"))

describe("wire recording", () => {
  it.scoped("secrets are masked before anything reaches the file: by key, by shape, and every known secret value", () =>
    Effect.gen(function* () {
      const dir = scratch()
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const hidden = "CODEX_HARNESS_TEST_HIDDEN_VAR"
      process.env[hidden] = "hidden-value-0123456789"
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[hidden]))
      const providerKey = "provider-key-abcdef123456"
      const file = path.join(dir, "wire.jsonl")
      const fake = fakeHandle([
        // a command's output that printed the environment, and a usage notification (counts, not secrets)
        JSON.stringify({ method: "item/completed", params: { item: { aggregatedOutput: `OPENAI_API_KEY=${providerKey}\n${hidden}=hidden-value-0123456789\n` } } }),
        JSON.stringify({ method: "thread/tokenUsage/updated", params: { tokenUsage: { total: { totalTokens: 15 } }, contentTokenCount: 3 } }),
        "a line that is not JSON: password=letmein-please"
      ])
      yield* Effect.scoped(
        Effect.gen(function* () {
          const recorder = yield* WireRecorder.make(file, { roots: { cwd: dir } })
          const wrapped = yield* recorder.wrap(fake.handle, { env: { OPENAI_API_KEY: providerKey }, hiddenEnv: [hidden] })
          expect(
            yield* wrapped.send(JSON.stringify({
              id: 1,
              method: "thread/start",
              params: {
                cwd: dir,
                config: { apiKey: "sk-live-abcdefgh12345678", headers: { Authorization: "Bearer abcdefghijkl", "X-Trace": "opaque" } },
                developerInstructions: `use the key ${providerKey} and Authorization: Bearer zyxwvutsrqpo`
              }
            }))
          ).toBe(true)
          yield* Stream.runDrain(wrapped.incoming)
        })
      )
      // the app-server got the line as the harness wrote it: only the file is masked
      expect(fake.sent[0]).toContain(providerKey)
      const text = fs.readFileSync(file, "utf8")
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      for (const secret of [providerKey, "hidden-value-0123456789", "sk-live-abcdefgh12345678", "abcdefghijkl", "zyxwvutsrqpo", "letmein-please", "opaque"]) {
        expect(text).not.toContain(secret)
      }
      const recording = yield* WireRecording.parse(text, file)
      const [start, output, usage, line] = recording.entries as ReadonlyArray<Record<string, any>>
      expect(start).toMatchObject({ conn: 1, from: "harness", message: { id: 1, method: "thread/start" } })
      expect(start!.message.params).toEqual({
        cwd: "{{cwd}}",
        config: { apiKey: "***", headers: { Authorization: "***", "X-Trace": "***" } },
        developerInstructions: "use the key *** and Authorization: Bearer ***"
      })
      expect(output!.message.params.item.aggregatedOutput).toBe(`OPENAI_API_KEY=***\n${hidden}=***\n`)
      expect(usage!.message.params).toEqual({ tokenUsage: { total: { totalTokens: 15 } }, contentTokenCount: 3 })
      expect(line).toMatchObject({ from: "app-server", line: "a line that is not JSON: password=***" })
    }))

  it.scoped("the file is opened 0600 before anything is sent: an existing file is truncated, a link or a missing directory refused", () =>
    Effect.gen(function* () {
      const dir = scratch()
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const existing = path.join(dir, "old.jsonl")
      fs.writeFileSync(existing, "old content that is longer than a header line, and then some more of it to be sure\n".repeat(3), { mode: 0o644 })
      yield* Effect.scoped(WireRecorder.make(existing))
      expect(fs.statSync(existing).mode & 0o777).toBe(0o600)
      expect(fs.readFileSync(existing, "utf8")).not.toContain("old content")

      const target = path.join(dir, "target.txt")
      fs.writeFileSync(target, "keep me")
      const link = path.join(dir, "link.jsonl")
      fs.symlinkSync(target, link)
      const refused = yield* Effect.flip(Effect.scoped(WireRecorder.make(link)))
      expect(refused).toMatchObject({ _tag: "WireRecordingFailed", stage: "open", reason: "it is a symbolic link" })
      expect(fs.readFileSync(target, "utf8")).toBe("keep me")

      const missing = yield* Effect.flip(Effect.scoped(WireRecorder.make(path.join(dir, "no", "such", "dir.jsonl"))))
      expect(missing.message).toBe(`cannot record the app-server traffic to ${path.join(dir, "no", "such", "dir.jsonl")}: no such directory`)
    }))

  it.scoped("a line the recording cannot keep is never sent: the connection ends and the failure is kept for the caller", () =>
    Effect.gen(function* () {
      let writes = 0
      const sink: WireRecorder.RecordingSink = {
        // the header goes through; the disk fills up after it
        write: () => Effect.suspend(() => (++writes === 1 ? Effect.void : Effect.fail("no space left on device"))),
        close: Effect.void
      }
      const recorder = yield* WireRecorder.recordTo(sink, "/x/wire.jsonl")
      const fake = fakeHandle([])
      const wrapped = yield* recorder.wrap(fake.handle, {})
      expect(yield* wrapped.send(JSON.stringify({ id: 0, method: "initialize", params: {} }))).toBe(false)
      expect(fake.sent).toEqual([])
      expect(fake.ended()).toBe(true)
      const failure = yield* recorder.failure
      expect(Option.getOrThrow(failure).message).toBe("recording the app-server traffic to /x/wire.jsonl failed: no space left on device")
      // the connection's reason for ending names it
      expect(yield* wrapped.stderrTail).toContain("no space left on device")
    }))

  it.effect("a file that is not a recording is refused naming the line", () =>
    Effect.gen(function* () {
      const header = WireRecording.headerLine("2026-01-01T00:00:00.000Z")
      const entry = JSON.stringify({ t: 0, conn: 1, from: "harness", message: { method: "initialized" } })
      expect((yield* WireRecording.parse([header, entry].join("\n"), "f.jsonl")).entries).toHaveLength(1)
      expect((yield* Effect.flip(WireRecording.parse("", "f.jsonl"))).message).toBe("cannot replay f.jsonl: it is empty")
      expect((yield* Effect.flip(WireRecording.parse(`{"format":"x"}\n${entry}`, "f.jsonl"))).message).toBe(
        "cannot replay f.jsonl: line 1: not a codex-harness wire recording of version 1"
      )
      expect((yield* Effect.flip(WireRecording.parse(`${header}\n${entry}\n{"t":1,"conn":1,"from":"model"}`, "f.jsonl"))).message).toBe(
        "cannot replay f.jsonl: line 3: not an entry of the recording"
      )
    }))

  it("people's answers (a question's, an elicitation form's) keep their shape but none of their strings; other replies are kept", () => {
    const keep = WireRecording.keeper([], {})
    const asked = (id: number, method: string) => keep.entryBody(JSON.stringify({ id, method, params: {} }), "app-server")
    const replied = (id: number, result: unknown) => keep.entryBody(JSON.stringify({ id, result }), "harness")
    asked(7, "item/tool/requestUserInput")
    asked(8, "mcpServer/elicitation/request")
    asked(9, "item/commandExecution/requestApproval")
    expect(replied(7, { answers: { db: { answers: ["hunter2-Zq8sW"] } } })).toEqual({ message: { id: 7, result: { answers: { db: { answers: ["***"] } } } } })
    expect(replied(8, { action: "accept", content: { pin: "1234-secret", count: 3 } })).toEqual({
      message: { id: 8, result: { action: "***", content: { pin: "***", count: 3 } } }
    })
    expect(replied(9, { decision: "accept" })).toEqual({ message: { id: 9, result: { decision: "accept" } } })
    // an id is withheld once: a later request of the harness's own that reuses the number is kept
    expect(replied(7, { ok: "yes" })).toEqual({ message: { id: 7, result: { ok: "yes" } } })
  })

  it("directories become placeholders where a path component ends, the longest root first", () => {
    const places = WireRecording.toPlaceholders({ cwd: "/tmp/work-1", stateDir: "/tmp/state", tmp: "/tmp", home: "/home/me" })
    expect(places("cd /tmp/work-1 && ls /tmp/work-1/src")).toBe("cd {{cwd}} && ls {{cwd}}/src")
    expect(places("/tmp/work-10/a /tmp/state/x /tmp/other")).toBe("{{tmp}}/work-10/a {{stateDir}}/x {{tmp}}/other")
    expect(places("/x/tmp/y file:///home/me/a")).toBe("/x/tmp/y file://{{home}}/a")
  })
})

describe("replay comparison", () => {
  const bound = new Map([["tmp", "/var/tmp"]] as const)

  it("names the first differing field by its path, and binds a placeholder on its first match", () => {
    const recorded = { threadId: "t1", input: [{ type: "text", text: "a" }], cwd: "{{cwd}}" }
    expect(compare(recorded, { threadId: "t1", input: [{ type: "text", text: "b" }], cwd: "/w" }, bound, "params")).toEqual({
      _tag: "Differs",
      difference: { path: "params.input[0].text", recorded: '"a"', got: '"b"' }
    })
    const same = compare(recorded, { threadId: "t1", input: [{ type: "text", text: "a" }], cwd: "/w" }, bound, "params")
    expect(same._tag === "Same" && same.bindings.get("cwd")).toBe("/w")
    // bound now: another workspace later in the replay is a difference
    const later = compare({ cwd: "{{cwd}}/src" }, { cwd: "/elsewhere/src" }, same._tag === "Same" ? same.bindings : bound)
    expect(later).toMatchObject({ _tag: "Differs", difference: { path: "cwd" } })
  })

  it("a field only one side has, or an array of another length, is a difference", () => {
    expect(compare({ a: 1 }, { a: 1, b: 2 }, bound, "params")).toMatchObject({ difference: { path: "params.b", recorded: "nothing", got: "2" } })
    expect(compare({ a: 1, b: 2 }, { a: 1 }, bound, "params")).toMatchObject({ difference: { path: "params.b", recorded: "2", got: "nothing" } })
    expect(compare([1, 2], [1], bound, "xs")).toMatchObject({ difference: { path: "xs[1]", recorded: "2", got: "nothing" } })
    expect(compare({ "features.hooks": true }, { "features.hooks": false }, bound, "config")).toMatchObject({
      difference: { path: 'config["features.hooks"]' }
    })
  })

  it("the hook relay's directory and the trust hashes of commands that hold it compare by their shape", () => {
    const hash = (c: string) => `sha256:${c.repeat(64)}`
    const recorded = { command: "relay --socket {{tmp}}/codex-hr-2174-E8NeIX/relay.sock", trusted_hash: hash("a") }
    const got = { command: "relay --socket /var/tmp/codex-hr-99-Qx1z2Y/relay.sock", trusted_hash: hash("b") }
    expect(compare(recorded, got, bound)._tag).toBe("Same")
    expect(compare(recorded, { ...got, command: "relay --socket /elsewhere/codex-hr-99-Qx1z2Y/relay.sock" }, bound)._tag).toBe("Differs")
  })

  it("what the replay sends has its placeholders filled in; an unbound one stays as written", () => {
    expect(expand({ cwd: "{{tmp}}/w", items: ["{{cwd}}/a"], n: 1 }, bound)).toEqual({ cwd: "/var/tmp/w", items: ["{{cwd}}/a"], n: 1 })
  })
})
