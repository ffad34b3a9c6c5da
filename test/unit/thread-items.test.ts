// The closed thread item union: every kind the pinned binary emits decodes to its own case (unknown fields kept, as the
// connection decodes), and anything else to `UnknownItem` with the raw item intact, never a decode failure.
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { ThreadItem, ThreadItemContracts } from "../../schemas/protocol.js"

const decode = Schema.decodeUnknownEither(ThreadItem, { onExcessProperty: "preserve" })

/** One item of each kind, shaped as the 0.171 binary sends it (see the generated ThreadItem union). */
const samples: Record<string, Record<string, unknown>> = {
  userMessage: { content: [{ type: "text", text: "hi", text_elements: [] }, { type: "localImage", path: "/a.png" }] },
  hookPrompt: { fragments: [{ text: "run the tests", hookRunId: "stop:1" }] },
  agentMessage: { text: "done", phase: null },
  functionCallOutput: { name: "lookup", namespace: null, output: "sunny" },
  plan: { text: "1. look" },
  reasoning: { summary: ["thinking"], content: [] },
  commandExecution: {
    command: "/bin/bash -lc ls",
    commandActions: [{ type: "unknown", command: "ls" }],
    cwd: "/w",
    status: "completed",
    aggregatedOutput: "a\n",
    exitCode: 0,
    durationMs: 5,
    processId: null,
    source: "agent"
  },
  fileChange: { changes: [{ path: "/w/a.txt", kind: { type: "add" }, diff: "x\n" }], status: "inProgress" },
  mcpToolCall: { server: "s", tool: "t", arguments: { q: 1 }, status: "completed", result: { content: [] }, error: null },
  dynamicToolCall: {
    tool: "lookup_weather",
    namespace: null,
    arguments: { city: "Paris" },
    status: "completed",
    contentItems: [{ type: "inputText", text: "sunny" }],
    success: true
  },
  collabAgentToolCall: {
    tool: "spawnAgent",
    status: "completed",
    senderThreadId: "t1",
    receiverThreadIds: ["t2"],
    agentsStates: { t2: { status: "running" } }
  },
  subAgentActivity: { agentPath: "/root/a", agentThreadId: "t2", kind: "started" },
  webSearch: { query: "effect schema", action: { type: "search", query: "effect schema" } },
  imageView: { path: "/w/a.png" },
  sleep: { durationMs: 1000 },
  imageGeneration: { status: "completed", savedPath: "/w/img.png", revisedPrompt: null },
  enteredReviewMode: { review: "the diff" },
  exitedReviewMode: { review: "looks fine" },
  contextCompaction: {}
}

describe("ThreadItem", () => {
  it("has a sample for every kind the binary emits", () => {
    const kinds = ThreadItemContracts.map((c) => c.schema.fields.type.literals[0])
    expect(Object.keys(samples).sort()).toEqual([...kinds].sort())
  })

  it.each(Object.entries(samples))("decodes %s to its own case, fields kept", (type, fields) => {
    const wire = { type, id: `item-${type}`, startedAtMs: 1, ...fields }
    const decoded = decode(wire)
    expect(Either.isRight(decoded)).toBe(true)
    const item = Either.getOrThrow(decoded)
    expect(item.type).toBe(type)
    expect(item).toEqual(wire)
  })

  it("decodes an unknown kind to Unknown with the raw item kept, and encodes it back", () => {
    const wire = { type: "teleport", id: "i9", destination: { x: 1 }, startedAtMs: null }
    const item = Either.getOrThrow(decode(wire))
    expect(item).toEqual({ type: "unknown", itemType: "teleport", id: "i9", raw: wire })
    expect(Schema.encodeSync(ThreadItem)(item)).toEqual(wire)
  })

  it("decodes a known kind whose fields no longer fit to Unknown rather than failing", () => {
    const wire = { type: "commandExecution", id: "c1", command: ["ls"], status: "completed" }
    const item = Either.getOrThrow(decode(wire))
    expect(item.type).toBe("unknown")
    if (item.type === "unknown") {
      expect(item.itemType).toBe("commandExecution")
      expect(item.raw).toEqual(wire)
    }
  })

  it("still refuses what is not an item at all (no kind or no id)", () => {
    expect(Either.isLeft(decode({ id: "x" }))).toBe(true)
    expect(Either.isLeft(decode({ type: "agentMessage", text: "no id" }))).toBe(true)
  })
})
