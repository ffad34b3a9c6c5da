// Codex-native tool calls as the transcript describes them (S38): a shell command, a file change and an MCP call each
// become a `tool` record marked native with a name, the call id, an input shape that holds no argument value (no
// command line, no path, no diff) and a bounded result that went through the ToolResultPersistence hook. They are the
// harness's own records, so a redaction rewrites them like a dynamic tool's (S40 keeps Codex's rollout out of reach;
// the integration test shows that side). Session files written before native records still decode.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ThreadItem } from "../../schemas/protocol.js"
import { transcriptLine } from "../../src/cli/sessions.js"
import { ToolResultPersistence, type ToolResultToPersist } from "../../src/ports/ToolResultPersistence.js"
import { memoryStore, parseLines, SessionStore } from "../../src/session/SessionStore.js"
import * as TranscriptMirror from "../../src/session/TranscriptMirror.js"
import { hookFailedText } from "../../src/tools/EmbedderTools.js"
import * as NativeToolCalls from "../../src/tools/NativeToolCalls.js"
import { project } from "../../src/turn/BootstrapProjection.js"

const ref = { threadId: "th-1", turnId: "u1" }

const command = (over: Partial<Extract<ThreadItem, { type: "commandExecution" }>> = {}): ThreadItem => ({
  type: "commandExecution",
  id: "call_cmd",
  command: "/bin/bash -lc 'cat /home/alice/clients/acme/secret.txt'",
  commandActions: [{ type: "read", command: "cat /home/alice/clients/acme/secret.txt", path: "/home/alice/clients/acme/secret.txt" }],
  cwd: "/home/alice/clients/acme",
  status: "completed",
  aggregatedOutput: "the plan\n",
  exitCode: 0,
  ...over
})

const patch: ThreadItem = {
  type: "fileChange",
  id: "call_patch",
  changes: [
    { path: "/home/alice/acme-merger/plan.md", kind: { type: "add" }, diff: "+merge on friday" },
    { path: "/home/alice/acme-merger/old.md", kind: { type: "delete" }, diff: "-old plan" },
    { path: "/home/alice/acme-merger/notes.md", kind: { type: "update", move_path: null }, diff: "-a\n+b" }
  ],
  status: "completed"
}

const mcp = (over: Partial<Extract<ThreadItem, { type: "mcpToolCall" }>> = {}): ThreadItem => ({
  type: "mcpToolCall",
  id: "call_mcp",
  server: "docs",
  tool: "search.pages",
  arguments: { query: "acme merger", limit: 5 },
  status: "completed",
  result: { content: [{ type: "text", text: "3 pages found" }, { type: "image", data: "iVBOR" }] },
  ...over
})

/** a mirror over a memory store, with a recorder built over it and this persistence hook */
const recording = (persist: (p: ToolResultToPersist) => Effect.Effect<string> = (p) => Effect.succeed(p.result.text)) =>
  Effect.gen(function* () {
    const store = memoryStore()
    const mirror = yield* TranscriptMirror.make.pipe(Effect.provideService(SessionStore, store))
    const record = yield* NativeToolCalls.recorder.pipe(
      Effect.provideService(TranscriptMirror.TranscriptMirror, mirror),
      Effect.provideService(ToolResultPersistence, { persist })
    )
    return { mirror, record, records: Effect.map(store.read("s"), (c) => c.records) }
  })

describe("Codex-native tool calls in the transcript", () => {
  it("[S38] a shell command: `shell`, its call id, a typed placeholder for the command line, its exit code and output", () => {
    const call = NativeToolCalls.nativeCallOf(command())
    expect(call).toEqual({
      kind: "commandExecution",
      callId: "call_cmd",
      name: "shell",
      inputShape: '{"command":"<string>"}',
      result: { success: true, text: "Exit code: 0\nOutput:\nthe plan\n" }
    })
    // nothing of the command line, its parsed actions or its cwd: not even the program's name
    expect(JSON.stringify(call)).not.toMatch(/alice|acme|secret|cat|bash/)
    expect(NativeToolCalls.nativeCallOf(command({ status: "failed", exitCode: 2, aggregatedOutput: "no such file" }))?.result).toEqual({
      success: false,
      text: "Exit code: 2\nOutput:\nno such file"
    })
    expect(NativeToolCalls.nativeCallOf(command({ status: "declined", exitCode: null, aggregatedOutput: null }))?.result).toEqual({
      success: false,
      text: "The command was declined; it did not run."
    })
  })

  it("[S38] a file change: `apply_patch`, the shape of its changes and a count by kind; no path and no line of a diff", () => {
    const call = NativeToolCalls.nativeCallOf(patch)
    expect(call).toMatchObject({ kind: "fileChange", callId: "call_patch", name: "apply_patch" })
    expect(JSON.parse(call!.inputShape)).toEqual({
      changes: [
        { path: "<string>", kind: { type: "<string>" }, diff: "<string>" },
        { path: "<string>", kind: { type: "<string>", move_path: "<null>" }, diff: "<string>" }
      ]
    })
    expect(call!.result).toEqual({ success: true, text: "The patch completed: 3 files (1 added, 1 deleted, 1 updated)." })
    expect(JSON.stringify(call)).not.toMatch(/alice|acme|merge|plan|notes/)
  })

  it("[S38] an MCP call: Codex's qualified name, the shape of its arguments, its text content or its error", () => {
    const call = NativeToolCalls.nativeCallOf(mcp())
    expect(call).toEqual({
      kind: "mcpToolCall",
      callId: "call_mcp",
      name: "mcp__docs__search_pages",
      inputShape: '{"query":"<string>","limit":"<number>"}',
      result: { success: true, text: "3 pages found\n[image content]" }
    })
    expect(NativeToolCalls.nativeCallOf(mcp({ result: { content: [], structuredContent: { hits: 3 } } }))?.result.text).toBe('{"hits":3}')
    expect(NativeToolCalls.nativeCallOf(mcp({ status: "failed", result: null, error: { message: "server gone" } }))?.result).toEqual({
      success: false,
      text: "server gone"
    })
    expect(NativeToolCalls.mcpToolName("my server", "x".repeat(80))).toMatch(/^mcp__my_server__x+$/)
    expect(NativeToolCalls.mcpToolName("my server", "x".repeat(80))).toHaveLength(64)
  })

  it("calls still running, the harness's own dynamic calls and anything else are not native calls", () => {
    expect(NativeToolCalls.nativeCallOf(command({ status: "inProgress" }))).toBeUndefined()
    expect(NativeToolCalls.nativeCallOf({ ...patch, status: "inProgress" } as ThreadItem)).toBeUndefined()
    expect(NativeToolCalls.nativeCallOf(mcp({ status: "inProgress" }))).toBeUndefined()
    expect(NativeToolCalls.nativeCallOf({
      type: "dynamicToolCall",
      id: "d1",
      tool: "lookup",
      arguments: {},
      status: "completed"
    })).toBeUndefined()
    expect(NativeToolCalls.nativeCallOf({ type: "agentMessage", id: "m1", text: "hi" })).toBeUndefined()
  })

  it.effect("[S38] recorded through the persistence hook (told it is native), bounded, marked native, and projected like any call", () =>
    Effect.gen(function* () {
      const seen: Array<ToolResultToPersist> = []
      const { record, records } = yield* recording((p) =>
        Effect.sync(() => {
          seen.push(p)
          return p.result.text.replace("the plan", "[masked]")
        })
      )
      yield* record("s", ref, command())
      yield* record("s", ref, command({ id: "call_big", aggregatedOutput: "y".repeat(40 * 1024) }))
      yield* record("s", ref, { type: "agentMessage", id: "m1", text: "not a tool" })
      expect(seen.map((p) => [p.name, p.native, p.call])).toEqual([
        ["shell", "commandExecution", { sessionId: "s", ...ref, callId: "call_cmd" }],
        ["shell", "commandExecution", { sessionId: "s", ...ref, callId: "call_big" }]
      ])
      const [first, big, ...rest] = yield* records
      expect(rest).toEqual([])
      expect(first).toMatchObject({
        _tag: "tool",
        ...ref,
        callId: "call_cmd",
        name: "shell",
        native: "commandExecution",
        inputShape: '{"command":"<string>"}',
        success: true,
        text: "Exit code: 0\nOutput:\n[masked]\n"
      })
      expect(Buffer.byteLength((big as { text: string }).text)).toBeLessThanOrEqual(NativeToolCalls.defaults.maxRecordedResultBytes)
      expect(big).toMatchObject({ truncated: true, text: expect.stringMatching(/\[truncated: \d+ of \d+ bytes omitted\]$/) })
      expect(transcriptLine(first!)).toBe("tool shell (native, ok): Exit code: 0\n  Output:\n  [masked]\n  ")
      expect(project([first!]).items).toEqual([
        { type: "function_call", call_id: "call_cmd", name: "shell", arguments: '{"command":"<string>"}' },
        { type: "function_call_output", call_id: "call_cmd", output: "Exit code: 0\nOutput:\n[masked]\n" }
      ])
    }))

  it.effect("a persistence hook that dies records a placeholder, never the raw result", () =>
    Effect.gen(function* () {
      const { record, records } = yield* recording(() => Effect.die("boom"))
      yield* record("s", ref, command())
      expect(yield* records).toEqual([expect.objectContaining({ callId: "call_cmd", text: hookFailedText })])
    }))

  it.effect("[S40] a native call's record is the harness's own: a redaction rewrites it, and the projection carries [redacted]", () =>
    Effect.gen(function* () {
      const { mirror, record, records } = yield* recording()
      yield* record("s", ref, mcp())
      expect(yield* mirror.redact("s", { callId: "call_mcp" })).toBe(1)
      const [redacted] = yield* records
      expect(redacted).toMatchObject({ native: "mcpToolCall", text: TranscriptMirror.redactedText, redacted: true })
      expect(project([redacted!]).items[1]).toEqual({ type: "function_call_output", call_id: "call_mcp", output: "[redacted]" })
    }))

  it("a session file written before native records decodes as it did: its tool records are dynamic calls", () => {
    const old = [
      '{"_tag":"user","at":"2026-01-01T00:00:00.000Z","text":"hi"}',
      '{"_tag":"tool","at":"2026-01-01T00:00:00.000Z","threadId":"t","turnId":"u","callId":"c1","name":"lookup","success":true,"text":"ok"}',
      '{"_tag":"tool","at":"2026-01-01T00:00:00.000Z","threadId":"t","turnId":"u","callId":"c2","name":"lookup","inputShape":"{}","success":true,"text":"ok"}'
    ].join("\n")
    const { corrupt, records } = parseLines(old)
    expect(corrupt).toEqual([])
    expect(records).toHaveLength(3)
    expect(records.filter((r) => r._tag === "tool" && r.native === undefined)).toHaveLength(2)
  })
})
