// `sessions delete` takes the session's lock like every writer: a session another process holds is refused in one
// line and left as it was, and a delete leaves no lock file behind (a lock left by a process that is gone is taken
// over and removed with the session). Through the compiled bin; no app-server is needed.
import { NodeFileSystem } from "@effect/platform-node"
import { FileSystem } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as SessionLock from "../../src/session/SessionLock.js"
import { runBin } from "../support/cli.js"
import { isAlive, tempDir } from "../support/harness.js"

/** a pid that was alive a moment ago and is not now: a child that has exited and been reaped */
const deadPid = Effect.async<number>((resume) => {
  const child = spawn("true", [], { stdio: "ignore" })
  child.on("close", () => resume(Effect.succeed(child.pid!)))
})

/** a state dir with one session file, `<id>.jsonl`, holding one prompt */
const oneSession = (id: string) =>
  Effect.gen(function* () {
    const stateDir = yield* tempDir("codex-harness-delete-")
    const dir = path.join(stateDir, "sessions")
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    const file = path.join(dir, `${id}.jsonl`)
    fs.writeFileSync(file, `${JSON.stringify({ _tag: "user", at: new Date().toISOString(), text: "hello" })}\n`, { mode: 0o600 })
    return { stateDir, file, lock: path.join(dir, `${id}.lock`) }
  })

describe("sessions delete", () => {
  it.scopedLive("refuses a session another process holds, in one line, and leaves its file and that process's lock alone", () =>
    Effect.gen(function* () {
      const { file, lock, stateDir } = yield* oneSession("held")
      // this test process holds the session, as a running chat would
      yield* SessionLock.hold(yield* FileSystem.FileSystem, "held", lock)
      const held = fs.readFileSync(lock, "utf8")
      const refused = yield* runBin(["sessions", "delete", "--state-dir", stateDir, "held"])
      expect(refused.code).toBe(1)
      expect(refused.stdout).toBe("")
      expect(refused.stderr.trim().split("\n")).toEqual([
        expect.stringContaining(`session held is in use by another codex-harness process (pid ${process.pid}`)
      ])
      expect(fs.readFileSync(file, "utf8")).toContain('"text":"hello"')
      expect(fs.readFileSync(lock, "utf8")).toBe(held)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scopedLive("removes the lock file with the session: one a process that is gone left is taken over, then goes", () =>
    Effect.gen(function* () {
      const { file, lock, stateDir } = yield* oneSession("left")
      const dead = yield* deadPid
      expect(isAlive(dead)).toBe(false)
      // what a chat killed with SIGKILL leaves: its lock, naming it
      fs.writeFileSync(lock, JSON.stringify({ pid: dead, host: os.hostname(), command: "chat", since: new Date().toISOString() }), { mode: 0o600 })
      const deleted = yield* runBin(["sessions", "delete", "--state-dir", stateDir, "left"])
      expect(deleted).toMatchObject({ code: 0, stdout: "deleted: left\n", stderr: "" })
      expect(fs.existsSync(file)).toBe(false)
      expect(fs.existsSync(lock)).toBe(false)
      expect(fs.readdirSync(path.dirname(file))).toEqual([])
    }))
})
