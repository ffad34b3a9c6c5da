// A session file with a corrupt line: one warning per process in one format (chat, run and `sessions show` alike),
// and `sessions repair` to drop the line, keeping the old file as `.bak`, refused while another process holds the
// session. Through the compiled bin against the real app-server and a scripted model.
import { describe, expect, it } from "@effect/vitest"
import { NodeFileSystem } from "@effect/platform-node"
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as SessionLock from "../../src/session/SessionLock.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind } from "../support/harness.js"

const warning = /skipped a corrupt record \(not JSON \(a torn or hand-edited line\)\); `codex-harness sessions repair r1` removes it/

describe("a session's corrupt lines", () => {
  it.scopedLive("are warned about once per run, in one format, and `sessions repair` drops them keeping a backup", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ fallback: reply.text("ok") })
      const common = ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir, "--session", "r1"]
      expect((yield* runBin(["run", ...common, "hello"])).code).toBe(0)
      const file = path.join(f.stateDir, "sessions", "r1.jsonl")
      const good = fs.readFileSync(file, "utf8")
      fs.appendFileSync(file, "{not json\n")
      const damaged = fs.readFileSync(file, "utf8")

      // a chat reads the session before each of its two turns; the warning comes once
      const chat = yield* runBin(["chat", ...common], { input: "one\ntwo\n" })
      expect(chat.code).toBe(0)
      const said = chat.stderr.split("\n").filter((l) => l.includes("corrupt"))
      expect(said).toHaveLength(1)
      expect(said[0]).toMatch(warning)
      const shown = yield* runBin(["sessions", "show", "--state-dir", f.stateDir, "r1"])
      expect(shown.stderr.trim().split("\n")).toEqual([expect.stringMatching(warning)])

      const repaired = yield* runBin(["sessions", "repair", "--state-dir", f.stateDir, "r1"])
      expect(repaired).toMatchObject({ code: 0, stderr: "" })
      expect(repaired.stdout).toContain(`removed line ${good.split("\n").filter((l) => l !== "").length + 1}`)
      const backup = `${file}.bak`
      expect(fs.readFileSync(backup, "utf8").startsWith(damaged)).toBe(true)
      expect(fs.readFileSync(file, "utf8")).not.toContain("{not json")
      // the records the chat appended after the corrupt line survive
      expect(fs.readFileSync(file, "utf8")).toContain('"text":"two"')

      const clean = yield* runBin(["sessions", "show", "--state-dir", f.stateDir, "r1"])
      expect(clean).toMatchObject({ code: 0, stderr: "" })
      const again = yield* runBin(["sessions", "repair", "--state-dir", f.stateDir, "r1"])
      expect(again).toMatchObject({ code: 0, stdout: `nothing to repair: ${file} has no corrupt lines\n` })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("repair refuses a session another process holds, and leaves its file alone", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const dir = path.join(f.stateDir, "sessions")
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
      const file = path.join(dir, "held.jsonl")
      fs.writeFileSync(file, "{not json\n", { mode: 0o600 })
      // this test process holds the lock, as a running chat would
      yield* SessionLock.hold(yield* FileSystem.FileSystem, "held", path.join(dir, "held.lock"))
      const refused = yield* runBin(["sessions", "repair", "--state-dir", f.stateDir, "held"])
      expect(refused.code).toBe(1)
      expect(refused.stderr.trim().split("\n")).toEqual([expect.stringContaining("session held is in use by another codex-harness process")])
      expect(fs.readFileSync(file, "utf8")).toBe("{not json\n")
      expect(fs.existsSync(`${file}.bak`)).toBe(false)
    }).pipe(Effect.provide(NodeFileSystem.layer))
  )
})
