// Which native tool uses the PostToolUse hook relay already reported as after_tool_call (S23), so the item/completed
// projection (ToolObservations) reports each tool use once. Both sides key a tool use by its thread and Codex's call id:
// the PostToolUse payload's `tool_use_id` equals the `id` of the tool's item (observed on codex 0.171.0: `call_echo` in
// both for an exec_command call). Codex sends `item/completed` *before* it runs the PostToolUse hook, so the projection
// cannot just look here when the item arrives: while the relay reports PostToolUse it holds each completion until that
// tool use's PostToolUse hook run completes (`hook/completed`, which comes only after the relay answered, so after it
// recorded the id) or the turn ends, and then looks.
import { Effect } from "effect"
import type { HookPayload } from "../ports/HookPolicy.js"
import type { LifecycleEvent } from "../ports/PluginHooks.js"

export const defaults = {
  /** tool uses remembered; the oldest are forgotten beyond this */
  maxEntries: 4_096
} as const

export interface ToolUseLedger {
  /** true once the hook relay reports PostToolUse (set while the harness is built) */
  readonly relayReports: () => boolean
  readonly setRelayReports: () => void
  /** the relay reported this tool use */
  readonly record: (threadId: string, toolUseId: string) => void
  /** whether the relay reported this tool use; forgets it (each tool use is looked up once) */
  readonly take: (threadId: string, toolUseId: string) => boolean
}

const key = (threadId: string, toolUseId: string) => `${threadId}\u0000${toolUseId}`

/** A bounded in-memory ledger (insertion order; the oldest dropped first). */
export const make = (maxEntries: number = defaults.maxEntries): ToolUseLedger => {
  const ids = new Set<string>()
  let reports = false
  return {
    relayReports: () => reports,
    setRelayReports: () => {
      reports = true
    },
    record: (threadId, toolUseId) => {
      ids.add(key(threadId, toolUseId))
      while (ids.size > Math.max(1, maxEntries)) {
        const oldest = ids.values().next()
        if (oldest.done === true) break
        ids.delete(oldest.value)
      }
    },
    take: (threadId, toolUseId) => ids.delete(key(threadId, toolUseId))
  }
}

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

type AfterToolCall = Extract<LifecycleEvent, { readonly type: "after_tool_call" }>

/** Codex's hook tool names, as the item kinds the item/completed projection reports */
const toolOfHookName: Readonly<Record<string, string>> = { Bash: "commandExecution", apply_patch: "fileChange" }

/**
 * The after_tool_call observation of a relayed PostToolUse call, if it names its tool use; `item` is Codex's hook
 * payload (it carries `tool_input` and `tool_response`). Pure.
 */
export const observationOfPostToolUse = (sessionId: string, payload: HookPayload): AfterToolCall | undefined => {
  if (payload.threadId === undefined || payload.toolUseId === undefined) return undefined
  const raw = payload.raw
  return {
    type: "after_tool_call",
    source: "post_tool_use",
    sessionId,
    threadId: payload.threadId,
    turnId: payload.turnId ?? "",
    toolUseId: payload.toolUseId,
    tool: payload.toolName !== undefined ? (toolOfHookName[payload.toolName] ?? payload.toolName) : "unknown",
    status: undefined,
    item: isRecord(raw) ? raw : {}
  }
}

/** How the hook relay reports PostToolUse to the lifecycle observers (the LifecycleBus), and where it records them. */
export interface PostToolUseReporting {
  readonly ledger: ToolUseLedger
  readonly observe: (event: LifecycleEvent) => Effect.Effect<void>
}

/** The relay's report of one PostToolUse: recorded in the ledger first, then queued for the observers. */
export const reporterOf = (reporting: PostToolUseReporting) => (sessionId: string, payload: HookPayload): Effect.Effect<void> =>
  Effect.suspend(() => {
    const event = observationOfPostToolUse(sessionId, payload)
    if (event === undefined) return Effect.void
    reporting.ledger.record(event.threadId, event.toolUseId)
    return reporting.observe(event)
  })
