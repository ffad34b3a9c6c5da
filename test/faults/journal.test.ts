// The session journal under faults, on the real app-server: a second process on a session in use is refused in one
// line naming the holder (and sends nothing); two runs racing on a new session leave one binding; a torn last line is
// moved aside once and the session goes on; a full disk (a small tmpfs the test mounts) fails the turn in one line
// before the model is asked, and leaves the file as it was; a prompt Codex refuses on a new session leaves no binding.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { parseLines } from "../../src/session/SessionStore.js"
import { RecordingDelivery } from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind, liveContext, tempDir } from "../support/harness.js"
import { startBin } from "../support/process.js"

const sessionFile = (stateDir: string, id: string) => path.join(stateDir, "sessions", `${id}.jsonl`)
const recordsOf = (stateDir: string, id: string) => parseLines(fs.readFileSync(sessionFile(stateDir, id), "utf8")).records
const threadsBound = (stateDir: string, id: string) =>
  new Set(recordsOf(stateDir, id).flatMap((r) => (r._tag === "binding" ? [r.threadId] : [])))
const cliArgs = (f: { stateDir: string; workDir: string; model: { url: string } }, session: string) =>
  ["--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "--session", session]

// Mounting a tmpfs needs root (or CAP_SYS_ADMIN); where the test cannot mount one, the full-disk test is skipped and
// says so in its title.
const canMount = (() => {
  if (process.platform !== "linux" || process.getuid?.() !== 0) return false
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), "codex-harness-mount-probe-"))
  try {
    if (spawnSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe]).status !== 0) return false
    spawnSync("umount", [probe])
    return true
  } finally {
    fs.rmSync(probe, { recursive: true, force: true })
  }
})()

/** a tmpfs of `sizeKb` mounted on a fresh directory (0700), unmounted when the scope closes */
const smallDisk = (sizeKb: number) =>
  Effect.gen(function* () {
    const dir = yield* tempDir("codex-harness-disk-")
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeKb}k,mode=0700`, "tmpfs", dir])
        if (mounted.status !== 0) throw new Error(`mount failed: ${mounted.stderr}`)
      }),
      () => Effect.sync(() => void spawnSync("umount", ["-l", dir]))
    )
    return dir
  })

/** fills the file system holding `dir` until only `leaveBytes` are free; the filler is returned so it can be removed */
const fillUpTo = (dir: string, leaveBytes: number) => {
  const { bavail, bsize } = fs.statfsSync(dir)
  const filler = path.join(dir, "filler")
  fs.writeFileSync(filler, Buffer.alloc(Math.max(0, bavail * bsize - leaveBytes)))
  return filler
}

describe("the session journal under faults", () => {
  it.scopedLive("a run on a session a chat holds is refused in one line naming the chat, and sends nothing; the chat goes on", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("chat reply one"), reply.text("chat reply two"), reply.text("after the chat")] })
      const chat = yield* startBin(["chat", ...cliArgs(f, "shared")], { input: "first message\n" })
      expect(yield* chat.waitFor(({ stdout }) => stdout.includes("chat reply one"))).toBe(true)

      const refused = yield* runBin(["run", ...cliArgs(f, "shared"), "a second writer"])
      expect(refused.code).toBe(1)
      expect(refused.stdout).toBe("")
      expect(refused.stderr.startsWith(`codex-harness: ${refusalOf("shared", chat.child.pid!)}`)).toBe(true)
      expect(refused.stderr).toMatch(/since \S+; wait for it to finish, or use another session\n$/)
      expect(refused.stderr.split("\n")).toHaveLength(2)
      expect((yield* f.model.requests).length).toBe(1)

      chat.child.stdin.end("second message\n")
      expect((yield* chat.exited).code).toBe(0)
      expect(chat.stdout()).toContain("chat reply two")
      // the lock went with the chat: the next run is the session's writer and continues its one thread
      expect(yield* runBin(["run", ...cliArgs(f, "shared"), "and now?"])).toMatchObject({ code: 0, stdout: "after the chat\n" })
      expect(threadsBound(f.stateDir, "shared").size).toBe(1)
      expect(recordsOf(f.stateDir, "shared").filter((r) => r._tag === "user").map((r) => (r as { text: string }).text)).toEqual([
        "first message",
        "second message",
        "and now?"
      ])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("two runs racing on a new session: one binds and answers, the other is refused; one thread, no stray prompt", () =>
    Effect.gen(function* () {
      // the first reply takes a while, so the two processes overlap whatever order they start in
      const f = yield* fixture({ replies: [reply.steps({ type: "pause", ms: 3000 }, { type: "message", text: "the winner" })] })
      const [a, b] = yield* Effect.all([runBin(["run", ...cliArgs(f, "race"), "from a"]), runBin(["run", ...cliArgs(f, "race"), "from b"])], {
        concurrency: 2
      })
      const [winner, loser] = a.code === 0 ? [a, b] : [b, a]
      expect(winner).toMatchObject({ code: 0, stdout: "the winner\n" })
      expect(loser.code).toBe(1)
      expect(loser.stderr).toMatch(/^codex-harness: session race is in use by another codex-harness process \(pid \d+, run, since /)
      expect(loser.stderr.trim().split("\n")).toHaveLength(1)
      expect((yield* f.model.requests).length).toBe(1)
      expect(threadsBound(f.stateDir, "race").size).toBe(1)
      expect(recordsOf(f.stateDir, "race").filter((r) => r._tag === "user")).toHaveLength(1)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a torn last line is moved to a .torn file with one warning; the prompt after it is kept and the thread goes on", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("one"), reply.text("two"), reply.text("three")] })
      expect((yield* runBin(["run", ...cliArgs(f, "torn"), "first"])).code).toBe(0)
      const fragment = '{"_tag":"assistant","at":"2026-12-01T00:00:00.000Z","te'
      fs.appendFileSync(sessionFile(f.stateDir, "torn"), fragment)

      const second = yield* runBin(["run", ...cliArgs(f, "torn"), "second"])
      expect(second).toMatchObject({ code: 0, stdout: "two\n" })
      expect(second.stderr).toBe(
        `codex-harness: warn: session torn: its last record was torn (${fragment.length} bytes); moved to ${sessionFile(f.stateDir, "torn")}.torn\n`
      )
      expect(fs.readFileSync(`${sessionFile(f.stateDir, "torn")}.torn`, "utf8")).toBe(fragment)
      const parsed = parseLines(fs.readFileSync(sessionFile(f.stateDir, "torn"), "utf8"))
      expect(parsed.corrupt).toEqual([])
      expect(parsed.records.filter((r) => r._tag === "user").map((r) => (r as { text: string }).text)).toEqual(["first", "second"])

      // repaired once: the next run says nothing and continues the same thread
      const third = yield* runBin(["run", ...cliArgs(f, "torn"), "third"])
      expect(third).toMatchObject({ code: 0, stdout: "three\n", stderr: "" })
      expect(threadsBound(f.stateDir, "torn").size).toBe(1)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive(
    canMount
      ? "a full disk fails the turn in one line before the model is asked; the file is as it was, and the next run goes on"
      : "a full disk (skipped: mounting a tmpfs needs root or CAP_SYS_ADMIN here)",
    () =>
      Effect.gen(function* () {
        if (!canMount) return
        const f = yield* fixture({ replies: [reply.text("before the disk filled"), reply.text("after the disk emptied")] })
        const disk = yield* smallDisk(16 * 1024)
        const stateDir = path.join(disk, "state")
        fs.mkdirSync(stateDir, { mode: 0o700 })
        // Codex's own files (its CODEX_HOME) on another disk: the small one holds only the harness's state, so what fills
        // it is the prompt's record (a cold run's app-server starts before the CLI takes the session, bin/codex-harness.js)
        const codexHome = yield* tempDir("codex-harness-codex-home-")
        const args = ["--state-dir", stateDir, "--codex-home", codexHome, "--cwd", f.workDir, "--provider-url", f.model.url, "--session", "full"]
        expect(yield* runBin(["run", ...args, "hello"])).toMatchObject({ code: 0, stdout: "before the disk filled\n" })
        const before = fs.readFileSync(sessionFile(stateDir, "full"))

        // room for the lock file, none for a 60 KB prompt: the append is cut short by the disk
        const filler = fillUpTo(disk, 16 * 1024)
        const full = yield* runBin(["run", ...args, "p".repeat(60_000)])
        expect(full.code).toBe(1)
        expect(full.stdout).toBe("")
        expect(full.stderr).toBe(`codex-harness: session store ${sessionFile(stateDir, "full")}: no space left on device, write\n`)
        expect((yield* f.model.requests).length).toBe(1)
        expect(fs.readFileSync(sessionFile(stateDir, "full"))).toEqual(before)
        expect(fs.readdirSync(path.join(stateDir, "sessions"))).toEqual(["full.jsonl"])

        fs.rmSync(filler)
        const after = yield* runBin(["run", ...args, "is there room now?"])
        expect(after).toMatchObject({ code: 0, stdout: "after the disk emptied\n", stderr: "" })
        expect(threadsBound(stateDir, "full").size).toBe(1)
        expect(yield* leftBehind(stateDir)).toEqual([])
        expect(yield* leftBehind(codexHome)).toEqual([])
      })
  )

  it.scopedLive("a prompt over Codex's input limit on a new session leaves no binding; the next message starts afresh, no notice", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("a fresh start")] })
      const context = yield* liveContext(f.settings)
      const harness = yield* Effect.provide(CodexHarness, context)
      const delivery = yield* Effect.provide(RecordingDelivery, context)

      const refused = yield* harness.runTurn({ sessionId: "big", prompt: "x".repeat(1024 * 1024 + 16) }).pipe(Effect.flip)
      expect(refused).toMatchObject({ _tag: "RpcError" })
      expect(recordsOf(f.stateDir, "big").map((r) => r._tag)).toEqual(["user", "binding", "detached", "settled"])

      const next = yield* harness.runTurn({ sessionId: "big", prompt: "short" })
      expect(next).toMatchObject({ status: "completed", finalText: "a fresh start" })
      expect((yield* f.model.requests).length).toBe(1)
      expect((yield* delivery.replies).filter((r) => r.source === "notice")).toEqual([])
      const state = recordsOf(f.stateDir, "big")
      const bound = state.flatMap((r) => (r._tag === "binding" ? [r.threadId] : []))
      expect(bound).toHaveLength(2)
      expect(new Set(bound).size).toBe(2)
    }))
})

const refusalOf = (sessionId: string, pid: number) =>
  `session ${sessionId} is in use by another codex-harness process (pid ${pid}, chat, since `
