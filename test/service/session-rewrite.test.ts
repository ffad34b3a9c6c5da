// Rewriting a session file after the fact (a redaction, S40), on the real file system: only the named harness-owned
// content records change and every other line stays byte for byte; the file is replaced atomically (0600, no temp file
// left) under the session's lock, so a rewrite while another process holds the session is refused, and a write that
// fails part-way leaves the file byte-identical and fails the operation. A held session keeps appending to the new file.
import { FileSystem } from "@effect/platform"
import { SystemError } from "@effect/platform/Error"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Schema, Scope } from "effect"
import { vi } from "vitest"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Sessions from "../../src/cli/sessions.js"
import { tool } from "../../src/ports/DynamicTools.js"
import { ToolResultPersistence } from "../../src/ports/ToolResultPersistence.js"
import * as FileSessionStore from "../../src/session/FileSessionStore.js"
import { memoryStore, parseLines, RecordRewriteRefused, SessionLocked, SessionStore } from "../../src/session/SessionStore.js"
import * as TranscriptMirror from "../../src/session/TranscriptMirror.js"
import * as EmbedderTools from "../../src/tools/EmbedderTools.js"
import { tempDir } from "../support/harness.js"

const store = (stateDir: string, fsLayer: Layer.Layer<FileSystem.FileSystem> = NodeFileSystem.layer) =>
  FileSessionStore.fileStore(stateDir).pipe(Effect.provide(fsLayer))
const sha = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex")

const ref = { threadId: "th1", turnId: "u1" }
const lines = [
  JSON.stringify({ _tag: "binding", at: "t", threadId: "th1" }),
  JSON.stringify({ _tag: "user", at: "t", text: "look it up" }),
  JSON.stringify({ _tag: "tool", at: "t", ...ref, callId: "c1", name: "lookup", success: true, text: "secret: 42" }),
  "{not json, kept as it is",
  JSON.stringify({ _tag: "tool", at: "t", ...ref, callId: "c2", name: "lookup", success: true, text: "public" }),
  JSON.stringify({ _tag: "assistant", at: "t", ...ref, text: "the secret is 42", delivered: true }),
  JSON.stringify({ _tag: "turn", at: "t", ...ref, status: "completed" })
]

/** a session file with these lines, as an earlier process left it */
const seed = (dir: string, id = "s1") => {
  fs.mkdirSync(path.join(dir, "sessions"), { recursive: true })
  const file = path.join(dir, "sessions", `${id}.jsonl`)
  fs.writeFileSync(file, lines.map((l) => `${l}\n`).join(""), { mode: 0o600 })
  return file
}

/**
 * Node's file system, except that a whole-file write fails after half its bytes (a full disk): every write through a
 * handle not opened for plain appending ("a", "a+"), which is how a rewrite writes, wherever it writes
 */
const diskFullForTemp = Layer.effect(
  FileSystem.FileSystem,
  Effect.map(FileSystem.FileSystem, (real) => ({
    ...real,
    open: (file: string, options?: FileSystem.OpenFileOptions) =>
      Effect.map(real.open(file, options), (handle) =>
        options?.flag !== "a" && options?.flag !== "a+"
          ? new Proxy(handle, {
            get: (target, key, receiver) =>
              key === "writeAll"
                ? (bytes: Uint8Array) =>
                  Effect.zipRight(
                    target.writeAll(bytes.subarray(0, bytes.length >> 1)),
                    Effect.fail(new SystemError({ reason: "Unknown", module: "FileSystem", method: "writeAll", description: "ENOSPC: no space left on device" }))
                  )
                : Reflect.get(target, key, receiver)
          })
          : handle)
  }))
).pipe(Layer.provide(NodeFileSystem.layer))

describe("session rewrite", () => {
  it.scoped("[S40] a redaction changes only the named records; every other line stays byte for byte, the file 0600", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const file = seed(dir)
      const mirror = yield* TranscriptMirror.make.pipe(Effect.provideService(SessionStore, yield* store(dir)))
      expect(yield* mirror.redact("s1", { callId: "c1" })).toBe(1)
      const after = fs.readFileSync(file, "utf8").split("\n")
      expect(after.filter((_, i) => i !== 2)).toEqual([...lines.filter((_, i) => i !== 2), ""])
      expect(JSON.parse(after[2]!)).toMatchObject({ _tag: "tool", callId: "c1", text: "[redacted]", redacted: true })
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      expect(fs.readdirSync(path.join(dir, "sessions")).filter((n) => n.includes("rewrite"))).toEqual([])
      // a repeated redaction finds nothing left to change and writes nothing
      const hash = sha(file)
      expect(yield* mirror.redact("s1", { callId: "c1" })).toBe(0)
      expect(sha(file)).toBe(hash)
      // a turn redaction covers its tool results and replies, never the prompt
      expect(yield* mirror.redact("s1", { turnId: "u1" })).toBe(2)
      const texts = parseLines(fs.readFileSync(file, "utf8")).records.flatMap((r) => ("text" in r ? [r.text] : []))
      expect(texts).toEqual(["look it up", "[redacted]", "[redacted]", "[redacted]"])
    }))

  it.scoped("[S40] a session this process holds reads the rewritten records and keeps appending to the new file", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const file = seed(dir)
      const s = yield* store(dir)
      yield* s.hold("s1")
      const inode = fs.statSync(file).ino
      expect(yield* s.rewrite("s1", TranscriptMirror.redaction({ callId: "c2" }))).toBe(1)
      expect(fs.statSync(file).ino).not.toBe(inode)
      yield* s.append("s1", { _tag: "notice", at: "t", text: "after the rewrite" })
      const onDisk = parseLines(fs.readFileSync(file, "utf8"))
      expect(onDisk.records.map((r) => ("text" in r ? r.text : r._tag))).toEqual(
        ["binding", "look it up", "secret: 42", "[redacted]", "the secret is 42", "turn", "after the rewrite"]
      )
      expect((yield* s.read("s1")).records).toEqual(onDisk.records)
      expect(onDisk.corrupt).toEqual([{ line: 4, reason: "not JSON (a torn or hand-edited line)" }])
    }))

  it.scoped("[S40] a write that fails part-way leaves the file byte-identical and fails the rewrite; appends go on", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const file = seed(dir)
      const hash = sha(file)
      const s = yield* store(dir, diskFullForTemp)
      yield* s.hold("s1")
      const error = yield* Effect.flip(s.rewrite("s1", TranscriptMirror.redaction({ callId: "c1" })))
      expect(error._tag).toBe("SessionStoreError")
      expect(error.message).toContain("no space left on device")
      expect(sha(file)).toBe(hash)
      expect(fs.readdirSync(path.join(dir, "sessions")).filter((n) => n.includes("rewrite"))).toEqual([])
      expect((yield* s.read("s1")).records.find((r) => r._tag === "tool")).toMatchObject({ text: "secret: 42" })
      yield* s.append("s1", { _tag: "notice", at: "t", text: "still writable" })
      expect(fs.readFileSync(file, "utf8").endsWith(`${JSON.stringify({ _tag: "notice", at: "t", text: "still writable" })}\n`)).toBe(true)
    }))

  it.scoped("[S40] a rewrite while another process holds the session is refused, and the file is untouched", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const file = seed(dir)
      const hash = sha(file)
      // two stores are two writers as far as the lock goes (each has its own holds), as two processes are
      const other = yield* store(dir)
      const held = yield* Scope.make()
      yield* other.hold("s1").pipe(Scope.extend(held))
      const error = yield* Effect.flip((yield* store(dir)).rewrite("s1", TranscriptMirror.redaction({ callId: "c1" })))
      expect(error).toBeInstanceOf(SessionLocked)
      expect(sha(file)).toBe(hash)
      yield* Scope.close(held, Exit.void)
    }))

  it.scoped("[S40] a rewrite of a structural record or into another kind is refused before anything is written", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const file = seed(dir)
      const hash = sha(file)
      const s = yield* store(dir)
      const binding = yield* Effect.flip(s.rewrite("s1", (r) => (r._tag === "binding" ? { ...r, threadId: "other" } : undefined)))
      expect(binding).toBeInstanceOf(RecordRewriteRefused)
      expect(binding.message).toBe("session s1: rewrite refused: line 1 is a binding record, which stays as written")
      const kind = yield* Effect.flip(s.rewrite("s1", (r) => (r._tag === "user" ? { _tag: "notice", at: "t", text: "x" } : undefined)))
      expect(kind.message).toContain("line 2: a user record cannot become a notice record")
      expect(sha(file)).toBe(hash)
    }))

  it.scoped("[S40] `sessions redact ID --call` redacts through the store; exactly one of --call and --turn", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const file = seed(dir)
      const said: Array<string> = []
      const log = vi.spyOn(console, "log").mockImplementation((line: string) => void said.push(line))
      yield* Effect.addFinalizer(() => Effect.sync(() => log.mockRestore()))
      const options = { sessionId: "s1", stateDir: Option.some(dir), call: Option.some("c1"), turn: Option.none<string>() }
      yield* Sessions.redact(options).pipe(Effect.provide(NodeFileSystem.layer))
      expect(said).toEqual([`redacted: 1 record of call c1 in ${file}`])
      expect(parseLines(fs.readFileSync(file, "utf8")).records.find((r) => r._tag === "tool")).toMatchObject({ callId: "c1", text: "[redacted]" })
      const both = yield* Effect.flip(Sessions.redact({ ...options, turn: Option.some("u1") }).pipe(Effect.provide(NodeFileSystem.layer)))
      expect(both).toMatchObject({ _tag: "UsageError", line: "sessions redact takes exactly one of --call CALL_ID and --turn TURN_ID" })
    }))

  it.effect("[S40] a dynamic tool's result is recorded through the persistence hook; a hook that dies records a placeholder", () =>
    Effect.gen(function* () {
      const store = memoryStore()
      const mirror = yield* TranscriptMirror.make.pipe(Effect.provideService(SessionStore, store))
      const echo = tool({ name: "echo", description: "echo", input: Schema.Struct({ s: Schema.String }), handler: (a) => Effect.succeed(a.s) })
      const call = { sessionId: "t1", threadId: "th1", turnId: "u1", callId: "c1" }
      const run = (persist: (text: string) => Effect.Effect<string>) =>
        Effect.gen(function* () {
          const record = yield* EmbedderTools.mirrorRecorder.pipe(
            Effect.provideService(TranscriptMirror.TranscriptMirror, mirror),
            Effect.provideService(ToolResultPersistence, { persist: ({ result }) => persist(result.text) })
          )
          const served = EmbedderTools.makeExtension([echo], { record }).tools!("t1")[0]!
          return yield* served.handler({ s: "key=abc" }, call)
        })
      // the model gets the result as the tool returned it, whatever the hook keeps
      expect(yield* run((text) => Effect.succeed(text.replace("abc", "***")))).toEqual({ text: "key=abc", success: true })
      expect(yield* run(() => Effect.die("hook bug"))).toEqual({ text: "key=abc", success: true })
      const texts = (yield* store.read("t1")).records.map((r) => (r._tag === "tool" ? r.text : r._tag))
      expect(texts).toEqual(["key=***", EmbedderTools.hookFailedText])
    }))
})
