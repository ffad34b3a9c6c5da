// The `--json` event stream (schemas/events.ts): a turn's events as the harness's own, versioned events. One encoder
// per turn: it remembers the session, the thread and the token usage Codex last reported, so the first event names the
// session and thread and the last one carries the usage.
import { Schema } from "effect"
import type { Usage } from "../../schemas/events.js"
import { eventsVersion, type EventItem, type HarnessEvent } from "../../schemas/events.js"
import { TextContent, type ThreadItem, type TokenUsageUpdatedNotification } from "../../schemas/protocol.js"
import { type ApprovalDecision, type ApprovalRequest, diagnosticsThreads } from "../ports/ApprovalPrompts.js"
import type { QuestionPrompt } from "../ports/Questions.js"
import type { Reply } from "../ports/Delivery.js"
import type { TurnEvent } from "../../schemas/turnEvents.js"

const version = eventsVersion

const isTextContent = Schema.is(TextContent)

/** `thread/tokenUsage/updated`'s breakdown of the last model response (`last`), in the stream's names */
export const usageOf = (params: TokenUsageUpdatedNotification): Usage => {
  const last = params.tokenUsage.last
  return {
    input_tokens: last.inputTokens,
    cached_input_tokens: last.cachedInputTokens,
    output_tokens: last.outputTokens,
    reasoning_output_tokens: last.reasoningOutputTokens,
    total_tokens: last.totalTokens
  }
}

/** A thread item in the stream's words; kinds the stream does not name are `other`, with Codex's name for them. */
export const itemOf = (item: ThreadItem): EventItem => {
  const base = { id: item.id, item_type: item.type === "unknown" ? item.itemType : item.type }
  switch (item.type) {
    case "agentMessage":
      return { ...base, kind: "agent_message", text: item.text }
    case "reasoning":
      return { ...base, kind: "reasoning", text: (item.summary ?? []).join("\n") }
    case "plan":
      return { ...base, kind: "plan", text: item.text }
    case "userMessage": {
      const text = item.content.flatMap((part) => (isTextContent(part) ? [part.text] : [])).join("\n")
      return { ...base, kind: "user_message", text }
    }
    case "dynamicToolCall":
      return { ...base, kind: "tool_call", tool: item.tool, status: item.status }
    case "commandExecution":
      return {
        ...base,
        kind: "command",
        command: item.command,
        ...(item.exitCode !== undefined ? { exit_code: item.exitCode } : {}),
        ...(typeof item.aggregatedOutput === "string" ? { output: item.aggregatedOutput } : {}),
        status: item.status
      }
    case "fileChange":
      return { ...base, kind: "file_change", paths: item.changes.map((c) => c.path), status: item.status }
    case "mcpToolCall":
      return { ...base, kind: "tool_call", tool: `${item.server}.${item.tool}`, status: item.status }
    default:
      return { ...base, kind: "other" }
  }
}

export interface TurnEncoder {
  readonly turnEvent: (event: TurnEvent) => ReadonlyArray<HarnessEvent>
  /** the turn could not run (a harness error before or while it ran) */
  readonly failed: (error: string) => HarnessEvent
}

export const turnEncoder = (sessionId: string): TurnEncoder => {
  let threadId: string | undefined
  let turnId: string | undefined
  let usage: Usage | undefined
  return {
    turnEvent: (event) => {
      switch (event._tag) {
        case "ThreadOpened": {
          const t = event.thread
          threadId = t.threadId
          return [{
            type: "thread.started",
            version,
            session_id: sessionId,
            thread_id: t.threadId,
            model: t.model,
            model_provider: t.modelProvider,
            resumed: t.resumed,
            ...(t.replacedThreadId !== undefined ? { replaced_thread_id: t.replacedThreadId } : {})
          }]
        }
        case "TurnStarted":
          turnId = event.turnId
          return [{ type: "turn.started", version, session_id: sessionId, turn_id: event.turnId }]
        case "Notification": {
          const n = event.notification
          if (n._tag === "ItemStarted" || n._tag === "ItemCompleted") {
            return [{
              type: n._tag === "ItemStarted" ? "item.started" : "item.completed",
              version,
              ...(turnId !== undefined ? { turn_id: turnId } : {}),
              item: itemOf(n.params.item)
            }]
          }
          if (n._tag === "TokenUsageUpdated") usage = usageOf(n.params)
          return []
        }
        case "TurnCompleted": {
          const o = event.outcome
          if (o.status === "completed") {
            return [{
              type: "turn.completed",
              version,
              session_id: sessionId,
              thread_id: o.threadId,
              turn_id: o.turnId,
              final_text: o.finalText ?? null,
              usage: usage ?? null
            }]
          }
          return [{
            type: "turn.failed",
            version,
            session_id: sessionId,
            thread_id: o.threadId,
            turn_id: o.turnId,
            status: o.status === "interrupted" ? "interrupted" : "failed",
            error: o.error ?? `the turn ended ${o.status}`,
            final_text: o.finalText ?? null,
            usage: usage ?? null
          }]
        }
      }
    },
    failed: (error) => ({
      type: "turn.failed",
      version,
      session_id: sessionId,
      ...(threadId !== undefined ? { thread_id: threadId } : {}),
      ...(turnId !== undefined ? { turn_id: turnId } : {}),
      status: "error",
      error,
      final_text: null,
      usage: usage ?? null
    })
  }
}

const decisions = { allowOnce: "allow_once", allowAlways: "allow_always", deny: "deny", noDecision: "no_decision" } as const

export const approvalEvent = (
  request: ApprovalRequest,
  decision: ApprovalDecision,
  by: "policy" | "prompt",
  /** through `serve`: which `approval.requested` it decides */
  asked?: { readonly id: string; readonly session_id: string }
): HarnessEvent => ({ ...decidedEvent(request, decision, by), ...asked })

const decidedEvent = (request: ApprovalRequest, decision: ApprovalDecision, by: "policy" | "prompt"): HarnessEvent => {
  switch (request.kind) {
    case "command":
      return { type: "approval.decided", version, kind: "command", subject: request.command, decision: decisions[decision], by }
    case "fileChange":
      return {
        type: "approval.decided",
        version,
        kind: "file_change",
        subject: request.changes?.map((c) => c.path).join(", ") ?? request.itemId,
        decision: decisions[decision],
        by
      }
    case "permissions":
      return { type: "approval.decided", version, kind: "permissions", subject: JSON.stringify(request.permissions), decision: decisions[decision], by }
    case "mcpTool":
      return { type: "approval.decided", version, kind: "mcp_tool", subject: `${request.serverName}.${request.toolName}`, decision: decisions[decision], by }
    case "diagnostics":
      return { type: "approval.decided", version, kind: "diagnostics", subject: diagnosticsThreads(request), decision: decisions[decision], by }
  }
}

const sources = { requestUserInput: "request_user_input", elicitation: "elicitation", urlElicitation: "url_elicitation" } as const

export const questionDeclinedEvent = (prompt: QuestionPrompt): HarnessEvent => ({
  type: "question.declined",
  version,
  source: sources[prompt.source],
  ...(prompt.serverName !== undefined ? { server_name: prompt.serverName } : {}),
  questions: prompt.questions.map((q) => q.text)
})

export const replyEvent = (reply: Reply): HarnessEvent => ({
  type: "reply",
  version,
  session_id: reply.sessionId,
  source: reply.source,
  ...(reply.text !== undefined ? { text: reply.text } : {}),
  media: reply.media.map((m) => ({ kind: m.kind, path: m.path }))
})

/** one line of the stream */
export const line = (event: HarnessEvent): string => JSON.stringify(event) + "\n"
