// The notifications the harness reads, each with the tag it is decoded to at the connection. A notification whose
// method is not listed here, or whose params do not decode, reaches subscribers as `Unknown` with the raw message: a
// newer binary never breaks a turn. Each schema is held to the binary by `npm run protocol:check`.
import { Schema } from "effect"
import { optionalNullable, RequestId } from "./common.js"
import { Thread, ThreadItem, ThreadStatus, Turn, TurnError } from "./items.js"
import { CommandExecOutputDeltaNotification } from "./processes.js"

export const ThreadStartedNotification = Schema.Struct({ thread: Thread })
export const ThreadStatusChangedNotification = Schema.Struct({ threadId: Schema.String, status: ThreadStatus })
export const ThreadArchivedNotification = Schema.Struct({ threadId: Schema.String })
export const ThreadClosedNotification = Schema.Struct({ threadId: Schema.String })
export const TurnStartedNotification = Schema.Struct({ threadId: Schema.String, turn: Turn })
export const TurnCompletedNotification = Schema.Struct({ threadId: Schema.String, turn: Turn })
export type TurnCompletedNotification = typeof TurnCompletedNotification.Type
const itemEvent = { threadId: Schema.String, turnId: Schema.String, item: ThreadItem }
export const ItemStartedNotification = Schema.Struct(itemEvent)
export const ItemCompletedNotification = Schema.Struct(itemEvent)
export type ItemCompletedNotification = typeof ItemCompletedNotification.Type
export const AgentMessageDeltaNotification = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  itemId: Schema.String,
  delta: Schema.String
})
export const ErrorNotification = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  willRetry: Schema.Boolean,
  error: TurnError
})
export type ErrorNotification = typeof ErrorNotification.Type
/** a server request was answered or withdrawn (by us, by the turn's end, by a timeout): matched by its exact id (S33) */
export const ServerRequestResolvedNotification = Schema.Struct({
  threadId: Schema.String,
  requestId: RequestId
})
export type ServerRequestResolvedNotification = typeof ServerRequestResolvedNotification.Type
/** A native hook run (S24): reported to observers as a `codex_app_server.hook` agent event, never as a plugin hook. */
export const HookRunSummary = Schema.Struct({
  id: Schema.String,
  eventName: Schema.String,
  status: Schema.String,
  statusMessage: optionalNullable(Schema.String)
})
export const HookNotification = Schema.Struct({
  threadId: Schema.String,
  turnId: optionalNullable(Schema.String),
  run: HookRunSummary
})

/** One breakdown of token counts, as `thread/tokenUsage/updated` reports it. */
export const TokenUsageBreakdown = Schema.Struct({
  inputTokens: Schema.Number,
  cachedInputTokens: Schema.Number,
  outputTokens: Schema.Number,
  reasoningOutputTokens: Schema.Number,
  totalTokens: Schema.Number
})
export type TokenUsageBreakdown = typeof TokenUsageBreakdown.Type
/** A thread's token usage after a model response: `last` is that response's, `total` the thread's so far. */
export const TokenUsageUpdatedNotification = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  tokenUsage: Schema.Struct({
    last: TokenUsageBreakdown,
    total: TokenUsageBreakdown,
    modelContextWindow: optionalNullable(Schema.Number)
  })
})
export type TokenUsageUpdatedNotification = typeof TokenUsageUpdatedNotification.Type
/** An MCP server's startup on a thread (`threadId` null: a thread-wide server). The status stays a string
 * (starting | ready | failed | cancelled): a state a newer binary adds must not make the notification Unknown. */
export const McpServerStartupStatusNotification = Schema.Struct({
  name: Schema.String,
  status: Schema.String,
  threadId: optionalNullable(Schema.String),
  error: optionalNullable(Schema.String)
})
export type McpServerStartupStatusNotification = typeof McpServerStartupStatusNotification.Type

const notification = <const Tag extends string, S extends Schema.Schema.AnyNoContext>(tag: Tag, schema: S, definition: string) => ({
  tag,
  schema,
  definition
})

/** method -> the tag it decodes to, its params schema, and its definition in the generated schema */
export const ServerNotifications = {
  "thread/started": notification("ThreadStarted", ThreadStartedNotification, "ThreadStartedNotification"),
  "thread/status/changed": notification("ThreadStatusChanged", ThreadStatusChangedNotification, "ThreadStatusChangedNotification"),
  "thread/archived": notification("ThreadArchived", ThreadArchivedNotification, "ThreadArchivedNotification"),
  "thread/closed": notification("ThreadClosed", ThreadClosedNotification, "ThreadClosedNotification"),
  "turn/started": notification("TurnStarted", TurnStartedNotification, "TurnStartedNotification"),
  "turn/completed": notification("TurnCompleted", TurnCompletedNotification, "TurnCompletedNotification"),
  "item/started": notification("ItemStarted", ItemStartedNotification, "ItemStartedNotification"),
  "item/completed": notification("ItemCompleted", ItemCompletedNotification, "ItemCompletedNotification"),
  "item/agentMessage/delta": notification("AgentMessageDelta", AgentMessageDeltaNotification, "AgentMessageDeltaNotification"),
  error: notification("TurnErrorReported", ErrorNotification, "ErrorNotification"),
  "serverRequest/resolved": notification(
    "ServerRequestResolved",
    ServerRequestResolvedNotification,
    "ServerRequestResolvedNotification"
  ),
  "hook/started": notification("HookStarted", HookNotification, "HookStartedNotification"),
  "hook/completed": notification("HookCompleted", HookNotification, "HookCompletedNotification"),
  "thread/tokenUsage/updated": notification("TokenUsageUpdated", TokenUsageUpdatedNotification, "ThreadTokenUsageUpdatedNotification"),
  "mcpServer/startupStatus/updated": notification(
    "McpServerStartupStatus",
    McpServerStartupStatusNotification,
    "McpServerStatusUpdatedNotification"
  ),
  "command/exec/outputDelta": notification(
    "CommandExecOutputDelta",
    CommandExecOutputDeltaNotification,
    "CommandExecOutputDeltaNotification"
  )
} as const
export type ServerNotificationMethod = keyof typeof ServerNotifications

export type ServerNotificationTable = typeof ServerNotifications

/** A decoded notification of a method the harness reads: its tag, its method and its typed params (unknown fields kept). */
export type KnownNotification = {
  readonly [M in ServerNotificationMethod]: {
    readonly _tag: ServerNotificationTable[M]["tag"]
    readonly method: M
    readonly params: Schema.Schema.Type<ServerNotificationTable[M]["schema"]>
  }
}[ServerNotificationMethod]

/** Any other notification, or one that did not decode (`problem` says why): the raw message, untouched. */
export interface UnknownNotification {
  readonly _tag: "Unknown"
  readonly method: string
  readonly params: unknown
  readonly problem?: string | undefined
}

/**
 * Not from the app-server's vocabulary: the connection dropped a line over its size limit. Its content, and so its
 * thread and turn, are unknown; every subscriber sees it, and a turn being followed cannot be followed reliably.
 */
export interface DroppedLine {
  readonly _tag: "DroppedLine"
  readonly method: "codex-harness/droppedLine"
  readonly params: { readonly bytes: number }
}

export type ServerNotification = KnownNotification | UnknownNotification | DroppedLine
export type NotificationTag = ServerNotification["_tag"]
/** The notification with this tag. */
export type NotificationOf<T extends NotificationTag> = Extract<ServerNotification, { readonly _tag: T }>
