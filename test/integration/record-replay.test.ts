// Record a real conversation, replay it as a fixture: a turn with a native command and an embedder tool runs on the
// real app-server with the WireRecorder provided, and the recording then plays on the MockAppServer under the Test
// composition (other directories, another hook relay), which must deliver the same reply and see the harness send
// exactly what was recorded. A harness that sends something else (another prompt, another tool result) fails the
// replay with the method and the first differing field.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import * as Test from "../../layers/internal/Test.js"
import * as WireRecorder from "../../src/appserver/WireRecorder.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import type { Reply } from "../../src/ports/Delivery.js"
import { DynamicTools, tool } from "../../src/ports/DynamicTools.js"
import { MockAppServer, readRecording, type Recording, ReplayMismatch } from "../../src/testing/MockAppServer.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind, tempDir } from "../support/harness.js"

const prompt = "where am I, and the weather in Paris?"

/** the embedder's tool; `forecast` is what it answers (a replay with another one differs from the recording) */
const weather = (forecast: string) =>
  tool({
    name: "lookup_weather",
    description: "The weather in a city.",
    input: Schema.Struct({ city: Schema.String }),
    handler: (args) => Effect.succeed(`${args.city}: ${forecast}`)
  })

interface Recorded {
  readonly file: string
  readonly recording: Recording
  readonly replies: ReadonlyArray<Reply>
  readonly finalText: string | undefined
}

/** One turn on the real app-server (a shell command, then the embedder's tool, then the answer), recorded to a file. */
const recordTurn = Effect.gen(function* () {
  const f = yield* fixture({
    replies: [
      reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "pwd" } }),
      reply.steps({ type: "function_call", name: "lookup_weather", namespace: "openclaw", arguments: { city: "Paris" } }),
      reply.text("You are in the workspace; Paris is sunny.")
    ]
  })
  const file = path.join(yield* tempDir("codex-harness-recording-"), "turn.jsonl")
  const recorder = WireRecorder.layer(file, { roots: { cwd: f.settings.cwd, stateDir: f.settings.stateDir } })
  const { finalText, replies } = yield* Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(
        Live.layer(f.settings).pipe(
          Layer.provideMerge(RecordingDelivery.layer),
          Layer.provide(DynamicTools.layer([weather("sunny, 21C")])),
          Layer.provide(recorder)
        )
      )
      const result = yield* Context.get(context, CodexHarness).runTurn({ sessionId: "recorded", prompt })
      expect(result.status).toBe("completed")
      return { finalText: result.finalText, replies: yield* Context.get(context, RecordingDelivery.RecordingDelivery).replies }
    })
  )
  expect(yield* leftBehind(f.stateDir)).toEqual([])
  const recording = yield* readRecording(file).pipe(Effect.provide(NodeFileSystem.layer))
  return { file, recording, replies, finalText } satisfies Recorded
})

/** The same session on the mock, replaying `recording`, with the Test composition's own directories. */
const replayTurn = (recording: Recording, options: { readonly prompt: string; readonly forecast: string }) =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Layer.build(
        Test.layer({ settings: { model: "mock-model" }, script: { replay: { recording } } }).pipe(
          Layer.provide(DynamicTools.layer([weather(options.forecast)]))
        )
      )
      const outcome = yield* Context.get(context, CodexHarness).runTurn({ sessionId: "replayed", prompt: options.prompt }).pipe(Effect.either)
      return {
        outcome,
        replies: yield* Context.get(context, RecordingDelivery.RecordingDelivery).replies,
        mock: Context.get(context, MockAppServer)
      }
    })
  )

const harnessMessages = (recording: Recording) => recording.entries.filter((e) => e.from === "harness" && "message" in e).length

describe("record a real conversation, replay it on the mock", () => {
  it.scopedLive("a turn with a command and a tool call, recorded on the real app-server, replays with the same delivered reply", () =>
    Effect.gen(function* () {
      const recorded = yield* recordTurn
      expect(fs.statSync(recorded.file).mode & 0o777).toBe(0o600)
      const methods = recorded.recording.entries.flatMap((e) => ("message" in e && typeof e.message.method === "string" ? [e.message.method] : []))
      // requests, notifications, a server request (the tool call) and the harness's answer to it are all there
      expect(methods).toEqual(expect.arrayContaining(["initialize", "thread/start", "turn/start", "item/tool/call", "turn/completed"]))
      expect(recorded.recording.entries.some((e) => e.from === "harness" && "message" in e && "result" in e.message)).toBe(true)
      // the command ran in the recording's workspace: written as the placeholder, never as that temp dir
      const text = fs.readFileSync(recorded.file, "utf8")
      expect(text).toContain("{{cwd}}")
      expect(text).not.toContain("codex-harness-work-")

      const replayed = yield* replayTurn(recorded.recording, { prompt, forecast: "sunny, 21C" })
      expect(replayed.outcome).toMatchObject({ _tag: "Right", right: { status: "completed", finalText: recorded.finalText } })
      expect(replayed.replies.map((r) => ({ ...r, sessionId: "" }))).toEqual(recorded.replies.map((r) => ({ ...r, sessionId: "" })))
      expect(replayed.replies.length).toBeGreaterThan(0)
      yield* replayed.mock.verifyReplay
      // the mock saw every message the harness sent in the recording, and no other
      expect((yield* replayed.mock.messages).length).toBe(harnessMessages(recorded.recording))
      // the command's notifications carried the replay's own workspace, not the recording's placeholder
      expect(JSON.stringify(replayed.outcome)).toContain(Test.settings.cwd)
    })
  )

  it.scopedLive("a replay whose harness sends another prompt or another tool result fails naming the method and the field", () =>
    Effect.gen(function* () {
      const recorded = yield* recordTurn

      const otherPrompt = yield* replayTurn(recorded.recording, { prompt: "where am I?", forecast: "sunny, 21C" })
      const mismatch = yield* Effect.flip(otherPrompt.mock.verifyReplay)
      expect(mismatch).toBeInstanceOf(ReplayMismatch)
      expect(mismatch).toMatchObject({ method: "turn/start", path: "params.input[0].text" })
      expect(mismatch.message).toBe(`turn/start: params.input[0].text: recorded ${JSON.stringify(prompt)} got "where am I?"`)
      // the turn itself failed with it, at once: the replaying app-server exits saying what differed
      expect(otherPrompt.outcome._tag).toBe("Left")
      expect(String(otherPrompt.outcome._tag === "Left" ? otherPrompt.outcome.left.message : "")).toContain(mismatch.message)
      expect(otherPrompt.replies).toEqual([])

      const otherTool = yield* replayTurn(recorded.recording, { prompt, forecast: "rain" })
      const toolMismatch = yield* Effect.flip(otherTool.mock.verifyReplay)
      expect(toolMismatch).toMatchObject({ method: "item/tool/call", path: "result.contentItems[0].text" })
      expect(toolMismatch.message).toBe(`item/tool/call: result.contentItems[0].text: recorded "Paris: sunny, 21C" got "Paris: rain"`)
    })
  )
})
