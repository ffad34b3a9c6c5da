// Port (optional): how a tool's result is persisted in the harness's transcript (S40). The harness records every
// dynamic tool call it runs as a `tool` record of its own session file, and describes every Codex-native call it sees
// complete (a shell command, a file change, an MCP call: `native` says which) the same way; this hook decides what of
// the result that record keeps (redact a secret, drop a large payload). It changes only the harness's record: the model
// still gets the result as the tool returned it, and Codex's own rollout (its native record of the call) is never read
// or written here. The default keeps the result as it is.
import { Context, Effect } from "effect"
import type { ToolCallContext, ToolResult } from "./DynamicTools.js"

export interface ToolResultToPersist {
  /** the tool's name as the model called it (a native call: "shell", "apply_patch" or `mcp__server__tool`) */
  readonly name: string
  readonly call: ToolCallContext
  readonly result: ToolResult
  /**
   * A Codex-native call: its item kind ("commandExecution", "fileChange", "mcpToolCall"); the result is the harness's
   * text of it (a command's exit code and output, a patch's status, an MCP call's content). Absent: a dynamic tool.
   */
  readonly native?: string | undefined
}

export interface ToolResultPersistenceService {
  /** the text to record for this call; a defect in it records a placeholder instead, never the raw result */
  readonly persist: (toolResult: ToolResultToPersist) => Effect.Effect<string>
}

/** Records results as the tools returned them. */
export const identity: ToolResultPersistenceService = {
  persist: ({ result }) => Effect.succeed(result.text)
}

/**
 * Optional port: what of a dynamic tool's result the session's transcript keeps (to redact secrets, say). The model
 * still gets the whole result. The default records results unchanged (up to 64 KiB).
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ToolResultPersistence } from "codex-harness"
 *
 * const Redacting = Layer.succeed(ToolResultPersistence.ToolResultPersistence, {
 *   persist: ({ name, result }) => Effect.succeed(name === "lookup_customer" ? "[redacted]" : result.text)
 * })
 * ```
 */
export class ToolResultPersistence extends Context.Reference<ToolResultPersistence>()("codex-harness/ToolResultPersistence", {
  defaultValue: (): ToolResultPersistenceService => identity
}) {}
