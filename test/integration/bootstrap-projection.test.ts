// Thread-bootstrap projection on the real app-server (S38): a session whose bound thread is gone continues on a fresh
// thread into which the prior conversation is injected (`thread/inject_items`) before its first turn: the model's next
// request carries the user and assistant text and the tool call's name and id, never the call's raw argument value.
// Codex-native calls are carried too: after a shell command, a session moved to a fresh thread (`newThread(carry)`)
// gives the model the command's name, id, input shape and its result as the ToolResultPersistence hook redacted it,
// never the command line. That description is the harness's own record: a redaction rewrites it and leaves Codex's
// rollout, which holds the command as the model made it, byte-identical (S40).
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { ContextEngine, skipAll } from "../../src/ports/ContextEngine.js"
import { DynamicTools, tool } from "../../src/ports/DynamicTools.js"
import { ToolResultPersistence, type ToolResultToPersist } from "../../src/ports/ToolResultPersistence.js"
import * as FileSessionStore from "../../src/session/FileSessionStore.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import * as TranscriptMirror from "../../src/session/TranscriptMirror.js"
import { sessionState } from "../../src/session/SessionState.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { filesUnder, fixture, leaseSessionClient, leftBehind } from "../support/harness.js"

const secretPlace = "Zanzibar-7731-raw"

const weather = tool({
  name: "lookup_weather",
  description: "The weather at a place.",
  input: Schema.Struct({ place: Schema.String, days: Schema.Number }),
  handler: () => Effect.succeed("sunny, 31 degrees")
})

const scenario = (engine: Layer.Layer<never> = Layer.empty) =>
  Effect.gen(function* () {
    const f = yield* fixture({
      replies: [
        reply.steps({
          type: "function_call",
          name: "lookup_weather",
          namespace: "openclaw",
          arguments: { place: secretPlace, days: 3 },
          callId: "call_weather_1"
        }),
        reply.text("It is sunny where you asked about."),
        reply.text("still sunny")
      ]
    })
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      Live.layer(f.settings).pipe(Layer.provideMerge(RecordingDelivery.layer), Layer.provide(DynamicTools.layer([weather])), Layer.provide(engine)),
      scope
    )
    const harness = Context.get(context, CodexHarness)
    const one = yield* harness.runTurn({ sessionId: "carry", prompt: "what is the weather at my secret place?" })
    expect(one).toMatchObject({ status: "completed", finalText: "It is sunny where you asked about." })
    // the model sent the raw value once, in the call it made: that is where it lives, not in any projection
    expect((yield* f.model.requests)[1]!.body).toContain(secretPlace)
    yield* Effect.scoped(
      Effect.flatMap(leaseSessionClient(Context.get(context, ClientPool), f.settings), (c) => c.requestRaw("thread/delete", { threadId: one.threadId }))
    )
    const two = yield* harness.runTurn({ sessionId: "carry", prompt: "and tomorrow?" })
    const records = (yield* Context.get(context, SessionStore).read("carry")).records
    yield* Scope.close(scope, Exit.void)
    expect(yield* leftBehind(f.stateDir)).toEqual([])
    const requests = yield* f.model.requests
    return { one, two, records, requests, next: requests.at(-1)! }
  })

describe("thread-bootstrap projection on the real app-server", () => {
  it.scopedLive("[S38] a session whose thread is gone continues on a fresh thread carrying the conversation: text, the call's name and id, its input shape, never its raw argument value", () =>
    Effect.gen(function* () {
      const { one, records, requests, two } = yield* scenario()
      expect(two.threadId).not.toBe(one.threadId)
      expect(two.finalText).toBe("still sunny")
      expect(requests).toHaveLength(3)
      const input = (requests[2]!.json as { input: ReadonlyArray<Record<string, unknown>> }).input
      const body = requests[2]!.body
      // the projected conversation reached the model, in order, before this turn's prompt
      expect(body).toContain("what is the weather at my secret place?")
      expect(body).toContain("It is sunny where you asked about.")
      const call = input.find((i) => i.type === "function_call" && i.call_id === "call_weather_1")
      expect(call).toMatchObject({ name: "lookup_weather", arguments: JSON.stringify({ place: "<string>", days: "<number>" }) })
      expect(input.find((i) => i.type === "function_call_output" && i.call_id === "call_weather_1")).toMatchObject({
        output: "sunny, 31 degrees"
      })
      const texts = JSON.stringify(input)
      expect(texts.indexOf("what is the weather at my secret place?")).toBeLessThan(texts.indexOf("call_weather_1"))
      expect(texts.indexOf("It is sunny where you asked about.")).toBeLessThan(texts.indexOf("and tomorrow?"))
      // never the raw argument value
      expect(body).not.toContain(secretPlace)
      // the mirror: the shape of the call, never its value; the gone thread's notice, then what was carried
      expect(JSON.stringify(records)).not.toContain(secretPlace)
      expect(records.find((r) => r._tag === "tool")).toMatchObject({ callId: "call_weather_1", inputShape: '{"place":"<string>","days":"<number>"}' })
      const notices = records.filter((r) => r._tag === "notice").map((r) => (r as { text: string }).text)
      expect(notices).toEqual([
        expect.stringContaining("no longer exists; continuing on a new thread"),
        `Carried 3 entries of this session's conversation into thread ${two.threadId}.`
      ])
      expect(sessionState(records).binding?.threadId).toBe(two.threadId)
    }))

  it.scopedLive("[S38] a context engine that declines leaves the fresh thread empty", () =>
    Effect.gen(function* () {
      const { next, records, two } = yield* scenario(Layer.succeed(ContextEngine, skipAll))
      expect(two.finalText).toBe("still sunny")
      expect(next.body).not.toContain("what is the weather at my secret place?")
      expect(next.body).not.toContain("call_weather_1")
      expect(records.filter((r) => r._tag === "notice")).toHaveLength(1)
    }))
})

describe("thread-bootstrap projection of Codex-native tool calls on the real app-server", () => {
  it.scopedLive("[S38][S40] after a shell command, a session rebuilt on a fresh thread gives the model the call's name, id, input shape and redacted result, never the command line; redacting that record leaves Codex's rollout byte-identical", () =>
    Effect.gen(function* () {
      // the command's argument (a file name) never shows in its output; the output holds a key the hook masks
      const secretFile = "notes-Zanzibar-7731.txt"
      const command = `cat ${secretFile}`
      const f = yield* fixture(
        {
          replies: [
            reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: command }, callId: "call_shell_1" }),
            reply.text("I read your notes."),
            reply.text("I still know what I ran.")
          ]
        },
        { sandbox: "danger-full-access", approvalPolicy: "never" }
      )
      fs.writeFileSync(path.join(f.workDir, secretFile), "the plan is ready; token sk-live-4242 inside\n")
      const persisted: Array<ToolResultToPersist> = []
      const masking = Layer.succeed(ToolResultPersistence, {
        persist: (toolResult) =>
          Effect.sync(() => {
            persisted.push(toolResult)
            return toolResult.result.text.replace(/sk-[\w-]+/g, "sk-***")
          })
      })
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(
        Live.layer(f.settings).pipe(Layer.provideMerge(RecordingDelivery.layer), Layer.provide(masking)),
        scope
      )
      const harness = Context.get(context, CodexHarness)
      const one = yield* harness.runTurn({ sessionId: "native", prompt: "read my notes file" })
      expect(one).toMatchObject({ status: "completed", finalText: "I read your notes." })
      // the model got the command's whole output in the first thread: Codex ran it
      const first = yield* f.model.requests
      expect(first[1]!.body).toContain("sk-live-4242")
      expect(first[1]!.body).toContain(secretFile)

      yield* harness.newThread("native", { carry: true })
      const two = yield* harness.runTurn({ sessionId: "native", prompt: "what did you run?" })
      const records = (yield* Context.get(context, SessionStore).read("native")).records
      yield* Scope.close(scope, Exit.void)
      expect(yield* leftBehind(f.stateDir)).toEqual([])

      expect(two.threadId).not.toBe(one.threadId)
      expect(two.finalText).toBe("I still know what I ran.")
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(3)
      const body = requests[2]!.body
      const input = (requests[2]!.json as { input: ReadonlyArray<Record<string, unknown>> }).input
      // the native call, as the fresh thread's model receives it: its name and id, its input shape, its redacted result
      expect(input.find((i) => i.type === "function_call" && i.call_id === "call_shell_1")).toMatchObject({
        name: "shell",
        arguments: JSON.stringify({ command: "<string>" })
      })
      const output = input.find((i) => i.type === "function_call_output" && i.call_id === "call_shell_1")
      expect(output).toMatchObject({ output: expect.stringMatching(/^Exit code: 0\nOutput:\nthe plan is ready; token sk-\*\*\* inside\n$/) })
      // in order: the prompt, the call and its result, the reply, then this turn's prompt
      const order = ["read my notes file", "call_shell_1", "I read your notes.", "what did you run?"].map((t) => body.indexOf(t))
      expect(order.every((at) => at >= 0)).toBe(true)
      expect([...order].sort((a, b) => a - b)).toEqual(order)
      // never the command line, nor the key the hook masked
      expect(body).not.toContain(secretFile)
      expect(body).not.toContain("Zanzibar")
      expect(body).not.toContain("sk-live-4242")
      // the result went through the same persistence hook as a dynamic tool's, told it is native
      expect(persisted).toEqual([
        expect.objectContaining({
          name: "shell",
          native: "commandExecution",
          call: { sessionId: "native", threadId: one.threadId, turnId: one.turnId, callId: "call_shell_1" },
          result: { success: true, text: expect.stringContaining("sk-live-4242") }
        })
      ])
      // the session file describes the call, marked native, and holds no argument value
      expect(records.filter((r) => r._tag === "tool")).toEqual([
        expect.objectContaining({
          threadId: one.threadId,
          turnId: one.turnId,
          callId: "call_shell_1",
          name: "shell",
          native: "commandExecution",
          inputShape: '{"command":"<string>"}',
          success: true
        })
      ])
      expect(JSON.stringify(records)).not.toContain("Zanzibar")
      expect(JSON.stringify(records)).not.toContain("sk-live-4242")

      // S40: Codex's rollout holds the command as the model made it; a redaction of the harness's record never touches it
      const sha = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex")
      const rollouts = filesUnder(path.join(f.stateDir, "codex-home", "sessions")).filter((p) => /rollout-.*\.jsonl$/.test(p))
      expect(rollouts.some((p) => fs.readFileSync(p, "utf8").includes(secretFile))).toBe(true)
      const hashes = rollouts.map(sha)
      const store = yield* FileSessionStore.fileStore(f.stateDir).pipe(Effect.provide(NodeFileSystem.layer))
      const mirror = yield* TranscriptMirror.make.pipe(Effect.provideService(SessionStore, store))
      expect(yield* mirror.redact("native", { callId: "call_shell_1" })).toBe(1)
      expect(rollouts.map(sha)).toEqual(hashes)
      expect((yield* store.read("native")).records.filter((r) => r._tag === "tool")).toEqual([
        expect.objectContaining({ callId: "call_shell_1", native: "commandExecution", text: "[redacted]", redacted: true })
      ])
    }))
})
