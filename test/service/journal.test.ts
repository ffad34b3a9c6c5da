// Session files as a journal that cannot lose a record, on the real file system: one writer per session (a second
// holder is refused naming the first; a dead holder's lock is taken over), a torn last line moved aside once, prompts
// and compactions a crash left open settled when the session is next opened, and a failed append failing the turn
// before anything reaches the app-server.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope, TestClock } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Test from "../../layers/internal/Test.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import * as Composition from "../../src/harness/Composition.js"
import * as FileSessionStore from "../../src/session/FileSessionStore.js"
import { parseLines, SessionLocked } from "../../src/session/SessionStore.js"
import { layer as mockLayer, MockAppServer } from "../../src/testing/MockAppServer.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { tempDir } from "../support/harness.js"

const store = (stateDir: string) => FileSessionStore.fileStore(stateDir).pipe(Effect.provide(NodeFileSystem.layer))
const lines = (file: string) => fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "")
const tags = (file: string) => parseLines(fs.readFileSync(file, "utf8")).records.map((r) => r._tag)

/** the held-session time passes on the TestClock; then (bounded) the lock file the release removes is gone */
const released = (lock: string) =>
  TestClock.adjust(FileSessionStore.heldIdleTimeToLive).pipe(
    // the receipt is the file's absence; bounded at 5 s (a loaded machine can take a while to run the release's I/O)
    Effect.zipRight(Effect.promise(async () => {
      for (let i = 0; i < 500 && fs.existsSync(lock); i++) await new Promise((resolve) => setTimeout(resolve, 10))
    }))
  )

/** a pid that belonged to a process that has exited */
const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid!

describe("session journal", () => {
  it.scoped("one writer per session: a second holder is refused naming the first; released, the lock can be taken again", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const first = yield* store(dir)
      const second = yield* store(dir)
      const held = yield* Scope.make()
      yield* first.hold("s1").pipe(Scope.extend(held))
      // the same store shares its lock between operations
      yield* Effect.scoped(first.hold("s1"))
      const refused = yield* Effect.scoped(second.hold("s1")).pipe(Effect.flip)
      expect(refused).toBeInstanceOf(SessionLocked)
      expect(refused.message).toMatch(new RegExp(`^session s1 is in use by another codex-harness process \\(pid ${process.pid}, `))
      // another session is independent
      yield* Effect.scoped(second.hold("s2"))
      yield* Scope.close(held, Exit.void)
      // kept a little while for the next operation of this process, then let go
      expect(fs.existsSync(path.join(dir, "sessions", "s1.lock"))).toBe(true)
      yield* released(path.join(dir, "sessions", "s1.lock"))
      expect(fs.existsSync(path.join(dir, "sessions", "s1.lock"))).toBe(false)
      yield* Effect.scoped(second.hold("s1"))
    }))

  it.scoped("a lock left by a process that died is taken over", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      fs.mkdirSync(path.join(dir, "sessions"), { recursive: true })
      const lock = path.join(dir, "sessions", "s1.lock")
      fs.writeFileSync(lock, JSON.stringify({ pid: deadPid(), host: os.hostname(), command: "run", since: "2026-01-01T00:00:00.000Z" }))
      const s = yield* store(dir)
      yield* Effect.scoped(s.hold("s1"))
      yield* released(lock)
      expect(fs.existsSync(lock)).toBe(false)
    }))

  it.scoped("a torn last line is moved to a .torn file once, and the next record starts on a line of its own", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      fs.mkdirSync(path.join(dir, "sessions"), { recursive: true })
      const file = path.join(dir, "sessions", "s1.jsonl")
      const binding = JSON.stringify({ _tag: "binding", at: "t", threadId: "th1" })
      const turn = JSON.stringify({ _tag: "turn", at: "t", threadId: "th1", turnId: "u1", status: "completed" })
      fs.writeFileSync(file, `${binding}\n${turn}\n{"_tag":"user","at":"t","te`)
      const s = yield* store(dir)
      yield* Effect.scoped(Effect.zipRight(s.hold("s1"), s.append("s1", { _tag: "model", at: "t2", model: "m" })))
      expect(fs.readFileSync(`${file}.torn`, "utf8")).toBe('{"_tag":"user","at":"t","te')
      expect(lines(file)).toEqual([binding, turn, JSON.stringify({ _tag: "model", at: "t2", model: "m" })])
      expect((yield* s.read("s1")).corrupt).toEqual([])
    }))

  it.scoped("a prompt and a compaction a crash left without an outcome are settled when the session is next opened", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      fs.mkdirSync(path.join(dir, "sessions"), { recursive: true })
      const file = path.join(dir, "sessions", "s1.jsonl")
      fs.writeFileSync(
        file,
        [
          { _tag: "binding", at: "t", threadId: "th1" },
          { _tag: "compaction", at: "t", threadId: "th1", turnId: "c1", status: "started" },
          { _tag: "user", at: "t", text: "the prompt of a turn the harness never saw end" }
        ].map((r) => JSON.stringify(r) + "\n").join("")
      )
      const s = yield* store(dir)
      yield* Effect.scoped(s.hold("s1"))
      expect(tags(file)).toEqual(["binding", "compaction", "user", "compaction", "settled"])
      const records = parseLines(fs.readFileSync(file, "utf8")).records
      expect(records[3]).toMatchObject({ turnId: "c1", status: "failed" })
      expect(records[4]).toMatchObject({ status: "interrupted" })
      // settled once: opening again adds nothing
      yield* Effect.scoped(s.hold("s1"))
      expect(tags(file)).toHaveLength(5)
    }))

  it.scoped("an append that cannot be written fails the turn before anything is sent to the app-server", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      fs.mkdirSync(path.join(dir, "sessions"), { recursive: true })
      const file = path.join(dir, "sessions", "ro.jsonl")
      // a directory where the session file should be: every append fails
      fs.mkdirSync(file)
      const layer = Composition.layer({ ...Test.settings, stateDir: dir }).pipe(
        Layer.provideMerge(FileSessionStore.fileLayer(dir)),
        Layer.provideMerge(mockLayer()),
        Layer.provideMerge(RecordingDelivery.layer),
        Layer.provideMerge(NodeFileSystem.layer)
      )
      yield* Effect.gen(function* () {
        const error = yield* Effect.flatMap(CodexHarness, (h) => h.runTurn({ sessionId: "ro", prompt: "hello" })).pipe(Effect.flip)
        expect(error._tag).toBe("SessionStoreError")
        const mock = yield* MockAppServer
        expect(yield* mock.requests("turn/start")).toHaveLength(0)
        expect(yield* mock.requests("thread/start")).toHaveLength(0)
      }).pipe(Effect.provide(layer))
    }))
})
