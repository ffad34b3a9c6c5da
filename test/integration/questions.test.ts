// Questions on the real app-server (S29-S34): request_user_input in Plan mode answered by a button and by a plain-text
// reply; a stdio MCP server's elicitations (a form over several groups, a URL) answered through the Questions port after
// its tool approval went through the approvals flow; a secret answer that leaves no trace in the harness's state.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Logger, LogLevel } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Live from "../../layers/internal/Live.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../../src/config/Settings.js"
import { type ApprovalDecision, ApprovalPrompts, type ApprovalRequest } from "../../src/ports/ApprovalPrompts.js"
import { type QuestionPrompt, type QuestionReply, Questions } from "../../src/ports/Questions.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { filesUnder, fixture, functionCallOutput, leftBehind, tempDir } from "../support/harness.js"

const mcpServerScript = fileURLToPath(new URL("../support/mcp-elicit-server.mjs", import.meta.url))

const dbQuestion = (isSecret = false) => ({
  questions: [
    {
      id: "db_choice",
      header: "Database",
      question: "Which database should the service use?",
      isOther: true,
      isSecret,
      options: [
        { label: "Postgres (Recommended)", description: "Robust" },
        { label: "SQLite", description: "Simple" }
      ]
    }
  ]
})

const askUser = (args: unknown) =>
  reply.steps({ type: "function_call", name: "request_user_input", arguments: args, callId: "call_rui" })

/**
 * The live harness with a Questions port answering by `answer` (Effect.never: only plain text can answer) and an
 * ApprovalPrompts port allowing once; records what was asked and what was told.
 */
const start = (settings: HarnessSettings, answer: (prompt: QuestionPrompt) => Effect.Effect<QuestionReply>) =>
  Effect.gen(function* () {
    const shown: Array<QuestionPrompt> = []
    const notices: Array<string> = []
    const approvals: Array<ApprovalRequest> = []
    const questions = Layer.succeed(Questions, {
      ask: (prompt) => Effect.suspend(() => {
        shown.push(prompt)
        return answer(prompt)
      }),
      notify: ({ text }) => Effect.sync(() => void notices.push(text))
    })
    const prompts = Layer.succeed(ApprovalPrompts, {
      ask: (request) => Effect.sync(() => approvals.push(request)).pipe(Effect.as<ApprovalDecision>("allowOnce"))
    })
    const context = yield* Layer.build(
      Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer), Layer.provide(questions), Layer.provide(prompts))
    )
    return {
      harness: Context.get(context, CodexHarness),
      delivered: Context.get(context, RecordingDelivery.RecordingDelivery),
      shown,
      notices,
      approvals
    }
  })

const waitFor = <A>(probe: () => A | undefined) =>
  Effect.gen(function* () {
    for (let i = 0; i < 600; i++) {
      const found = probe()
      if (found !== undefined) return found
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.dieMessage("timed out waiting")
  })

describe("questions on the real app-server", () => {
  it.scopedLive("[S33] request_user_input in Plan mode: a button (the port's answer) resolves the exact request", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [askUser(dbQuestion()), reply.text("SQLite it is")] })
      yield* Effect.scoped(Effect.gen(function* () {
        const h = yield* start(f.settings, (prompt) =>
          Effect.succeed({ _tag: "Answered", answers: { [prompt.questions[0]!.id]: ["SQLite"] } }))
        const result = yield* h.harness.runTurn({ sessionId: "rui-button", prompt: "pick a db", collaboration: "plan" })
        expect(result.finalText).toBe("SQLite it is")
        expect(h.shown).toHaveLength(1)
        expect(h.shown[0]).toMatchObject({ source: "requestUserInput", sessionId: "rui-button", group: { index: 0, count: 1 } })
        expect(h.shown[0]!.questions[0]).toMatchObject({
          kind: "choice",
          allowOther: true,
          isSecret: false,
          options: [{ label: "Postgres (Recommended)" }, { label: "SQLite" }]
        })
        const bodies = (yield* f.model.requests).map((r) => r.body)
        expect(functionCallOutput(bodies, "call_rui")).toEqual({ answers: { db_choice: { answers: ["SQLite"] } } })
      }))
      // the app-server (and the MCP server it started) are gone with the harness
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S33] request_user_input answered by the next plain-text reply (CodexHarness.answer); the shown prompt is withdrawn", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [askUser(dbQuestion()), reply.text("Postgres then")] })
      yield* Effect.scoped(Effect.gen(function* () {
        const h = yield* start(f.settings, () => Effect.never)
        // nothing is asked yet: a plain-text reply is not taken, so the caller sends it as a message instead
        expect(yield* h.harness.answer("rui-text", "too early")).toBe(false)
        const turn = yield* h.harness
          .runTurn({ sessionId: "rui-text", prompt: "pick a db", collaboration: "plan" })
          .pipe(Effect.fork)
        yield* waitFor(() => h.shown[0])
        expect(yield* h.harness.answer("rui-text", "Postgres (Recommended)")).toBe(true)
        const result = yield* Fiber.join(turn)
        expect(result.finalText).toBe("Postgres then")
        const bodies = (yield* f.model.requests).map((r) => r.body)
        expect(functionCallOutput(bodies, "call_rui")).toEqual({ answers: { db_choice: { answers: ["Postgres (Recommended)"] } } })
        // the turn is over: its queue is gone with it
        expect(yield* h.harness.answer("rui-text", "late")).toBe(false)
      }))
      // the app-server (and the MCP server it started) are gone with the harness
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S34] a secret answer reaches Codex but no file of the harness's state dir, no log line and no delivery", () =>
    Effect.gen(function* () {
      const secret = "hunter2-Zq8sW"
      // Codex keeps its own rollout (which holds what the model saw) in its home: outside the harness's state dir here
      const codexHome = yield* tempDir("codex-harness-home-")
      const f = yield* fixture({ replies: [askUser(dbQuestion(true)), reply.text("stored nowhere")] }, { codexHome })
      const logged: Array<string> = []
      // every level: the harness's routine steps are Debug lines, and a secret must not reach those either
      const capture = Layer.merge(
        Logger.replace(
          Logger.defaultLogger,
          Logger.make(({ annotations, message }) => void logged.push(`${JSON.stringify(message)} ${JSON.stringify([...annotations])}`))
        ),
        Logger.minimumLogLevel(LogLevel.All)
      )
      yield* Effect.scoped(Effect.gen(function* () {
        const h = yield* start(f.settings, () => Effect.never).pipe(Effect.provide(capture))
        const turn = yield* h.harness
          .runTurn({ sessionId: "rui-secret", prompt: "ask me for the password", collaboration: "plan" })
          .pipe(Effect.provide(capture), Effect.fork)
        yield* waitFor(() => h.shown[0])
        expect(h.shown[0]!.questions[0]!.isSecret).toBe(true)
        expect(yield* h.harness.answer("rui-secret", secret).pipe(Effect.provide(capture))).toBe(true)
        expect((yield* Fiber.join(turn)).finalText).toBe("stored nowhere")
        const bodies = (yield* f.model.requests).map((r) => r.body)
        expect(functionCallOutput(bodies, "call_rui")).toEqual({ answers: { db_choice: { answers: [secret] } } })
        const files = filesUnder(f.stateDir)
        expect(files.length).toBeGreaterThan(0) // the session file is there, and so are the other records
        for (const file of files) expect(fs.readFileSync(file, "utf8"), file).not.toContain(secret)
        expect(logged.length).toBeGreaterThan(0)
        expect(logged.join("\n")).not.toContain(secret)
        expect(JSON.stringify(yield* h.delivered.replies)).not.toContain(secret)
      }))
      // the app-server (and the MCP server it started) are gone with the harness
      expect(yield* leftBehind(codexHome)).toEqual([])
    }))

  it.scopedLive("[S29][S30] an MCP server's tool approval goes through the approvals flow, then its form elicitation is answered", () =>
    Effect.gen(function* () {
      const work = yield* tempDir("codex-harness-mcp-")
      const log = path.join(work, "mcp.jsonl")
      const f = yield* fixture(
        {
          replies: [
            reply.steps({ type: "function_call", name: "ask_name", namespace: "mcp__elic", arguments: {}, callId: "call_mcp" }),
            reply.text("hello Ada")
          ]
        },
        {
          approvalPolicy: "on-request",
          sandbox: "read-only",
          mcpServers: { elic: { command: process.execPath, args: [mcpServerScript], env: { MCP_ELICIT_LOG: log } } }
        }
      )
      yield* Effect.scoped(Effect.gen(function* () {
        const h = yield* start(f.settings, (prompt) =>
          Effect.succeed({ _tag: "Answered", answers: { [prompt.questions[0]!.id]: ["Ada"] } }))
        const result = yield* h.harness.runTurn({ sessionId: "mcp-form", prompt: "ask my name" })
        expect(result.finalText).toBe("hello Ada")
        // S29: the approval came to the ApprovalPrompts port, classified as an MCP tool call, never as a form
        expect(h.approvals).toHaveLength(1)
        expect(h.approvals[0]).toMatchObject({ kind: "mcpTool", serverName: "elic", toolName: "ask_name" })
        expect(h.shown).toHaveLength(1)
        expect(h.shown[0]).toMatchObject({ source: "elicitation", serverName: "elic", message: "What is your name?" })
        expect(h.shown[0]!.questions[0]).toMatchObject({ kind: "text", required: true })
        const received = fs.readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line))
        expect(received).toEqual([{ tool: "ask_name", answer: { action: "accept", content: { name: "Ada" } } }])
      }))
      // the app-server (and the MCP server it started) are gone with the harness
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(yield* leftBehind(work)).toEqual([]) // the MCP server has MCP_ELICIT_LOG in its environment
    }))

  it.scopedLive("[S30] a four-field form is asked in two groups; an invalid email is asked again; typed values reach the MCP server", () =>
    Effect.gen(function* () {
      const work = yield* tempDir("codex-harness-mcp-")
      const log = path.join(work, "mcp.jsonl")
      const f = yield* fixture(
        {
          replies: [
            reply.steps({ type: "function_call", name: "ask_profile", namespace: "mcp__elic", arguments: {}, callId: "call_mcp" }),
            reply.text("profile saved")
          ]
        },
        {
          approvalPolicy: "on-request",
          sandbox: "read-only",
          mcpServers: {
            elic: { command: process.execPath, args: [mcpServerScript], env: { MCP_ELICIT_LOG: log }, defaultToolsApprovalMode: "approve" }
          }
        }
      )
      let attempts = 0
      yield* Effect.scoped(Effect.gen(function* () {
        const h = yield* start(f.settings, (prompt) =>
          Effect.sync(() => {
            const byHeader = (label: string) => prompt.questions.find((q) => q.text.includes(label) || q.header?.includes(label))
            const answers: Record<string, ReadonlyArray<string>> = {}
            const contact = byHeader("Contact")
            if (contact !== undefined) answers[contact.id] = [attempts++ === 0 ? "not-an-email" : "ada@example.com"]
            const size = byHeader("Team size")
            if (size !== undefined) answers[size.id] = ["3"]
            const tier = byHeader("Tier")
            if (tier !== undefined) answers[tier.id] = ["Pro"]
            const isPublic = byHeader("Public")
            if (isPublic !== undefined) answers[isPublic.id] = ["Yes"]
            return { _tag: "Answered", answers } as const
          }))
        const result = yield* h.harness.runTurn({ sessionId: "mcp-profile", prompt: "fill the profile" })
        expect(result.finalText).toBe("profile saved")
        expect(h.approvals).toHaveLength(0) // approve mode: no per-call approval
        expect(h.shown.map((p) => [p.group.index, p.group.count, p.questions.length])).toEqual([[0, 2, 3], [0, 2, 3], [1, 2, 1]])
        expect(h.shown[1]!.problem).toMatch(/email/i)
        const received = fs.readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line))
        expect(received).toEqual([
          { tool: "ask_profile", answer: { action: "accept", content: { contact: "ada@example.com", size: 3, tier: "pro", public: true } } }
        ])
      }))
      // the app-server (and the MCP server it started) are gone with the harness
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(yield* leftBehind(work)).toEqual([]) // the MCP server has MCP_ELICIT_LOG in its environment
    }))

  it.scopedLive("[S32] a URL elicitation is shown as literal text with Continue and Decline; Continue accepts without opening it", () =>
    Effect.gen(function* () {
      const work = yield* tempDir("codex-harness-mcp-")
      const log = path.join(work, "mcp.jsonl")
      const f = yield* fixture(
        {
          replies: [
            reply.steps({ type: "function_call", name: "ask_url", namespace: "mcp__elic", arguments: {}, callId: "call_mcp" }),
            reply.text("signed in")
          ]
        },
        {
          approvalPolicy: "on-request",
          sandbox: "read-only",
          mcpServers: {
            elic: { command: process.execPath, args: [mcpServerScript], env: { MCP_ELICIT_LOG: log }, defaultToolsApprovalMode: "approve" }
          }
        }
      )
      yield* Effect.scoped(Effect.gen(function* () {
        const h = yield* start(f.settings, (prompt) =>
          Effect.succeed({ _tag: "Answered", answers: { [prompt.questions[0]!.id]: ["Continue"] } }))
        const result = yield* h.harness.runTurn({ sessionId: "mcp-url", prompt: "sign in" })
        expect(result.finalText).toBe("signed in")
        expect(h.shown).toHaveLength(1)
        expect(h.shown[0]).toMatchObject({ source: "urlElicitation", url: "https://example.com/authorize?state=abc" })
        expect(h.shown[0]!.questions[0]!.options.map((o) => o.label)).toEqual(["Continue", "Decline"])
        const received = fs.readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line))
        expect(received).toHaveLength(1)
        expect(received[0]).toMatchObject({ tool: "ask_url", answer: { action: "accept" } })
      }))
      // the app-server (and the MCP server it started) are gone with the harness
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(yield* leftBehind(work)).toEqual([]) // the MCP server has MCP_ELICIT_LOG in its environment
    }))
})
