// What a followed turn has told us so far, and when the harness must stop waiting for it. Pure: the runner feeds it
// notifications and the results of its silence checks. A turn ends with Codex's own turn/completed, or because the
// harness gives up for a stated reason: the provider unreachable, the thread no longer active, the provider silent
// too long while nothing else runs, the turn's deadline, or a message too large to read. The reply streamed so far is
// kept, so a turn that ends early still has the text that was complete. Each step returns a new value: the runner
// folds the turn's notifications into it, and whoever holds the turn can read where it stands at any moment.
import type { ServerNotification, ThreadItem, TurnStatus } from "../../schemas/protocol.js"
import * as TurnErrorText from "./TurnErrorText.js"

/** Item kinds that are work Codex does itself (commands, tools, sub-agents): silence meanwhile is not the provider's. */
export const workItemKinds: ReadonlySet<string> = new Set([
  "commandExecution",
  "fileChange",
  "mcpToolCall",
  "dynamicToolCall",
  "webSearch",
  "imageGeneration",
  "imageView",
  "collabAgentToolCall"
])

/** Why the harness stopped waiting, and whether the turn may still be running (so it must be interrupted). */
export interface Ended {
  readonly reason: string
  readonly interrupt: boolean
}

export interface Progress {
  readonly items: ReadonlyArray<ThreadItem>
  /** the reply the turn ends with: the last completed agent message (or, when it ended early, the text streamed so far) */
  readonly finalText: string | undefined
  /** the last agent message that completed: what a failed or interrupted turn still delivers */
  readonly completedText: string | undefined
  /** the agent message being streamed: its text so far (kept if its completion never arrives) */
  readonly streaming: { readonly itemId: string; readonly text: string } | undefined
  readonly error: string | undefined
  readonly status: TurnStatus | undefined
  readonly reconnects: number
  readonly ended: Ended | undefined
  /** work items started and not yet completed */
  readonly working: ReadonlySet<string>
  /** native compactions (contextCompaction items) started in the turn and not completed */
  readonly compacting: ReadonlySet<string>
}

export const initial: Progress = {
  items: [],
  finalText: undefined,
  completedText: undefined,
  streaming: undefined,
  error: undefined,
  status: undefined,
  reconnects: 0,
  ended: undefined,
  working: new Set(),
  compacting: new Set()
}

export const done = (p: Progress): boolean => p.status !== undefined || p.ended !== undefined

/** A retry notice for a provider that could not be connected to at all (no HTTP status). */
const isConnectionFailure = (info: unknown): boolean => {
  if (typeof info !== "object" || info === null || !("responseStreamDisconnected" in info)) return false
  const disconnected = info.responseStreamDisconnected
  return typeof disconnected === "object" && disconnected !== null &&
    (!("httpStatusCode" in disconnected) || disconnected.httpStatusCode == null)
}

/** The turn ends early for this reason, keeping the reply text it has: the last completed message, else the streamed one. */
const endEarly = (p: Progress, ended: Ended): Progress => ({
  ...p,
  ended,
  finalText: p.streaming !== undefined && p.streaming.text !== "" ? p.streaming.text : p.finalText
})

const withMember = (set: ReadonlySet<string>, id: string): ReadonlySet<string> => (set.has(id) ? set : new Set(set).add(id))
const without = (set: ReadonlySet<string>, id: string): ReadonlySet<string> => {
  if (!set.has(id)) return set
  const next = new Set(set)
  next.delete(id)
  return next
}

/** The progress after one more notification of the turn (`turnId`); the one before is left as it was. */
export const absorb = (turnId: string, maxReconnects: number, before: Progress, n: ServerNotification): Progress => {
  const p = n._tag !== "TurnErrorReported" && before.reconnects !== 0 ? { ...before, reconnects: 0 } : before
  switch (n._tag) {
    case "ItemStarted": {
      if (n.params.turnId !== turnId) return p
      const item = n.params.item
      if (workItemKinds.has(item.type)) return { ...p, working: withMember(p.working, item.id) }
      if (item.type === "contextCompaction") return { ...p, compacting: withMember(p.compacting, item.id) }
      return p
    }
    case "AgentMessageDelta": {
      if (n.params.turnId !== turnId) return p
      const sofar = p.streaming?.itemId === n.params.itemId ? p.streaming.text : ""
      return { ...p, streaming: { itemId: n.params.itemId, text: sofar + n.params.delta } }
    }
    case "ItemCompleted": {
      if (n.params.turnId !== turnId) return p
      const item = n.params.item
      const next: Progress = {
        ...p,
        items: [...p.items, item],
        working: without(p.working, item.id),
        compacting: without(p.compacting, item.id)
      }
      if (item.type !== "agentMessage") return next
      return {
        ...next,
        finalText: item.text,
        completedText: item.text,
        streaming: p.streaming?.itemId === item.id ? undefined : p.streaming
      }
    }
    case "TurnErrorReported": {
      if (n.params.turnId !== turnId) return p
      const { error, willRetry } = n.params
      if (!willRetry) return { ...p, error: TurnErrorText.describe(error) }
      if (!isConnectionFailure(error.codexErrorInfo)) return p
      const reconnects = p.reconnects + 1
      if (reconnects <= maxReconnects) return { ...p, reconnects }
      return {
        ...p,
        reconnects,
        ended: { reason: `the model provider cannot be reached (${error.additionalDetails ?? error.message})`, interrupt: true }
      }
    }
    case "TurnCompleted": {
      if (n.params.turn.id !== turnId) return p
      return {
        ...p,
        status: n.params.turn.status,
        error: n.params.turn.error != null ? TurnErrorText.describe(n.params.turn.error) : p.error
      }
    }
    case "DroppedLine":
      return endEarly(p, {
        reason: `the app-server sent a message of ${n.params.bytes} bytes, over the harness's line limit; it was dropped, ` +
          "so the turn cannot be followed (the reply streamed so far is kept)",
        interrupt: true
      })
    default:
      return p
  }
}

/** What a silence check found: the thread's status and its active flags (waiting on an approval, an answer, ...). */
export interface SilenceCheck {
  readonly status: string | undefined
  readonly activeFlags: ReadonlyArray<string>
  /** since the last notification of the turn, or the last time work was seen in progress */
  readonly silentMs: number
}

/**
 * After a silence: a thread no longer active without turn/completed is a stalled turn; an active one waiting on
 * nothing (no flags, no work item) whose provider has sent nothing for `providerSilenceMs` is ended too. `counts` is
 * false when something legitimately runs, so the silence clock restarts.
 */
export const afterSilence = (
  p: Progress,
  check: SilenceCheck,
  providerSilenceMs: number
): { readonly progress: Progress; readonly counts: boolean } => {
  if (check.status !== undefined && check.status !== "active") {
    return {
      progress: endEarly(p, { reason: `the turn went silent and the app-server reports the thread ${check.status}`, interrupt: false }),
      counts: true
    }
  }
  if (check.status === undefined) return { progress: p, counts: true }
  if (check.activeFlags.length > 0 || p.working.size > 0) return { progress: p, counts: false }
  if (check.silentMs < providerSilenceMs) return { progress: p, counts: true }
  return {
    progress: endEarly(p, {
      reason: `the model provider sent nothing for ${Math.round(check.silentMs / 1000)} s while the turn waited on it ` +
        "(turns.silenceSeconds); the turn was interrupted",
      interrupt: true
    }),
    counts: true
  }
}

/** The turn's deadline passed: it is interrupted, keeping what it completed. */
export const pastDeadline = (p: Progress, deadlineMs: number): Progress =>
  endEarly(p, {
    reason: `the turn did not finish within ${Math.round(deadlineMs / 1000)} s (turns.timeoutSeconds); it was interrupted`,
    interrupt: true
  })
