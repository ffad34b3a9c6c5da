// The `openai/form` MCP extension on the real app-server (S30, S31). An MCP server asks for such a form with a JSON-RPC
// request of method `openai/form` (not an `elicitation/create` mode); Codex answers it only when its own client declared
// `capabilities.extensions["openai/form"]` in `initialize`, and it passes that declaration on to the MCP server in the
// MCP `initialize`. The form then reaches the client as `mcpServer/elicitation/request` with `mode: "openai/form"` and
// the server's schema as it was sent (an `openai/imagePicker` field keeps its items' `image`).
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { fileURLToPath } from "node:url"
import * as Live from "../../layers/internal/Live.js"
import * as CodexArgs from "../../src/appserver/CodexArgs.js"
import * as CodexBinary from "../../src/appserver/CodexBinary.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { ApprovalPrompts } from "../../src/ports/ApprovalPrompts.js"
import { type QuestionPrompt, type QuestionReply, Questions } from "../../src/ports/Questions.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind, tempDir } from "../support/harness.js"

const mcpServerScript = fileURLToPath(new URL("../support/mcp-elicit-server.mjs", import.meta.url))

const callTool = (name: string) =>
  reply.steps({ type: "function_call", name, namespace: "mcp__elic", arguments: {}, callId: "call_mcp" })

const jsonLines = (file: string): ReadonlyArray<any> =>
  fs.readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line))

/** a fixture whose MCP server `elic` logs its answers and the capabilities Codex declared to it */
const mcpFixture = (replies: Parameters<typeof fixture>[0]) =>
  Effect.gen(function* () {
    const work = yield* tempDir("codex-harness-mcp-")
    const log = path.join(work, "mcp.jsonl")
    const initLog = path.join(work, "init.jsonl")
    const f = yield* fixture(replies, {
      approvalPolicy: "on-request",
      sandbox: "read-only",
      mcpServers: {
        elic: {
          command: process.execPath,
          args: [mcpServerScript],
          env: { MCP_ELICIT_LOG: log, MCP_ELICIT_INIT_LOG: initLog },
          defaultToolsApprovalMode: "approve"
        }
      }
    })
    return { f, work, log, initLog }
  })

/** The live harness with a Questions port answering by `answer`; records what was asked and what the operator was told. */
const start = (settings: HarnessSettings, answer: (prompt: QuestionPrompt) => QuestionReply) =>
  Effect.gen(function* () {
    const shown: Array<QuestionPrompt> = []
    const notices: Array<string> = []
    const questions = Layer.succeed(Questions, {
      ask: (prompt) => Effect.sync(() => {
        shown.push(prompt)
        return answer(prompt)
      }),
      notify: ({ text }) => Effect.sync(() => void notices.push(text))
    })
    const prompts = Layer.succeed(ApprovalPrompts, { ask: () => Effect.succeed("deny" as const) })
    const context = yield* Layer.build(
      Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer), Layer.provide(questions), Layer.provide(prompts))
    )
    return { harness: Context.get(context, CodexHarness), shown, notices }
  })

describe("the openai/form MCP extension on the real app-server", () => {
  it.scopedLive("[S30][S31] an MCP server's openai/form with an openai/imagePicker reaches the Questions port; the item id returns to the server", () =>
    Effect.gen(function* () {
      const { f, work, log, initLog } = yield* mcpFixture({ replies: [callTool("ask_openai_form"), reply.text("cover chosen")] })
      yield* Effect.scoped(Effect.gen(function* () {
        const h = yield* start(f.settings, (prompt) => {
          const answers: Record<string, ReadonlyArray<string>> = {}
          for (const q of prompt.questions) answers[q.id] = [q.kind === "choice" ? "Hills" : "Quarterly report"]
          return { _tag: "Answered", answers }
        })
        const result = yield* h.harness.runTurn({ sessionId: "openai-form", prompt: "pick a cover" })
        expect(result.finalText).toBe("cover chosen")
        // the harness's declaration reached the MCP server through Codex's MCP initialize
        expect(jsonLines(initLog)[0].capabilities.extensions).toEqual({ "openai/form": {} })
        expect(h.notices).toEqual([])
        expect(h.shown).toHaveLength(1)
        expect(h.shown[0]).toMatchObject({
          source: "elicitation",
          serverName: "elic",
          message: "Choose a cover for the report.",
          group: { index: 0, count: 1 }
        })
        const [title, cover] = h.shown[0]!.questions
        expect(title).toMatchObject({ kind: "text", required: true })
        // S31: a single select of the items' titles; the images are neither fetched nor handed on
        expect(cover).toMatchObject({ kind: "choice", required: true })
        expect(cover!.options.map((o) => o.label)).toEqual(["Sea", "Hills"])
        const shownText = JSON.stringify(h.shown)
        expect(shownText).not.toContain("images.example.com")
        expect(shownText).not.toContain("data:image")
        expect(jsonLines(log)).toEqual([
          { tool: "ask_openai_form", answer: { action: "accept", content: { title: "Quarterly report", cover: "cover-hills" } } }
        ])
      }))
      // the app-server (and the MCP server it started) are gone with the harness
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(yield* leftBehind(work)).toEqual([]) // the MCP server has the logs' paths in its environment
    }))

  it.scopedLive("[S31] an openai/form with an unknown extended field type: a visible operator message and an explicit decline", () =>
    Effect.gen(function* () {
      const { f, work, log } = yield* mcpFixture({ replies: [callTool("ask_openai_unknown"), reply.text("no colour")] })
      yield* Effect.scoped(Effect.gen(function* () {
        const h = yield* start(f.settings, () => ({ _tag: "Declined" }))
        const result = yield* h.harness.runTurn({ sessionId: "openai-form-unknown", prompt: "pick a colour" })
        expect(result.finalText).toBe("no colour")
        expect(h.shown).toEqual([]) // nothing is asked
        expect(h.notices).toHaveLength(1)
        expect(h.notices[0]).toContain("elic")
        expect(h.notices[0]).toContain(`unknown extended type "openai/colorPicker"`)
        expect(jsonLines(log)).toEqual([{ tool: "ask_openai_unknown", answer: { action: "decline" } }])
      }))
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(yield* leftBehind(work)).toEqual([])
    }))

  it.scopedLive("without the declaration Codex tells the MCP server nothing of openai/form and refuses its request (-32601)", () =>
    Effect.gen(function* () {
      const { f, work, log, initLog } = yield* mcpFixture({ replies: [callTool("ask_openai_form"), reply.text("refused")] })
      const codexHome = yield* tempDir("codex-harness-home-")
      const codex = yield* CodexBinary.resolve().pipe(Effect.provide(NodeFileSystem.layer), Effect.orDie)
      const args = [
        ...codex.prefixArgs,
        ...CodexArgs.providerArgs(f.settings.providerUrl!, "mock-model"),
        ...CodexArgs.mcpServerArgs(f.settings.mcpServers ?? {}),
        "app-server"
      ]
      const child = spawn(codex.command, args, {
        cwd: f.workDir,
        env: { ...process.env, ...CodexArgs.providerEnv(), CODEX_HOME: codexHome },
        stdio: ["pipe", "pipe", "ignore"]
      })
      const exited = yield* Deferred.make<void>()
      child.once("exit", () => Deferred.unsafeDone(exited, Effect.void))
      yield* Effect.addFinalizer(() => Effect.sync(() => void (child.exitCode === null && child.kill("SIGKILL"))))
      const clientRequests: Array<any> = []
      const replies = new Map<number, Deferred.Deferred<any>>()
      const completed = yield* Deferred.make<any>()
      readline.createInterface({ input: child.stdout }).on("line", (line) => {
        const m = JSON.parse(line)
        if (m.method === undefined) Deferred.unsafeDone(replies.get(m.id)!, Effect.succeed(m))
        else if (m.id !== undefined) {
          clientRequests.push(m)
          child.stdin.write(`${JSON.stringify({ id: m.id, result: { action: "decline", content: null, _meta: null } })}\n`)
        } else if (m.method === "turn/completed") Deferred.unsafeDone(completed, Effect.succeed(m))
      })
      let nextId = 0
      const request = (method: string, params: unknown) =>
        Effect.gen(function* () {
          const id = ++nextId
          const answer = yield* Deferred.make<any>()
          replies.set(id, answer)
          child.stdin.write(`${JSON.stringify({ id, method, params })}\n`)
          return yield* Deferred.await(answer)
        })
      const init = yield* request("initialize", {
        clientInfo: { name: "no-extension", version: "0" },
        capabilities: { experimentalApi: true }
      })
      expect(init.error).toBeUndefined()
      child.stdin.write(`${JSON.stringify({ method: "initialized" })}\n`)
      const thread = yield* request("thread/start", { cwd: f.workDir, approvalPolicy: "on-request", sandbox: "read-only" })
      yield* request("turn/start", { threadId: thread.result.thread.id, input: [{ type: "text", text: "pick a cover" }] })
      expect((yield* Deferred.await(completed)).params.turn.status).toBe("completed")
      expect(clientRequests).toEqual([]) // no elicitation reached the client
      expect(jsonLines(initLog)[0].capabilities.extensions).toBeUndefined()
      expect(jsonLines(log)).toEqual([{ tool: "ask_openai_form", answer: { error: { code: -32601, message: "openai/form" } } }])
      // closing stdin is the app-server's shutdown signal; its exit is the receipt
      child.stdin.end()
      yield* Deferred.await(exited).pipe(Effect.timeout("120 seconds"), Effect.orDie)
      expect(yield* leftBehind(codexHome)).toEqual([])
      expect(yield* leftBehind(work)).toEqual([])
    }))
})
