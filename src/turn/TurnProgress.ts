// What a followed turn has told us so far, and when the harness must stop waiting for it. Pure: the runner feeds it
// notifications and the results of its silence checks. A turn ends with Codex's own turn/completed, or because the
// harness gives up for a stated reason: the provider unreachable, the thread no longer active, the provider silent
// too long while nothing else runs, the turn's deadline, or a message too large to read. The reply streamed so far is
// kept, so a turn that ends early still has the text that was complete.
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
  readonly items: Array<ThreadItem>
  finalText: string | undefined
  /** the agent message being streamed: its text so far (kept if its completion never arrives) */
  streaming: { readonly itemId: string; text: string } | undefined
  error: string | undefined
  status: TurnStatus | undefined
  reconnects: number
  ended: Ended | undefined
  /** work items started and not yet completed */
  readonly working: Set<string>
}

export const initial = (): Progress => ({
  items: [],
  finalText: undefined,
  streaming: undefined,
  error: undefined,
  status: undefined,
  reconnects: 0,
  ended: undefined,
  working: new Set()
})

export const done = (p: Progress): boolean => p.status !== undefined || p.ended !== undefined

/** A retry notice for a provider that could not be connected to at all (no HTTP status). */
const isConnectionFailure = (info: unknown): boolean => {
  if (typeof info !== "object" || info === null || !("responseStreamDisconnected" in info)) return false
  const disconnected = info.responseStreamDisconnected
  return typeof disconnected === "object" && disconnected !== null &&
    (!("httpStatusCode" in disconnected) || disconnected.httpStatusCode == null)
}

/** The reply text a turn that ends now keeps: the last completed agent message, else the one streamed so far. */
const keepStreamed = (p: Progress) => {
  if (p.streaming !== undefined && p.streaming.text !== "") p.finalText = p.streaming.text
}

export const absorb = (turnId: string, maxReconnects: number, progress: Progress, n: ServerNotification): Progress => {
  if (n._tag !== "TurnErrorReported") progress.reconnects = 0
  switch (n._tag) {
    case "ItemStarted": {
      if (n.params.turnId === turnId && workItemKinds.has(n.params.item.type)) progress.working.add(n.params.item.id)
      break
    }
    case "AgentMessageDelta": {
      if (n.params.turnId !== turnId) break
      if (progress.streaming?.itemId !== n.params.itemId) progress.streaming = { itemId: n.params.itemId, text: "" }
      progress.streaming.text += n.params.delta
      break
    }
    case "ItemCompleted": {
      if (n.params.turnId !== turnId) break
      const item = n.params.item
      progress.items.push(item)
      progress.working.delete(item.id)
      if (item.type === "agentMessage") {
        progress.finalText = item.text
        if (progress.streaming?.itemId === item.id) progress.streaming = undefined
      }
      break
    }
    case "TurnErrorReported": {
      if (n.params.turnId !== turnId) break
      const { error, willRetry } = n.params
      if (!willRetry) {
        progress.error = TurnErrorText.describe(error)
      } else if (isConnectionFailure(error.codexErrorInfo) && ++progress.reconnects > maxReconnects) {
        progress.ended = {
          reason: `the model provider cannot be reached (${error.additionalDetails ?? error.message})`,
          interrupt: true
        }
      }
      break
    }
    case "TurnCompleted": {
      if (n.params.turn.id !== turnId) break
      progress.status = n.params.turn.status
      progress.error = n.params.turn.error != null ? TurnErrorText.describe(n.params.turn.error) : progress.error
      break
    }
    case "DroppedLine": {
      keepStreamed(progress)
      progress.ended = {
        reason: `the app-server sent a message of ${n.params.bytes} bytes, over the harness's line limit; it was dropped, ` +
          "so the turn cannot be followed (the reply streamed so far is kept)",
        interrupt: true
      }
      break
    }
  }
  return progress
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
 * nothing (no flags, no work item) whose provider has sent nothing for `providerSilenceMs` is ended too. Returns
 * whether the silence counts (false: something legitimately runs, so the silence clock restarts).
 */
export const afterSilence = (progress: Progress, check: SilenceCheck, providerSilenceMs: number): boolean => {
  if (check.status !== undefined && check.status !== "active") {
    keepStreamed(progress)
    progress.ended = { reason: `the turn went silent and the app-server reports the thread ${check.status}`, interrupt: false }
    return true
  }
  if (check.status === undefined) return true
  if (check.activeFlags.length > 0 || progress.working.size > 0) return false
  if (check.silentMs >= providerSilenceMs) {
    keepStreamed(progress)
    progress.ended = {
      reason: `the model provider sent nothing for ${Math.round(check.silentMs / 1000)} s while the turn waited on it ` +
        "(turns.silenceSeconds); the turn was interrupted",
      interrupt: true
    }
  }
  return true
}

/** The turn's deadline passed: it is interrupted, keeping what it completed. */
export const pastDeadline = (progress: Progress, deadlineMs: number): void => {
  keepStreamed(progress)
  progress.ended = {
    reason: `the turn did not finish within ${Math.round(deadlineMs / 1000)} s (turns.timeoutSeconds); it was interrupted`,
    interrupt: true
  }
}
