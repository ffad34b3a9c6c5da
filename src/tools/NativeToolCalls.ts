// Codex-native tool calls (shell commands, apply_patch file changes, MCP calls) as the harness's transcript records them
// for S38: Codex runs these itself and keeps their canonical record in its rollout, so without this a session rebuilt on
// a fresh thread would remember what the agent said but not what it did. Each completed call becomes a `tool` record
// marked `native` (its item kind): its name, its call id (the item id, which is the model's call id), the shape of its
// input and its result as the ToolResultPersistence hook lets it be kept (bounded), never an argument value.
//
// What "input shape" and "result" mean for each kind, and why:
// - commandExecution ("shell"): the command line IS the argument (the program, its flags, paths, maybe a token), so the
//   shape is `{"command":"<string>"}` and nothing of it is kept, not even the program's name: Codex reports the line
//   wrapped (`/bin/bash -lc '...'`), so the first word says nothing, and anything past it is the value itself. The cwd
//   is left out too (a path the model may have chosen). The result is the exit code and the output.
// - fileChange ("apply_patch"): the patch is the argument; the paths it names are part of it and may be private (a
//   client's, a person's name), so neither paths nor diffs are kept: the shape is the changes' keys and types, and the
//   result says the status and how many files were added, deleted or updated.
// - mcpToolCall (`mcp__server__tool`, the qualified name Codex gives the model): server and tool name identify the
//   tool, they are no argument; the arguments are kept as their shape (keys and types); the result is the call's text
//   content (its structured content as JSON when there is no text), or the error.
// Other native kinds (web search, image view, sub-agents) are not recorded.
//
// These records are the harness's own description of a native call, written into its own session file: a redaction
// may rewrite them like any `tool` record, while Codex's rollout, which holds the call as the model made it, is never
// read or written (S40).
import { Effect } from "effect"
import type { ItemOf, ThreadItem } from "../../schemas/protocol.js"
import type { ToolResult } from "../ports/DynamicTools.js"
import { ToolResultPersistence } from "../ports/ToolResultPersistence.js"
import { TranscriptMirror, type TurnRef } from "../session/TranscriptMirror.js"
import { inputShape } from "../turn/BootstrapProjection.js"
import { truncateUtf8 } from "../turn/Instructions.js"
import { hookFailedText } from "./EmbedderTools.js"

export const defaults = {
  /**
   * The most of a native call's result a record keeps (UTF-8 bytes), below a dynamic tool's 64 KiB: a coding turn runs
   * many commands, each with output, and the session file and the projection should not be filled by them.
   */
  maxRecordedResultBytes: 16 * 1024
} as const

/** The native item kinds that are recorded. */
export type NativeToolKind = "commandExecution" | "fileChange" | "mcpToolCall"

/** A completed native call, as it is described: never an argument value. */
export interface NativeCall {
  readonly kind: NativeToolKind
  readonly callId: string
  readonly name: string
  /** JSON: keys, and a type in place of every value */
  readonly inputShape: string
  /** what the call gave back, before the persistence hook */
  readonly result: ToolResult
}

/** The name a native MCP tool goes by: Codex's qualified `mcp__server__tool`, kept to a valid function name. Pure. */
export const mcpToolName = (server: string, tool: string): string =>
  `mcp__${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64)

const commandCall = (item: ItemOf<"commandExecution">): NativeCall => {
  const output = item.aggregatedOutput ?? ""
  const text = item.status === "declined"
    ? "The command was declined; it did not run."
    : `Exit code: ${item.exitCode ?? "unknown"}\nOutput:\n${output}`
  return {
    kind: "commandExecution",
    callId: item.id,
    name: "shell",
    inputShape: inputShape({ command: "" }),
    result: { text, success: item.status === "completed" }
  }
}

const changeKindOf = (kind: unknown): string => {
  const type = typeof kind === "object" && kind !== null && "type" in kind ? kind.type : undefined
  return type === "add" ? "added" : type === "delete" ? "deleted" : "updated"
}

const fileChangeCall = (item: ItemOf<"fileChange">): NativeCall => {
  const counts = new Map<string, number>()
  for (const change of item.changes) counts.set(changeKindOf(change.kind), (counts.get(changeKindOf(change.kind)) ?? 0) + 1)
  const detail = [...counts].map(([kind, n]) => `${n} ${kind}`).join(", ")
  const files = `${item.changes.length} file${item.changes.length === 1 ? "" : "s"}`
  return {
    kind: "fileChange",
    callId: item.id,
    name: "apply_patch",
    // the shape of the changes: `path`, `kind` and `diff` as types, never a path or a line of a diff
    inputShape: inputShape({ changes: item.changes }),
    result: { text: `The patch ${item.status}: ${files}${detail !== "" ? ` (${detail})` : ""}.`, success: item.status === "completed" }
  }
}

/** The text of an MCP result: its text content, else its structured content as JSON. */
const mcpResultText = (result: unknown): string => {
  if (typeof result !== "object" || result === null) return ""
  const content = "content" in result && Array.isArray(result.content) ? result.content : []
  const texts = content.flatMap((part: unknown) => {
    if (typeof part !== "object" || part === null || !("type" in part)) return []
    if (part.type === "text" && "text" in part && typeof part.text === "string") return [part.text]
    return [`[${String(part.type)} content]`]
  })
  if (texts.length > 0) return texts.join("\n")
  const structured = "structuredContent" in result ? result.structuredContent : undefined
  return structured === undefined || structured === null ? "" : JSON.stringify(structured)
}

const mcpCall = (item: ItemOf<"mcpToolCall">): NativeCall => {
  const failure = item.error?.message
  return {
    kind: "mcpToolCall",
    callId: item.id,
    name: mcpToolName(item.server, item.tool),
    inputShape: inputShape(item.arguments ?? {}),
    result: failure !== undefined
      ? { text: failure, success: false }
      : { text: mcpResultText(item.result), success: item.status === "completed" }
  }
}

/** The description of a completed item, if it is a native call that is recorded. Pure. */
export const nativeCallOf = (item: ThreadItem): NativeCall | undefined => {
  switch (item.type) {
    case "commandExecution":
      return item.status === "inProgress" ? undefined : commandCall(item)
    case "fileChange":
      return item.status === "inProgress" ? undefined : fileChangeCall(item)
    case "mcpToolCall":
      return item.status === "inProgress" ? undefined : mcpCall(item)
    default:
      return undefined
  }
}

/** Records one completed item of a session's turn if it is a native call; a record that cannot be written is a warning. */
export type RecordNativeCall = (sessionId: string, ref: TurnRef, item: ThreadItem) => Effect.Effect<void>

/**
 * The recorder over the transcript mirror and the ToolResultPersistence port (read here, when the caller's layer is
 * built): the result goes through the same hook as a dynamic tool's (told it is `native`), then is bounded.
 */
export const recorder: Effect.Effect<RecordNativeCall, never, TranscriptMirror> = Effect.gen(function* () {
  const mirror = yield* TranscriptMirror
  const persistence = yield* ToolResultPersistence
  const max = defaults.maxRecordedResultBytes
  return (sessionId, ref, item) => {
    const call = nativeCallOf(item)
    if (call === undefined) return Effect.void
    const context = { sessionId, threadId: ref.threadId, turnId: ref.turnId, callId: call.callId }
    return persistence.persist({ name: call.name, call: context, result: call.result, native: call.kind }).pipe(
      Effect.catchAllDefect(() => Effect.succeed(hookFailedText)),
      Effect.flatMap((text) => {
        const kept = truncateUtf8(text, max)
        return mirror.tool(sessionId, {
          ...ref,
          callId: call.callId,
          name: call.name,
          inputShape: call.inputShape,
          native: call.kind,
          success: call.result.success,
          text: kept,
          truncated: kept !== text
        })
      }),
      Effect.catchAll((error) =>
        Effect.logWarning(`native tool ${call.name} (call ${call.callId}): not recorded in the transcript: ${error.message}`)
      )
    )
  }
})
