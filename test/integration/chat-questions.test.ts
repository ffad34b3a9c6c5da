// The CLI's Questions port (S30, S33): `codex-harness chat` at a terminal (a real pseudo-terminal, via util-linux
// `script`) asks an MCP server's elicitation on its own line and the typed line answers it; piped, the question is
// declined and said so on stderr. Against the real app-server, a scripted model and the test's stdio MCP server.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { reply } from "../../src/testing/ScriptedModel.js"
import { bin, runBin } from "../support/cli.js"
import { filesUnder, type Fixture, fixture, functionCallOutput, leftBehind, tempDir } from "../support/harness.js"

const mcpServerScript = fileURLToPath(new URL("../support/mcp-elicit-server.mjs", import.meta.url))

const askName = () => ({
  replies: [
    reply.steps({ type: "function_call", name: "ask_name", namespace: "mcp__elic", arguments: {}, callId: "call_mcp" }),
    reply.text("hello from the agent")
  ]
})

const askUser = (isSecret: boolean) =>
  reply.steps({
    type: "function_call",
    name: "request_user_input",
    callId: "call_rui",
    arguments: {
      questions: [
        {
          id: "db_choice",
          header: "Database",
          question: isSecret ? "What is the database password?" : "Which database should the service use?",
          isOther: isSecret,
          isSecret,
          // Codex refuses a question without options; a secret one is typed as the "other" answer
          options: isSecret
            ? [{ label: "Skip", description: "no password" }]
            : [{ label: "Postgres", description: "Robust" }, { label: "SQLite", description: "Simple" }]
        }
      ]
    }
  })

/** a config file declaring the test's MCP server (tools run without a per-call approval) */
const configWith = (dir: string, log: string) => {
  const file = path.join(dir, "config.json")
  fs.writeFileSync(
    file,
    JSON.stringify({
      approvalPolicy: "on-request",
      mcpServers: {
        elic: { command: process.execPath, args: [mcpServerScript], env: { MCP_ELICIT_LOG: log }, defaultToolsApprovalMode: "approve" }
      }
    })
  )
  return file
}

const common = (f: Fixture, config: string) => [
  "chat", "--config", config, "--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir
]

const received = (log: string) =>
  fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line)) : []

/**
 * Runs the bin on a pseudo-terminal. `steps` are [text to wait for, line to type]: each line is typed once its text has
 * appeared in the terminal's output since the previous step.
 */
const onTerminal = (args: ReadonlyArray<string>, steps: ReadonlyArray<readonly [string, string]>) =>
  Effect.async<{ readonly code: number; readonly output: string; readonly stepsDone: number }>((resume) => {
    const command = [process.execPath, bin, ...args].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ")
    const child = spawn("script", ["-qfec", command, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] })
    let output = ""
    let from = 0
    let step = 0
    const advance = () => {
      const next = steps[step]
      if (next === undefined) return
      const at = output.indexOf(next[0], from)
      if (at < 0) return
      from = at + next[0].length
      step++
      child.stdin.write(`${next[1]}\r`)
      advance()
    }
    const take = (chunk: Buffer) => {
      output += chunk.toString("utf8")
      advance()
    }
    child.stdout.on("data", take)
    child.stderr.on("data", take)
    // a step that never comes: give up well before the test's own timeout, with the output for the failure message
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000)
    child.on("close", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code: code ?? 1, output, stepsDone: step }))
    })
    child.stdin.on("error", () => {})
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("questions in codex-harness chat", () => {
  it.scopedLive("[S30][S33] at a terminal the elicitation is asked on its own line and the typed line answers it", () =>
    Effect.gen(function* () {
      const f = yield* fixture(askName())
      const dir = yield* tempDir("codex-harness-chat-q-")
      const log = path.join(dir, "mcp.jsonl")
      const ran = yield* onTerminal(common(f, configWith(dir, log)), [
        ["you ›", "ask my name"],
        ["What is your name?", "Ada Lovelace"],
        ["hello from the agent", "/quit"]
      ])
      expect(ran.stepsDone, ran.output).toBe(3)
      expect(ran.code, ran.output).toBe(0)
      expect(ran.output).toContain("elic asks:")
      expect(received(log)).toEqual([{ tool: "ask_name", answer: { action: "accept", content: { name: "Ada Lovelace" } } }])
      // the typed answer was not sent to the agent as a message of its own
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests.map((r) => r.body).join("\n")).not.toContain('"text":"Ada Lovelace"')
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(yield* leftBehind(dir)).toEqual([])
    }))

  it.scopedLive("[S33] /plan on: Codex's request_user_input is asked with numbered choices; typing 2 picks the second", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [askUser(false), reply.text("SQLite noted")] })
      const dir = yield* tempDir("codex-harness-chat-q-")
      const ran = yield* onTerminal(common(f, configWith(dir, path.join(dir, "mcp.jsonl"))), [
        ["you ›", "/plan on"],
        ["plan mode: on", "pick a database"],
        ["[2] SQLite", "2"],
        ["SQLite noted", "/quit"]
      ])
      expect(ran.stepsDone, ran.output).toBe(4)
      expect(ran.code, ran.output).toBe(0)
      expect(ran.output).toContain("Codex asks:")
      expect(functionCallOutput((yield* f.model.requests).map((r) => r.body), "call_rui")).toEqual({ answers: { db_choice: { answers: ["SQLite"] } } })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S34] a secret question is typed without echo at the terminal and lands in no file of the state dir", () =>
    Effect.gen(function* () {
      const secret = "hunter2-Kq7"
      const f = yield* fixture({ replies: [askUser(true), reply.text("kept secret")] })
      const dir = yield* tempDir("codex-harness-chat-q-")
      const ran = yield* onTerminal(common(f, configWith(dir, path.join(dir, "mcp.jsonl"))), [
        ["you ›", "/plan on"],
        ["plan mode: on", "here is the password"],
        ["secret, not echoed", secret],
        ["kept secret", "/quit"]
      ])
      expect(ran.stepsDone, ran.output).toBe(4)
      expect(ran.code, ran.output).toBe(0)
      expect(ran.output).not.toContain(secret)
      expect(functionCallOutput((yield* f.model.requests).map((r) => r.body), "call_rui")).toEqual({ answers: { db_choice: { answers: [secret] } } })
      // the harness's own state (its session file among them) holds no trace; Codex's home keeps its own rollout
      const codexHome = path.join(f.stateDir, "codex-home")
      const files = filesUnder(f.stateDir).filter((file) => !file.startsWith(codexHome))
      expect(files.length).toBeGreaterThan(0)
      for (const file of files) expect(fs.readFileSync(file, "utf8"), file).not.toContain(secret)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S30] piped, nobody can answer: the elicitation is declined and said so on stderr", () =>
    Effect.gen(function* () {
      const f = yield* fixture(askName())
      const dir = yield* tempDir("codex-harness-chat-q-")
      const log = path.join(dir, "mcp.jsonl")
      const ran = yield* runBin(common(f, configWith(dir, log)), { input: "ask my name\n" })
      expect(ran.code).toBe(0)
      expect(ran.stdout).toBe("hello from the agent\n")
      expect(ran.stderr).toContain("question: declined a request from elic (no terminal to ask on)")
      expect(received(log)).toEqual([{ tool: "ask_name", answer: { action: "decline" } }])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(yield* leftBehind(dir)).toEqual([])
    }))
})
