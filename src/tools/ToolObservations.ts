// Asynchronous after_tool_call observations of native tool completions (S23). Codex holds the canonical record of its
// own tools (commands, file changes, MCP calls, web search, ...); the harness mirrors each completion from
// `item/completed` to the lifecycle observers, once per tool use, unless the PostToolUse relay already reported it.
// Codex sends `item/completed` before it runs the PostToolUse hook, so while the relay reports PostToolUse a completion
// is held until that tool use's PostToolUse hook run completes, or the turn ends (see ToolUseLedger).
// Telemetry only: the consumer never holds up the connection (it keeps reading and hands events to the harness's
// `observe`, which queues them for the observers) and an observer can never block, delay or alter the call. Dynamic tool calls are left out: they run in the harness.
import { Effect, type Scope } from "effect"
import type { ToolUseLedger } from "../turn/ToolUseLedger.js"
import type { ServerNotification, ThreadItem } from "../../schemas/protocol.js"
import { wireItem } from "../appserver/Notifications.js"
import { type LifecycleEvent, noObservers, PluginHooks } from "../ports/PluginHooks.js"
import type { InstalledTurn, TurnExtension } from "../turn/TurnExtension.js"
import { directNamespace, searchableNamespace } from "./ToolCatalog.js"

export const defaults = {
  /** tool-use ids remembered per turn for de-duplication; the oldest are forgotten beyond this */
  maxToolUsesPerTurn: 4_096
} as const

/** Item kinds that are Codex-native tool uses. */
export const nativeToolKinds: ReadonlySet<string> = new Set([
  "commandExecution",
  "fileChange",
  "mcpToolCall",
  "webSearch",
  "imageView",
  "imageGeneration",
  "collabAgentToolCall",
  "functionCallOutput"
])

type AfterToolCall = Extract<LifecycleEvent, { readonly type: "after_tool_call" }>

/** The tool a native tool use's item names; undefined for items that are not native tool uses (dynamic tools among
 * them: the harness runs those itself). */
const toolOf = (item: ThreadItem): string | undefined => {
  if (!nativeToolKinds.has(item.type)) return undefined
  switch (item.type) {
    case "mcpToolCall":
      return `mcp:${item.server}/${item.tool}`
    case "functionCallOutput": {
      const namespace = item.namespace ?? undefined
      if (namespace === searchableNamespace || namespace === directNamespace) return undefined
      return namespace !== undefined ? `${namespace}.${item.name}` : item.name
    }
    default:
      return item.type
  }
}

/**
 * The after_tool_call observation of a notification, if it is the completion of a native tool use. Pure.
 * `functionCallOutput` items of the harness's own namespaces are dynamic tools and are left out.
 */
export const observationOf = (
  sessionId: string,
  threadId: string,
  notification: ServerNotification
): AfterToolCall | undefined => {
  if (notification._tag !== "ItemCompleted") return undefined
  const { item, turnId } = notification.params
  const tool = toolOf(item)
  if (tool === undefined) return undefined
  return {
    type: "after_tool_call",
    source: "item",
    sessionId,
    threadId: notification.params.threadId ?? threadId,
    turnId,
    toolUseId: item.id,
    tool,
    status: "status" in item && typeof item.status === "string" ? item.status : undefined,
    item: wireItem(item)
  }
}

export interface ToolObservationsOptions {
  /** tool uses the native PostToolUse relay already reported: these are not observed again */
  readonly handledByPostToolUse?: ((toolUseId: string) => boolean) | undefined
  /**
   * The production wiring: what the hook relay reported. While it reports PostToolUse, a completion waits for its
   * tool use's PostToolUse hook run (or the turn's end) and is observed only if the relay did not report it.
   */
  readonly ledger?: ToolUseLedger | undefined
  readonly maxToolUsesPerTurn?: number | undefined
}

/** The run id of a completed PostToolUse hook run; Codex ends it with the tool use's call id (`…:call_1`). Pure. */
export const postToolUseRunOf = (notification: ServerNotification): string | undefined => {
  if (notification._tag !== "HookCompleted" || notification.params.run.eventName !== "postToolUse") return undefined
  return notification.params.run.id
}

/**
 * The "tool-observations" extension: each turn's consumer lives in the turn's Scope and hands observations to the
 * harness's `observe` (bounded, asynchronous). Without PluginHooks observers it installs nothing.
 */
export const make = (options: ToolObservationsOptions = {}): Effect.Effect<TurnExtension> =>
  Effect.gen(function* () {
    if ((yield* PluginHooks) === noObservers) return { name: "tool-observations" }
    const maxIds = Math.max(1, options.maxToolUsesPerTurn ?? defaults.maxToolUsesPerTurn)
    const ledger = options.ledger
    const handledBy = options.handledByPostToolUse
    const handled = (threadId: string, toolUseId: string): boolean => {
      try {
        return (ledger?.take(threadId, toolUseId) ?? false) || (handledBy?.(toolUseId) ?? false)
      } catch {
        return false
      }
    }

    const install = (turn: InstalledTurn): Effect.Effect<void, never, Scope.Scope> =>
      Effect.gen(function* () {
        // one install per turn: the ids seen in it, oldest forgotten first
        const seen = new Set<string>()
        // completions waiting for their PostToolUse hook run, in arrival order
        const held = new Map<string, AfterToolCall>()
        const waitForRelay = ledger?.relayReports() ?? false
        const settle = (event: AfterToolCall): Effect.Effect<void> =>
          handled(event.threadId, event.toolUseId) ? Effect.void : turn.observe(event)
        const settleAll = Effect.suspend(() => {
          const events = [...held.values()]
          held.clear()
          return Effect.forEach(events, settle, { discard: true })
        })
        // a turn that ends (or is interrupted) first still reports what it held
        yield* Effect.addFinalizer(() => settleAll)
        yield* turn.connection.forEachNotification({ threadId: turn.threadId }, (notification) => {
          if (notification._tag === "TurnCompleted") return settleAll
          const run = postToolUseRunOf(notification)
          if (run !== undefined) {
            const ready = [...held.values()].filter((e) => run.endsWith(`:${e.toolUseId}`))
            for (const e of ready) held.delete(e.toolUseId)
            return Effect.forEach(ready, settle, { discard: true })
          }
          const event = observationOf(turn.sessionId, turn.threadId, notification)
          if (event === undefined || seen.has(event.toolUseId)) return Effect.void
          seen.add(event.toolUseId)
          if (seen.size > maxIds) {
            const oldest = seen.values().next()
            if (oldest.done !== true) seen.delete(oldest.value)
          }
          if (!waitForRelay) return settle(event)
          held.set(event.toolUseId, event)
          // a bounded wait: beyond the cap the oldest held completion is decided now
          const oldest = held.size > maxIds ? held.values().next() : undefined
          if (oldest === undefined || oldest.done === true) return Effect.void
          held.delete(oldest.value.toolUseId)
          return settle(oldest.value)
        })
      })

    return { name: "tool-observations", install }
  })
