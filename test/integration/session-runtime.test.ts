// A session's runtime is recorded with it, on the real app-server through the CLI: a session made with --provider-url
// and resumed (or compacted) without it continues where it was made (one notice, the same thread, the conversation
// intact) instead of being rebound into the user's own CODEX_HOME; the flag given back continues the same thread;
// another provider is refused in one line with nothing recorded or sent. Without a provider URL a new session still runs
// in the agent's own CODEX_HOME, not the user's, unless --user-codex-home opts into it (S14).
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { sessionState } from "../../src/session/SessionState.js"
import { parseLines } from "../../src/session/SessionStore.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { filesUnder, fixture, leftBehind, tempDir } from "../support/harness.js"

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

  it.scopedLive("[S14] without --provider-url a new session's turns run in the agent's own CODEX_HOME, not $CODEX_HOME; --user-codex-home opts into yours", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("in the agent's home"), reply.text("in yours")] })
      // both homes point Codex's built-in provider at the scripted model (no login needed offline), so either could run
      const config = `openai_base_url = ${JSON.stringify(f.model.url)}\nmodel = "mock-model"\n`
      const userHome = yield* tempDir("codex-harness-user-home-")
      const agentHome = path.join(f.stateDir, "codex-home")
      fs.mkdirSync(agentHome)
      for (const home of [userHome, agentHome]) fs.writeFileSync(path.join(home, "config.toml"), config)
      const cli = (args: ReadonlyArray<string>) =>
        runBin(["run", "--state-dir", f.stateDir, "--cwd", f.workDir, ...args], { env: { CODEX_HOME: userHome } })
      const runtimeOf = (session: string) =>
        sessionState(parseLines(fs.readFileSync(path.join(f.stateDir, "sessions", `${session}.jsonl`), "utf8")).records).runtime
      const rollouts = (home: string) => (fs.existsSync(path.join(home, "sessions")) ? filesUnder(path.join(home, "sessions")) : [])

      const agent = yield* cli(["--session", "agent", "where are you?"])
      expect(agent).toMatchObject({ code: 0, stdout: "in the agent's home\n" })
      expect(runtimeOf("agent")).toMatchObject({ transport: "stdio", codexHome: agentHome, locked: false })
      // Codex itself wrote the thread there: its rollout is in the agent's home, and nothing at all in the user's
      expect(rollouts(agentHome)).toEqual([expect.stringMatching(/rollout-.*\.jsonl$/)])
      expect(fs.readdirSync(userHome)).toEqual(["config.toml"])

      const mine = yield* cli(["--session", "mine", "--user-codex-home", "and now?"])
      expect(mine).toMatchObject({ code: 0, stdout: "in yours\n" })
      expect(runtimeOf("mine")).toMatchObject({ codexHome: userHome })
      expect(rollouts(userHome)).toEqual([expect.stringMatching(/rollout-.*\.jsonl$/)])
      expect(rollouts(agentHome)).toHaveLength(1)

      // the opt-in is a request like --codex-home: the session made in the agent's home is not moved, one line
      const moved = yield* cli(["--session", "agent", "--user-codex-home", "anything"])
      expect(moved.code).toBe(1)
      expect(moved.stderr.trim().split("\n")).toEqual([
        `codex-harness: session agent was made on CODEX_HOME ${agentHome}, not ${userHome}; ` +
        "a session never moves: leave the CODEX_HOME setting out to continue it there, or start a new session"
      ])
      const both = yield* cli(["--session", "x", "--user-codex-home", "--codex-home", userHome, "anything"])
      expect(both).toMatchObject({ code: 2, stderr: "codex-harness: --codex-home and --user-codex-home name two CODEX_HOMEs: give one\n" })
      expect(yield* f.model.requests).toHaveLength(2)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(yield* leftBehind(userHome)).toEqual([])
    }), 240_000)
})
