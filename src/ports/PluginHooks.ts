// Port (optional): observers of the agent's lifecycle (plugins, telemetry, trajectory export). The harness projects these from
// app-server notifications and its own state (S24); observers see them asynchronously and can never block, delay or
// alter a turn. Native `hook/started` / `hook/completed` arrive as `codex_app_server.hook` agent events, not as plugin hooks.
import { Context, Effect } from "effect"

/** Where a lifecycle event happened. */
export interface EventOrigin {
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string
}

export type LifecycleEvent =
  | ({ readonly type: "llm_input"; readonly input: ReadonlyArray<string> } & EventOrigin)
  | ({ readonly type: "llm_output"; readonly text: string } & EventOrigin)
  | ({ readonly type: "before_compaction" } & EventOrigin)
  | ({ readonly type: "after_compaction"; readonly status: "completed" | "failed" | "interrupted" } & EventOrigin)
  | ({
    /**
     * a native tool use finished (S23), reported once: by the PostToolUse hook relay when it relays that event (it
     * runs only with a HookPolicy `postToolUse`), else mirrored from `item/completed`. Telemetry only; never blocks or
     * alters the call
     */
    readonly type: "after_tool_call"
    /** who reported it: `item` (an `item/completed` notification) or `post_tool_use` (the relayed PostToolUse hook) */
    readonly source: "item" | "post_tool_use"
    /** the native tool use's call id: the item id, and the hook payload's `tool_use_id` */
    readonly toolUseId: string
    /** the item kind (`commandExecution`, `fileChange`, `webSearch`, ...) or, for MCP, `mcp:<server>/<tool>`; from the
     * relay, Codex's hook tool name (`Bash` and `apply_patch` given as `commandExecution` and `fileChange`) */
    readonly tool: string
    /** the item's final status when it has one (`completed`, `failed`, `declined`, ...); none from the relay */
    readonly status: string | undefined
    /** the completed item as the app-server sent it; from the relay, Codex's PostToolUse hook payload
     * (`tool_input`, `tool_response`, `tool_use_id`, ...) */
    readonly item: Readonly<Record<string, unknown>>
  } & EventOrigin)
  | {
    readonly type: "agent_event"
    readonly name: "codex_app_server.hook"
    readonly sessionId: string
    readonly phase: "started" | "completed"
    readonly payload: unknown
  }

export interface PluginHooksService {
  readonly observe: (event: LifecycleEvent) => Effect.Effect<void>
}

/** No observers: the harness then skips the work of projecting events at all. */
export const noObservers: PluginHooksService = { observe: () => Effect.void }

/**
 * Optional port: observers of a session's lifecycle (model input and output, tool uses, compaction, native hook
 * events). They run apart from the turn and cannot delay or change it. The default observes nothing.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { PluginHooks } from "codex-harness"
 *
 * const Telemetry = Layer.succeed(PluginHooks.PluginHooks, {
 *   observe: (event) => (event.type === "after_tool_call" ? Effect.log(`tool ${event.tool}: ${event.status}`) : Effect.void)
 * })
 * ```
 */
export class PluginHooks extends Context.Reference<PluginHooks>()("codex-harness/PluginHooks", {
  defaultValue: (): PluginHooksService => noObservers
}) {}
