// A session's runtime is recorded with it, on the real app-server through the CLI: a session made with --provider-url
// and resumed (or compacted) without it continues where it was made (one notice, the same thread, the conversation
// intact) instead of being rebound into the user's own CODEX_HOME; the flag given back continues the same thread;
// another provider is refused in one line with nothing recorded or sent.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { sessionState } from "../../src/session/SessionState.js"
import { parseLines } from "../../src/session/SessionStore.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind, tempDir } from "../support/harness.js"

describe("a session keeps the runtime it was made on", () => {
  it.scopedLive("[S12][S37] run and compact --session without the --provider-url it was made with continue its thread and conversation; with the flag back, the same thread; another provider is refused", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        rules: [{ whenRequestIncludes: "CONTEXT CHECKPOINT COMPACTION", reply: reply.text("summary: the word was tangerine") }],
        replies: [reply.text("first answer"), reply.text("second answer"), reply.text("third answer")]
      })
      // the user's own CODEX_HOME: a session made with --provider-url must never be moved there
      const userHome = yield* tempDir("codex-harness-user-home-")
      const cli = (args: ReadonlyArray<string>) => runBin(args, { env: { CODEX_HOME: userHome } })
      const base = ["run", "--state-dir", f.stateDir, "--cwd", f.workDir, "--session", "kept"]
      const file = path.join(f.stateDir, "sessions", "kept.jsonl")
      const state = () => sessionState(parseLines(fs.readFileSync(file, "utf8")).records)

      const first = yield* cli([...base, "--provider-url", f.model.url, "remember the word tangerine"])
      expect(first).toMatchObject({ code: 0, stdout: "first answer\n" })
      const made = state()
      expect(made.runtime).toMatchObject({ providerUrl: f.model.url, codexHome: path.join(f.stateDir, "codex-home"), locked: false })

      const second = yield* cli([...base, "what was the word?"])
      expect(second).toMatchObject({ code: 0, stdout: "second answer\n" })
      expect(second.stderr).toContain(`session kept continues where it was made: provider ${f.model.url}`)
      expect(state().binding?.threadId).toBe(made.binding?.threadId)
      expect(fs.readdirSync(userHome)).toEqual([])

      // compaction leases the same recorded runtime: no --provider-url needed, the same thread compacted
      const compacted = yield* cli(["compact", "--state-dir", f.stateDir, "--cwd", f.workDir, "--session", "kept"])
      expect(compacted.code).toBe(0)
      expect(compacted.stdout).toContain(`compacted thread ${made.binding?.threadId}`)

      const third = yield* cli([...base, "--provider-url", f.model.url, "and the word before that?"])
      expect(third).toMatchObject({ code: 0, stdout: "third answer\n" })
      expect(third.stderr).not.toContain("continues where it was made")
      expect(state().binding?.threadId).toBe(made.binding?.threadId)
      const requests = (yield* f.model.requests).filter((r) => !r.body.includes("CONTEXT CHECKPOINT COMPACTION"))
      expect(requests).toHaveLength(3)
      // the second turn carried the first exchange; after the compaction the third carries its summary: one thread
      for (const text of ["remember the word tangerine", "first answer"]) expect(requests[1]!.body).toContain(text)
      for (const text of ["summary: the word was tangerine", "and the word before that?"]) expect(requests[2]!.body).toContain(text)

      const before = fs.readFileSync(file, "utf8")
      const other = yield* cli([...base, "--provider-url", "http://127.0.0.1:9/v1", "anything"])
      expect(other.code).toBe(1)
      expect(other.stderr.trim().split("\n")).toEqual([
        `codex-harness: session kept was made on provider ${f.model.url}, not http://127.0.0.1:9/v1; ` +
        "a session never moves: leave the provider setting out to continue it there, or start a new session"
      ])
      expect(fs.readFileSync(file, "utf8")).toBe(before)
      expect(yield* f.model.requests).toHaveLength(4)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})
