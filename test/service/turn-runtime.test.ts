// The turn runtime's rules against the in-memory app-server: resend and model lock (S12, S13), visible replies (S18),
// heartbeats (S19), media (S41), the transcript mirror (S39) and replies kept when a later step fails.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, FiberId, Layer, Option, Schema, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Test from "../../layers/internal/Test.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { ModelLocked } from "../../src/session/errors.js"
import * as Runtimes from "../../src/session/Runtimes.js"
import { EmbedderExtensions } from "../../src/turn/TurnExtension.js"
import { type LifecycleEvent, PluginHooks } from "../../src/ports/PluginHooks.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { type ClientRequest, duringTurn, type Handler, MockAppServer } from "../../src/testing/MockAppServer.js"
import { RecordingDelivery } from "../../src/testing/RecordingDelivery.js"

// the heartbeat monitor's scratch file, made once for the file and removed after it
const scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), "codex-harness-scratch-"))
const scratchFile = path.join(scratchDir, "scratch.md")
fs.writeFileSync(scratchFile, "- disk at 91%\n")
// a workspace whose profile file a test changes between turns
const workspaceDir = path.join(scratchDir, "workspace")
fs.mkdirSync(workspaceDir)
afterAll(() => fs.rmSync(scratchDir, { recursive: true, force: true }))

const paramsOf = (request: ClientRequest) => request.params as Record<string, any>
const recordsOf = (sessionId: string) =>
  Effect.flatMap(SessionStore, (store) => store.read(sessionId)).pipe(Effect.map((c) => c.records))

/** a turn/start that emits these items after its answer, then completes the turn without the default reply */
const turnEmitting = (items: ReadonlyArray<Record<string, unknown>>, text?: string): Handler => duringTurn((params, ctx) =>
      Effect.gen(function* () {
        const turnId = params.turnId
        for (const item of items) {
          yield* ctx.notify("item/completed", { threadId: params.threadId, turnId, completedAtMs: 0, item })
        }
        if (text !== undefined) {
          yield* ctx.finishTurn(params.threadId, { status: "completed", text })
        } else {
          // a turn with no assistant message at all
          yield* ctx.notify("turn/completed", { threadId: params.threadId, turn: { id: turnId, status: "completed", items: [] } })
        }
      }))

describe("turn runtime rules", () => {
  it.scoped("[S12] every turn resends model, approval policy, sandbox, reviewer and service tier; a model switch keeps the binding and reopens the loaded thread once", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* harness.runTurn({ sessionId: "r1", prompt: "one" })
      yield* harness.runTurn({ sessionId: "r1", prompt: "two", model: "model-b" })
      yield* harness.runTurn({ sessionId: "r1", prompt: "three" })
      const resumes = (yield* mock.requests("thread/resume")).map(paramsOf)
      const turns = (yield* mock.requests("turn/start")).map(paramsOf)
      const start = paramsOf((yield* mock.requests("thread/start"))[0]!)
      expect(start).toMatchObject({ model: "default-model", approvalPolicy: "on-request", sandbox: "workspace-write", personality: "none" })
      // the thread stays loaded on the connection: only the model switch changes what an open sends
      expect(resumes).toHaveLength(1)
      for (const resume of resumes) {
        expect(resume).toMatchObject({
          threadId: start.threadId ?? resume.threadId,
          approvalPolicy: "on-request",
          sandbox: "workspace-write",
          approvalsReviewer: "user",
          serviceTier: "flex",
          personality: "none"
        })
      }
      // the switch reaches the next resume and turn, and the explicit choice survives a turn that names no model
      expect(resumes.map((r) => r.model)).toEqual(["model-b"])
      expect(turns.map((t) => t.model)).toEqual(["default-model", "model-b", "model-b"])
      for (const turn of turns) {
        expect(turn).toMatchObject({
          approvalPolicy: "on-request",
          sandboxPolicy: { type: "workspaceWrite" },
          approvalsReviewer: "user",
          serviceTier: "flex"
        })
      }
      const records = yield* recordsOf("r1")
      expect(records.filter((r) => r._tag === "binding")).toHaveLength(1)
      expect(records.filter((r) => r._tag === "model").map((r) => (r as { model: string }).model)).toEqual(["model-b"])
    }).pipe(
      Effect.provide(
        Test.layer({
          settings: { model: "default-model", approvalPolicy: "on-request", sandbox: "workspace-write", approvalsReviewer: "user", serviceTier: "flex" }
        })
      )
    ))

  it.scoped("a warm turn sends only turn/start; a changed workspace file reaches the next turn, its thread opened again with it", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const profile = path.join(workspaceDir, "USER.md")
      fs.writeFileSync(profile, "The user's name is Ada.\n")
      yield* harness.runTurn({ sessionId: "w1", prompt: "one" })
      yield* harness.runTurn({ sessionId: "w1", prompt: "two" })
      expect(yield* mock.requests("thread/resume")).toHaveLength(0)
      expect(paramsOf((yield* mock.requests("thread/start"))[0]!).developerInstructions).toContain("The user's name is Ada.")

      fs.writeFileSync(profile, "The user's name is Grace, and she prefers short answers.\n")
      yield* harness.runTurn({ sessionId: "w1", prompt: "three" })
      const resumes = (yield* mock.requests("thread/resume")).map(paramsOf)
      expect(resumes).toHaveLength(1)
      expect(resumes[0]!.developerInstructions).toContain("The user's name is Grace")
      expect(yield* mock.requests("turn/start")).toHaveLength(3)
    }).pipe(Effect.provide(Test.layer({ settings: { cwd: workspaceDir } }))))

  it.scoped("[S13] a locked binding resumes and runs on its private connection with no model or provider override; a model switch is refused before anything is sent", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const store = yield* SessionStore
      const mock = yield* MockAppServer
      yield* harness.runTurn({ sessionId: "seed", prompt: "make a thread" })
      const threadId = paramsOf((yield* mock.requests("turn/start"))[0]!).threadId as string
      const runtime = Runtimes.supervisedRuntime("locked", "/mock/codex-home", undefined)
      yield* store.append("locked", { _tag: "binding", at: "t", threadId, model: "pinned", modelProvider: "p", locked: true, runtime })

      const refused = yield* harness.runTurn({ sessionId: "locked", prompt: "continue", model: "picker-choice" }).pipe(Effect.flip)
      expect(refused).toBeInstanceOf(ModelLocked)
      expect(refused.message).toBe("session locked is a supervised chat locked to model pinned; it cannot switch to picker-choice")
      expect(yield* harness.chooseModel("locked", "picker-choice").pipe(Effect.flip)).toBeInstanceOf(ModelLocked)
      expect(yield* mock.requests("thread/resume")).toHaveLength(0)
      expect((yield* recordsOf("locked")).map((r) => r._tag)).toEqual(["binding"])

      const result = yield* harness.runTurn({ sessionId: "locked", prompt: "continue" })
      const resume = (yield* mock.requests("thread/resume"))[0]!
      expect(paramsOf(resume).threadId).toBe(threadId)
      expect(paramsOf(resume)).not.toHaveProperty("model")
      expect(paramsOf(resume)).not.toHaveProperty("modelProvider")
      // on its own connection: a second peer, never the ordinary client the seed session used
      expect(resume.peer).toBe(2)
      const turn = paramsOf((yield* mock.requests("turn/start"))[1]!)
      expect(turn).not.toHaveProperty("model")
      // the pair Codex restored (the thread's own) is the one reported, not the settings' default
      expect(result.model).toBe("default-model")
      const records = yield* recordsOf("locked")
      expect(records.filter((r) => r._tag === "binding")).toHaveLength(1)
    }).pipe(
      Effect.provide(
        Test.layer({ settings: { model: "default-model", supervision: { enabled: true, codexHome: "/mock/codex-home" } } })
      )
    ))

  it.scoped("[S18] automatic mode delivers the final text once; the transcript marks it delivered", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const recorded = yield* RecordingDelivery
      const result = yield* harness.runTurn({ sessionId: "d1", prompt: "hi" })
      expect(result.delivered).toBe(true)
      expect(yield* recorded.replies).toEqual([{ sessionId: "d1", text: "mock reply", media: [], source: "final" }])
      const assistant = (yield* recordsOf("d1")).find((r) => r._tag === "assistant")
      expect(assistant).toMatchObject({ text: "mock reply", delivered: true })
    }).pipe(Effect.provide(Test.layer())))

  it.scoped("[S18] message_tool mode keeps the final text private and delivers only message(action=send)", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const recorded = yield* RecordingDelivery
      const callMessageTool: Handler = duringTurn((params, ctx) =>
            Effect.gen(function* () {
              const turnId = params.turnId
              const bad = yield* ctx.request("item/tool/call", {
                threadId: params.threadId, turnId, callId: "c0", namespace: "openclaw_direct", tool: "message", arguments: { action: "shout" }
              })
              expect(bad).toMatchObject({ _tag: "Result", result: { success: false } })
              const sent = yield* ctx.request("item/tool/call", {
                threadId: params.threadId, turnId, callId: "c1", namespace: "openclaw_direct", tool: "message", arguments: { action: "send", text: "visible words" }
              })
              expect(sent).toMatchObject({ _tag: "Result", result: { success: true, contentItems: [{ type: "inputText", text: "sent" }] } })
              yield* ctx.finishTurn(params.threadId, { status: "completed", text: "private final" })
            }))
      yield* mock.setHandler("turn/start", callMessageTool)
      const result = yield* harness.runTurn({ sessionId: "m1", prompt: "hi" })
      expect(result).toMatchObject({ finalText: "private final", delivered: false })
      expect(yield* recorded.replies).toEqual([{ sessionId: "m1", text: "visible words", media: [], source: "message_tool" }])
      const start = paramsOf((yield* mock.requests("thread/start"))[0]!)
      expect(JSON.stringify(start.dynamicTools)).toContain('"name":"message"')
      const records = yield* recordsOf("m1")
      expect(records.find((r) => r._tag === "assistant")).toMatchObject({ text: "private final", delivered: false })
      expect(records.find((r) => r._tag === "message")).toMatchObject({ text: "visible words" })
    }).pipe(Effect.provide(Test.layer({ settings: { visibleReplies: "message_tool" }, script: { turns: "hang" } }))))

  it.scoped("[S19] a heartbeat turn gets the collaboration instruction, the cron scratch, and heartbeat_respond; ordinary turns do not", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const recorded = yield* RecordingDelivery
      yield* mock.setHandler("turn/start", turnEmitting([], "mock reply"))
      yield* harness.runTurn({ sessionId: "h1", prompt: "ordinary" })
      const respond: Handler = duringTurn((params, ctx) =>
            Effect.gen(function* () {
              const turnId = params.turnId
              const reply = yield* ctx.request("item/tool/call", {
                threadId: params.threadId, turnId, callId: "hb", namespace: "openclaw", tool: "heartbeat_respond",
                arguments: { outcome: "notify", message: "the build is red" }
              })
              expect(reply).toMatchObject({ _tag: "Result", result: { success: true } })
              yield* ctx.finishTurn(params.threadId, { status: "completed", text: "checked" })
            }))
      yield* mock.setHandler("turn/start", respond)
      yield* harness.runTurn({ sessionId: "h1", prompt: "wake up", kind: "heartbeat" })
      const [ordinary, heartbeat] = (yield* mock.requests("turn/start")).map(paramsOf)
      expect(ordinary).not.toHaveProperty("collaborationMode")
      expect(heartbeat!.collaborationMode).toMatchObject({ mode: "default", settings: { model: "mock-model" } })
      expect(heartbeat!.collaborationMode.settings.developer_instructions).toContain("heartbeat_respond")
      expect(JSON.stringify(heartbeat!.input)).toContain("wake up")
      expect(JSON.stringify(heartbeat!.input)).toContain("disk at 91%")
      expect(JSON.stringify(ordinary!.input)).not.toContain("disk at 91%")
      // the heartbeat's final text is not posted; its notify is
      expect((yield* recorded.replies).map((r) => [r.source, r.text])).toEqual([
        ["final", "mock reply"],
        ["heartbeat", "the build is red"]
      ])
      const records = yield* recordsOf("h1")
      expect(records.find((r) => r._tag === "heartbeat")).toMatchObject({ outcome: "notify", message: "the build is red" })
      expect(records.find((r) => r._tag === "user" && r.kind === "heartbeat")).toBeDefined()
    }).pipe(Effect.provide(Test.layer({ settings: { cronScratchPath: scratchFile }, script: { turns: "hang" } }))))

  it.scoped("[S19] heartbeat_respond outside a heartbeat turn is refused without effect", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const recorded = yield* RecordingDelivery
      const respond: Handler = duringTurn((params, ctx) =>
            Effect.gen(function* () {
              const turnId = params.turnId
              const reply = yield* ctx.request("item/tool/call", {
                threadId: params.threadId, turnId, callId: "hb", namespace: "openclaw", tool: "heartbeat_respond",
                arguments: { outcome: "notify", message: "should not go out" }
              })
              expect(reply).toMatchObject({ _tag: "Result", result: { success: false } })
              yield* ctx.finishTurn(params.threadId, { status: "completed", text: "done" })
            }))
      yield* mock.setHandler("turn/start", respond)
      yield* harness.runTurn({ sessionId: "h2", prompt: "ordinary" })
      expect((yield* recorded.replies).map((r) => r.text)).toEqual(["done"])
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[S41][S39] an image-generation item is delivered as media even with no assistant text; reasoning and plans are mirrored", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const recorded = yield* RecordingDelivery
      yield* mock.setHandler(
        "turn/start",
        turnEmitting([
          { type: "reasoning", id: "r1", summary: ["looked at the request"], content: [] },
          { type: "plan", id: "p1", text: "1. draw" },
          { type: "imageGeneration", id: "i1", status: "completed", savedPath: "/tmp/generated/cat.png" }
        ])
      )
      const result = yield* harness.runTurn({ sessionId: "g1", prompt: "draw a cat" })
      expect(result.finalText).toBeUndefined()
      expect(result.media).toEqual(["/tmp/generated/cat.png"])
      expect(yield* recorded.replies).toEqual([
        { sessionId: "g1", text: undefined, media: [{ kind: "image", path: "/tmp/generated/cat.png" }], source: "final" }
      ])
      const tags = (yield* recordsOf("g1")).map((r) => r._tag)
      expect(tags).toEqual(["user", "binding", "reasoning", "plan", "media", "turn"])
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[S39] native compaction in a turn is mirrored as its start and terminal status, never a summary", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const compactThen = (finish: "completed" | "interrupted"): Handler => duringTurn((params, ctx) =>
            Effect.gen(function* () {
              const turnId = params.turnId
              const item = { type: "contextCompaction", id: `cc-${finish}` }
              yield* ctx.notify("item/started", { threadId: params.threadId, turnId, startedAtMs: 0, item })
              if (finish === "completed") {
                yield* ctx.notify("item/completed", { threadId: params.threadId, turnId, completedAtMs: 0, item })
                yield* ctx.finishTurn(params.threadId, { status: "completed", text: "compacted" })
              } else {
                yield* ctx.finishTurn(params.threadId, { status: "interrupted" })
              }
            }))
      yield* mock.setHandler("turn/start", compactThen("completed"))
      yield* harness.runTurn({ sessionId: "c1", prompt: "long chat" })
      yield* mock.setHandler("turn/start", compactThen("interrupted"))
      yield* harness.runTurn({ sessionId: "c1", prompt: "more" })
      const compactions = (yield* recordsOf("c1")).filter((r) => r._tag === "compaction")
      expect(compactions.map((r) => (r as { status: string }).status)).toEqual(["started", "completed", "started", "interrupted"])
      expect(JSON.stringify(compactions)).not.toContain("summary")
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  const threadReadAnswering = (status: Record<string, unknown>): Handler => (params) =>
    Effect.succeed({ thread: { id: params.threadId, modelProvider: "mock", preview: "", ephemeral: false, cwd: "/w", status } })

  it.scoped("[S18] a turn that goes silent after its last item/completed is settled at the stall check, keeping the reply", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const recorded = yield* RecordingDelivery
      const silentAfterItem: Handler = duringTurn((params, ctx) =>
            Effect.gen(function* () {
              const turnId = params.turnId
              yield* ctx.notify("item/completed", {
                threadId: params.threadId, turnId, completedAtMs: 0, item: { type: "agentMessage", id: "a1", text: "the answer" }
              })
              // ...and no turn/completed ever comes
            }))
      yield* mock.setHandler("turn/start", silentAfterItem)
      yield* mock.setHandler("thread/read", threadReadAnswering({ type: "idle" }))
      const running = yield* harness.runTurn({ sessionId: "stall1", prompt: "hi" }).pipe(Effect.fork)
      yield* mock.awaitRequest("turn/start")
      yield* TestClock.adjust("29 seconds")
      expect((yield* mock.requests("thread/read")).length).toBe(0)
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(running)
      expect(result).toMatchObject({ status: "failed", finalText: "the answer", delivered: true })
      expect(result.error).toContain("went silent")
      expect((yield* recorded.replies).map((r) => r.text)).toEqual(["the answer"])
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[S18] a quiet turn whose thread is still active is waited on, with periodic status reads, until it completes", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* mock.setHandler("thread/read", threadReadAnswering({ type: "active", activeFlags: [] }))
      const running = yield* harness.runTurn({ sessionId: "stall2", prompt: "long tool" }).pipe(Effect.fork)
      const request = yield* mock.awaitRequest("turn/start")
      const threadId = (request.params as { threadId: string }).threadId
      yield* TestClock.adjust("95 seconds")
      expect((yield* mock.requests("thread/read")).length).toBe(3)
      expect(Option.isNone(yield* Fiber.poll(running))).toBe(true)
      yield* (yield* mock.latest).finishTurn(threadId, { status: "completed", text: "finally" })
      expect(yield* Fiber.join(running)).toMatchObject({ status: "completed", finalText: "finally" })
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))

  it.scoped("[S18] a reply that completed is delivered and recorded even when the app-server dies before the turn ends", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const recorded = yield* RecordingDelivery
      const dieAfterReply: Handler = duringTurn((params, ctx) =>
            Effect.gen(function* () {
              const turnId = params.turnId
              yield* ctx.notify("item/completed", {
                threadId: params.threadId, turnId, completedAtMs: 0, item: { type: "agentMessage", id: "a1", text: "finished answer" }
              })
              yield* ctx.crash("SIGKILL")
            }))
      yield* mock.setHandler("turn/start", dieAfterReply)
      const failing = yield* harness.runTurn({ sessionId: "k1", prompt: "hi" }).pipe(Effect.flip, Effect.fork)
      const error = yield* Fiber.join(failing)
      expect(error._tag).toBe("AppServerExited")
      expect((yield* recorded.replies).map((r) => r.text)).toEqual(["finished answer"])
      expect((yield* recordsOf("k1")).find((r) => r._tag === "assistant")).toMatchObject({ text: "finished answer" })
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }))))
})

describe("lifecycle projections", () => {
  it.scoped("[S24] llm_input, llm_output, before/after_compaction and codex_app_server.hook events reach PluginHooks observers", () =>
    Effect.gen(function* () {
      const seen: Array<LifecycleEvent> = []
      const observed = Deferred.unsafeMake<void>(FiberId.none)
      const observer = Layer.succeed(PluginHooks, {
        observe: (event) =>
          Effect.sync(() => {
            seen.push(event)
            if (event.type === "llm_output") Deferred.unsafeDone(observed, Effect.void)
          })
      })
      yield* Effect.gen(function* () {
        const harness = yield* CodexHarness
        const mock = yield* MockAppServer
        const withHooksAndCompaction: Handler = duringTurn((params, ctx) =>
              Effect.gen(function* () {
                const turnId = params.turnId
                const run = { id: "pre-tool-use:0", eventName: "preToolUse", status: "running" }
                yield* ctx.notify("hook/started", { threadId: params.threadId, turnId, run })
                const item = { type: "contextCompaction", id: "cc" }
                yield* ctx.notify("item/started", { threadId: params.threadId, turnId, startedAtMs: 0, item })
                yield* ctx.notify("item/completed", { threadId: params.threadId, turnId, completedAtMs: 0, item })
                yield* ctx.notify("hook/completed", { threadId: params.threadId, turnId, run: { ...run, status: "completed" } })
                yield* ctx.finishTurn(params.threadId, { status: "completed", text: "done" })
              }))
        yield* mock.setHandler("turn/start", withHooksAndCompaction)
        yield* harness.runTurn({ sessionId: "obs", prompt: "observe me" })
        yield* Deferred.await(observed)
      }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }).pipe(Layer.provide(observer))))
      expect(seen.map((e) => (e.type === "agent_event" ? `${e.name}:${e.phase}` : e.type))).toEqual([
        "llm_input",
        "codex_app_server.hook:started",
        "before_compaction",
        "after_compaction",
        "codex_app_server.hook:completed",
        "llm_output"
      ])
      expect(seen[0]).toMatchObject({ type: "llm_input", sessionId: "obs", input: ["observe me"] })
      expect(seen.at(-1)).toMatchObject({ type: "llm_output", text: "done" })
    }))

  it.scoped("[S24] an observer that never returns cannot hold up a turn", () =>
    Effect.gen(function* () {
      const stuck = Layer.succeed(PluginHooks, { observe: () => Effect.never })
      const result = yield* Effect.flatMap(CodexHarness, (harness) => harness.runTurn({ sessionId: "obs2", prompt: "hi" })).pipe(
        Effect.provide(Test.layer().pipe(Layer.provide(stuck)))
      )
      expect(result.status).toBe("completed")
    }))
})

describe("turn extensions", () => {
  it.scoped("an extension's tools, thread config and per-turn routes reach the thread and live for the turn", () => {
    let installs = 0
    const extension = Layer.succeed(EmbedderExtensions, [
      {
        name: "test-extension",
        tools: () => [
          {
            name: "lookup",
            description: "looks things up",
            input: Schema.Struct({ q: Schema.String }),
            handler: (args) => Effect.succeed({ text: `found ${args.q}`, success: true })
          }
        ],
        threadConfig: () => Effect.succeed({ "features.hooks": true }),
        install: (turn) =>
          turn.connection
            .handle("item/commandExecution/requestApproval", { threadId: turn.threadId, handle: () => Effect.succeed({ decision: "decline" }) })
            .pipe(Effect.tap(() => Effect.sync(() => installs++)))
      }
    ])
    return Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const askAndCall: Handler = duringTurn((params, ctx) =>
            Effect.gen(function* () {
              const turnId = params.turnId
              const approval = yield* ctx.request("item/commandExecution/requestApproval", {
                threadId: params.threadId, turnId, itemId: "c", command: "ls", cwd: "/w"
              })
              expect(approval).toMatchObject({ _tag: "Result", result: { decision: "decline" } })
              const tool = yield* ctx.request("item/tool/call", {
                threadId: params.threadId, turnId, callId: "t", namespace: "openclaw", tool: "lookup", arguments: { q: "cats" }
              })
              expect(tool).toMatchObject({ _tag: "Result", result: { success: true, contentItems: [{ text: "found cats" }] } })
              yield* ctx.finishTurn(params.threadId, { status: "completed", text: "ok" })
            }))
      yield* mock.setHandler("turn/start", askAndCall)
      yield* harness.runTurn({ sessionId: "ext", prompt: "hi" })
      const start = (yield* mock.requests("thread/start"))[0]!.params as Record<string, any>
      expect(start.config).toMatchObject({ "features.hooks": true })
      expect(JSON.stringify(start.dynamicTools)).toContain('"name":"lookup"')
      expect(installs).toBe(1)
      // after the turn the route is gone: an approval request now gets the no-handler error
      const peer = yield* mock.latest
      const late = yield* peer.request("item/commandExecution/requestApproval", {
        threadId: start.threadId ?? "t", turnId: "x", itemId: "c", command: "ls", cwd: "/w"
      })
      expect(late._tag).toBe("Error")
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }).pipe(Layer.provide(extension))))
  })
})
