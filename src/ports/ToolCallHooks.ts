// Port (optional): plugin/middleware logic around the dynamic tool calls the harness runs (S21). Codex asks for the call
// and the harness executes it, so this is where a plugin sits in its path: `before` sees the model's arguments and may
// let the call proceed, rewrite the arguments (they are then decoded with the tool's Schema like the model's own), or
// refuse it with a reason the model gets as the call's failed result; `after` sees the call as it ran and its result.
// Native Codex tools are not dynamic calls: their hooks are the native hook relay's (HookPolicy). The default does
// nothing: every call proceeds as the model made it.
import { Context, type Effect } from "effect"
import type { ToolCallContext, ToolResult } from "./DynamicTools.js"

export interface DynamicToolCall {
  /** the tool's name as the model called it */
  readonly name: string
  /** `openclaw` or `openclaw_direct`; none when Codex sent the call without one */
  readonly namespace: string | undefined
  /** the arguments as they go to the tool: the model's, or a `before` hook's rewrite of them */
  readonly arguments: unknown
  readonly call: ToolCallContext
}

export type BeforeToolCallVerdict =
  | { readonly _tag: "Proceed" }
  /** run the call with these arguments instead (decoded with the tool's Schema; a rewrite that does not fit fails the call) */
  | { readonly _tag: "Rewrite"; readonly arguments: unknown }
  /** do not run the call: the model gets a failed result carrying the reason */
  | { readonly _tag: "Refuse"; readonly reason: string }

export interface ToolCallHooksService {
  /** a failure or defect refuses the call (fail closed); it runs within the call's timeout */
  readonly before?: ((toolCall: DynamicToolCall) => Effect.Effect<BeforeToolCallVerdict>) | undefined
  /**
   * An observation of the answered call (a refused one too): what the model gets back. It cannot change the result; a
   * defect in it is logged, and it gets `ToolBridge.defaults.afterHookTimeout` before the answer goes without it.
   */
  readonly after?: ((toolCall: DynamicToolCall & { readonly result: ToolResult }) => Effect.Effect<void>) | undefined
}

/** No hooks: calls run as the model made them. */
export const none: ToolCallHooksService = {}

/** The text of a refused call's result: what the model reads. Pure. */
export const refusedText = (name: string, reason: string) => `${name} was refused: ${reason}`

/**
 * Optional port around each dynamic tool call: `before` lets it proceed, rewrites its arguments or refuses it; `after`
 * observes the result. The default lets every call proceed unchanged and observes nothing.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ToolCallHooks } from "codex-harness"
 *
 * const NoDeletes = Layer.succeed(ToolCallHooks.ToolCallHooks, {
 *   before: (call) =>
 *     Effect.succeed(call.name === "delete_ticket" ? { _tag: "Refuse", reason: "not from chat" } : { _tag: "Proceed" })
 * })
 * ```
 */
export class ToolCallHooks extends Context.Reference<ToolCallHooks>()("codex-harness/ToolCallHooks", {
  defaultValue: (): ToolCallHooksService => none
}) {}
