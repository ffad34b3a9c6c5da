// Thread-bootstrap projection (S38), pure: what a fresh thread gets of a session's mirror. A seeded property test runs
// tool calls with random inputs through the harness's own recording paths (EmbedderTools' recorder for dynamic tools,
// NativeToolCalls' recorder for Codex-native shell commands, file changes and MCP calls, both into a transcript mirror)
// and projects the records: no raw argument value of any call (a command line, a path, a diff, an MCP argument) ever
// appears in the mirror or an injected item, while every call's name and id do. Unit tests of the bounds (count, bytes,
// one entry's bytes), shared with a branch's history.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { ThreadItem } from "../../schemas/protocol.js"
import type { SessionRecord } from "../../schemas/session.js"
import { tool } from "../../src/ports/DynamicTools.js"
import { memoryStore, SessionStore } from "../../src/session/SessionStore.js"
import * as TranscriptMirror from "../../src/session/TranscriptMirror.js"
import { historyBounds } from "../../src/supervision/Branching.js"
import * as EmbedderTools from "../../src/tools/EmbedderTools.js"
import * as NativeToolCalls from "../../src/tools/NativeToolCalls.js"
import {
  conversationBounds,
  entriesOf,
  inputShape,
  project,
  shapeOf,
  unknownInput
} from "../../src/turn/BootstrapProjection.js"

/** mulberry32: a small seeded PRNG, so a failing case can be replayed from its seed */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const keys = ["city", "path", "query", "limit", "opts", "nested", "items", "flag", "__proto__", "a b", "ключ"]
const words = ["hello", "the", "weather", "please", "done", "ok", "look", "result", "of", "it"]

/** every leaf of a JSON-like value */
const leaves = (value: unknown): ReadonlyArray<unknown> =>
  Array.isArray(value)
    ? value.flatMap(leaves)
    : typeof value === "object" && value !== null
    ? Object.values(value).flatMap(leaves)
    : [value]

const recordAt = { at: "2026-01-01T00:00:00.000Z", threadId: "th-old", turnId: "u1" }

describe("thread-bootstrap projection", () => {
  it.effect("[S38] property: no raw argument value of any tool call, dynamic or native, ever appears in the mirror or an injected item (300 seeded cases)", () =>
    Effect.gen(function* () {
      for (let seed = 1; seed <= 300; seed++) {
        const random = prng(seed)
        const pick = <A>(from: ReadonlyArray<A>): A => from[Math.floor(random() * from.length)]!
        // raw argument values: distinctive strings (quotes, unicode, newlines, marker look-alikes) and long numbers
        const argStrings: Array<string> = []
        const argNumbers: Array<number> = []
        const value = (depth: number): unknown => {
          const r = random()
          if (depth < 3 && r < 0.2) return Object.fromEntries(Array.from({ length: 1 + Math.floor(random() * 4) }, () => [pick(keys), value(depth + 1)]))
          if (depth < 3 && r < 0.35) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1))
          if (r < 0.7) {
            const s = `${pick(["", "\"q\" ", "ü ", "<", "line\n", "sk-", "{"])}v${Math.floor(random() * 2 ** 40).toString(36)}${pick(["", ">", "}"])}`
            argStrings.push(s)
            return s
          }
          if (r < 0.85) {
            const n = Math.floor(random() * 9e11) + 1e11 + Math.floor(random() * 100) / 1000
            argNumbers.push(n)
            return n
          }
          return r < 0.93 ? random() < 0.5 : null
        }
        const store = memoryStore()
        const mirror = yield* TranscriptMirror.make.pipe(Effect.provideService(SessionStore, store))
        const record = yield* EmbedderTools.mirrorRecorder.pipe(Effect.provideService(TranscriptMirror.TranscriptMirror, mirror))
        const recordNative = yield* NativeToolCalls.recorder.pipe(Effect.provideService(TranscriptMirror.TranscriptMirror, mirror))
        const sentence = (n: number) => Array.from({ length: n }, () => pick(words)).join(" ")
        /** a random string argument, remembered as a raw value that must never be carried */
        const argString = () => {
          const s = value(3)
          return typeof s === "string" ? s : `v${Math.floor(random() * 2 ** 40).toString(36)}`
        }
        const remembered = (s: string) => {
          argStrings.push(s)
          return s
        }
        /** a completed native item: a shell command, a file change or an MCP call, its arguments random */
        const nativeItem = (callId: string): ThreadItem => {
          const r = random()
          if (r < 0.4) {
            return {
              type: "commandExecution",
              id: callId,
              command: remembered(`/bin/bash -lc '${pick(["cat", "ls -la", "grep -r", "curl -H"])} ${argString()} ${argString()}'`),
              commandActions: [{ type: "unknown", command: remembered(`${pick(["cat", "rm"])} ${argString()}`) }],
              cwd: remembered(`/home/${argString()}`),
              status: pick(["completed", "failed", "declined"]),
              aggregatedOutput: sentence(1 + Math.floor(random() * 8)),
              exitCode: Math.floor(random() * 3)
            }
          }
          if (r < 0.7) {
            return {
              type: "fileChange",
              id: callId,
              changes: Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
                path: remembered(`/work/${argString()}.md`),
                kind: random() < 0.3 ? { type: "update", move_path: remembered(`/work/${argString()}`) } : { type: pick(["add", "delete", "update"]) },
                diff: remembered(`+${argString()}\n-${argString()}`)
              })),
              status: pick(["completed", "failed", "declined"])
            }
          }
          return {
            type: "mcpToolCall",
            id: callId,
            server: pick(["docs", "git hub"]),
            tool: pick(["search", "read.file"]),
            arguments: Object.fromEntries(Array.from({ length: Math.floor(random() * 4) }, () => [pick(keys), value(1)])),
            status: pick(["completed", "failed"]),
            ...(random() < 0.2
              ? { error: { message: sentence(3) } }
              : { result: { content: [{ type: "text", text: sentence(5) }] } })
          }
        }
        const toolNames = ["lookup", "read_file", "search-web", "x"]
        const served = EmbedderTools.makeExtension(
          toolNames.map((name) =>
            tool({
              name,
              description: name,
              input: Schema.Unknown,
              handler: () => Effect.succeed(Array.from({ length: 1 + Math.floor(random() * 6) }, () => pick(words)).join(" "))
            })
          ),
          { record }
        ).tools!("s")
        const callIds: Array<string> = []
        for (let turn = 0; turn < 1 + Math.floor(random() * 5); turn++) {
          const ref = { threadId: "th-old", turnId: `u${turn}` }
          yield* mirror.prompt("s", Array.from({ length: 3 }, () => pick(words)).join(" "))
          for (let call = 0; call < Math.floor(random() * 4); call++) {
            const callId = `call_${seed}_${turn}_${call}`
            callIds.push(callId)
            const input = random() < 0.8
              ? Object.fromEntries(Array.from({ length: Math.floor(random() * 5) }, () => [pick(keys), value(1)]))
              : value(0)
            yield* pick(served).handler(input, { sessionId: "s", ...ref, callId })
            if (random() < 0.6) {
              const nativeId = `native_${seed}_${turn}_${call}`
              callIds.push(nativeId)
              yield* recordNative("s", ref, nativeItem(nativeId))
            }
          }
          yield* mirror.reply("s", ref, Array.from({ length: 4 }, () => pick(words)).join(" "), true)
        }
        const records = (yield* store.read("s")).records
        // the mirror itself never holds an argument value
        const recorded = JSON.stringify(records)
        for (const s of argStrings) expect(recorded.includes(JSON.stringify(s).slice(1, -1)), `seed ${seed}: ${s} recorded`).toBe(false)

        const { items } = project(records)
        const strings = leaves(items)
        // every leaf is text: no number, boolean or null of an input is carried over as a value
        expect(strings.every((l) => typeof l === "string"), `seed ${seed}`).toBe(true)
        for (const leaf of strings as ReadonlyArray<string>) {
          for (const s of argStrings) expect(leaf.includes(s), `seed ${seed}: ${JSON.stringify(s)} in ${JSON.stringify(leaf)}`).toBe(false)
          for (const n of argNumbers) expect(leaf.includes(String(n)), `seed ${seed}: ${n} in ${JSON.stringify(leaf)}`).toBe(false)
        }
        // the arguments of a projected call are a shape: keys, and a type in place of every value
        const calls = (items as ReadonlyArray<Record<string, unknown>>).filter((i) => i.type === "function_call")
        for (const call of calls) {
          const shapeLeaves = leaves(JSON.parse(call.arguments as string))
          expect(shapeLeaves.every((l) => typeof l === "string" && /^<[a-z ]+>$|^<\d+ more keys>$/.test(l)), `seed ${seed}`).toBe(true)
        }
        // and what the projection is for: each call's name and id, with its output next to it
        expect(calls.map((c) => c.call_id)).toEqual(callIds)
        for (const call of calls) {
          expect([...toolNames, "shell", "apply_patch", "mcp__docs__search", "mcp__docs__read_file", "mcp__git_hub__search", "mcp__git_hub__read_file"])
            .toContain(call.name)
        }
        // the native calls are there, marked native in the mirror
        const natives = records.filter((r) => r._tag === "tool" && r.native !== undefined).map((r) => (r as { callId: string }).callId)
        expect(natives).toEqual(callIds.filter((id) => id.startsWith("native_")))
        const outputs = (items as ReadonlyArray<Record<string, unknown>>).filter((i) => i.type === "function_call_output")
        expect(outputs.map((o) => o.call_id)).toEqual(callIds)
      }
    }))

  it("an input's shape keeps its keys and the type of each value, bounded in depth and keys", () => {
    expect(shapeOf({ city: "Paris", n: 3, ok: true, none: null, tags: ["a", "b", 1], deep: { a: { b: { c: { d: 1 } } } } })).toEqual({
      city: "<string>",
      n: "<number>",
      ok: "<boolean>",
      none: "<null>",
      tags: ["<string>", "<number>"],
      deep: { a: { b: { c: "<object>" } } }
    })
    const wide = shapeOf(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i]))) as Record<string, unknown>
    expect(Object.keys(wide)).toHaveLength(33)
    expect(wide["…"]).toBe("<8 more keys>")
    expect(inputShape("Paris")).toBe(JSON.stringify("<string>"))
  })

  it("[S38] user and assistant text, each tool call's name, id, shape and recorded result; no reasoning, plans, notices or heartbeat polls", () => {
    const records: ReadonlyArray<SessionRecord> = [
      { _tag: "user", at: recordAt.at, text: "weather in Paris?" },
      { _tag: "user", at: recordAt.at, text: "heartbeat poll", kind: "heartbeat" },
      { _tag: "reasoning", ...recordAt, text: "thinking" },
      { _tag: "plan", ...recordAt, text: "a plan" },
      { _tag: "notice", at: recordAt.at, text: "a notice" },
      { _tag: "tool", ...recordAt, callId: "c1", name: "weather", inputShape: '{"city":"<string>"}', success: true, text: "sunny" },
      { _tag: "tool", ...recordAt, callId: "c2", name: "secret", success: false, text: "[redacted]", redacted: true },
      { _tag: "assistant", ...recordAt, text: "It is sunny.", delivered: true },
      { _tag: "message", ...recordAt, text: "sent with the message tool" }
    ]
    expect(project(records).items).toEqual([
      { type: "message", role: "user", content: [{ type: "input_text", text: "weather in Paris?" }] },
      { type: "function_call", call_id: "c1", name: "weather", arguments: '{"city":"<string>"}' },
      { type: "function_call_output", call_id: "c1", output: "sunny" },
      // a record from before shapes were recorded says so; a redacted result stays redacted
      { type: "function_call", call_id: "c2", name: "secret", arguments: unknownInput },
      { type: "function_call_output", call_id: "c2", output: "[the call failed] [redacted]" },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "It is sunny." }] },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "sent with the message tool" }] }
    ])
  })

  it("[S38] bounds: the newest entries up to the count, each cut to its byte limit, all within the total; a call keeps its output", () => {
    // a branch's history and a projection share the same limits
    expect(historyBounds).toMatchObject({
      maxMessages: conversationBounds.maxEntries,
      maxTotalBytes: conversationBounds.maxTotalBytes,
      maxMessageBytes: conversationBounds.maxEntryBytes
    })
    const many: Array<SessionRecord> = Array.from({ length: 300 }, (_, i) => ({ _tag: "user", at: recordAt.at, text: `m${i}` }))
    const counted = project(many)
    expect(counted).toMatchObject({ entries: conversationBounds.maxEntries, truncated: true })
    expect(counted.items[0]).toMatchObject({ content: [{ text: "m100" }] })
    expect(counted.items.at(-1)).toMatchObject({ content: [{ text: "m299" }] })

    const huge = "é".repeat(conversationBounds.maxEntryBytes)
    const cut = project([{ _tag: "assistant", ...recordAt, text: huge }])
    const text = (cut.items[0] as { content: Array<{ text: string }> }).content[0]!.text
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(conversationBounds.maxEntryBytes)
    expect(text).toMatch(/\[truncated: \d+ of \d+ bytes omitted\]$/)
    expect(cut.truncated).toBe(true)

    const big: Array<SessionRecord> = Array.from({ length: 20 }, (_, i) => ({
      _tag: "tool",
      ...recordAt,
      callId: `c${i}`,
      name: "dump",
      inputShape: '{"path":"<string>"}',
      success: true,
      text: "x".repeat(60 * 1024)
    }))
    const total = project(big)
    expect(total.bytes).toBeLessThanOrEqual(conversationBounds.maxTotalBytes)
    expect(total.truncated).toBe(true)
    expect(total.entries).toBe(8)
    // pairs only: every kept call has its output right after it, and the newest calls are the ones kept
    expect(total.items).toHaveLength(16)
    expect((total.items as Array<{ type: string; call_id: string }>).map((i) => `${i.type}:${i.call_id}`).slice(-2)).toEqual([
      "function_call:c19",
      "function_call_output:c19"
    ])

    // an engine can only lower the limits
    expect(project(many, { maxEntries: 10_000 }).entries).toBe(conversationBounds.maxEntries)
    expect(project(many, { maxEntries: 3 }).items).toHaveLength(3)
    expect(project(many, { maxTotalBytes: 10 }).entries).toBe(2) // "m299" and "m298": 4 bytes each
    // a shape too large for an entry is dropped whole, never cut into broken JSON
    const wideShape = project([{ ...big[0]!, inputShape: JSON.stringify({ k: "<string>".repeat(100) }) } as SessionRecord], { maxEntryBytes: 200 })
    expect(wideShape.items[0]).toMatchObject({ arguments: unknownInput })
    expect(entriesOf([])).toEqual([])
  })
})
