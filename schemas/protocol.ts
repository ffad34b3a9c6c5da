// The subset of the codex app-server protocol (0.171) the harness relies on. Unknown fields are kept by decoding with
// `onExcessProperty: "preserve"`, and unknown item types fall through to `OtherItem`, so a newer app-server never breaks us.
// `npm run protocol:check` holds every struct here to the JSON schema the pinned binary generates.
import { Schema } from "effect"

const optionalNullable = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

export const AskForApproval = Schema.Literal("untrusted", "on-request", "never")
export type AskForApproval = typeof AskForApproval.Type
export const SandboxMode = Schema.Literal("read-only", "workspace-write", "danger-full-access")
export type SandboxMode = typeof SandboxMode.Type
export const ApprovalsReviewer = Schema.Literal("user", "auto_review", "guardian_subagent")
export const Personality = Schema.Literal("none", "friendly", "pragmatic")

// ---- initialize (v1) ----
export const ClientInfo = Schema.Struct({
  name: Schema.String,
  title: optionalNullable(Schema.String),
  version: Schema.String
})
export const InitializeCapabilities = Schema.Struct({
  experimentalApi: Schema.optional(Schema.Boolean),
  optOutNotificationMethods: optionalNullable(Schema.Array(Schema.String))
})
export const InitializeParams = Schema.Struct({
  clientInfo: ClientInfo,
  capabilities: optionalNullable(InitializeCapabilities)
})
export type InitializeParams = typeof InitializeParams.Type
export const InitializeResponse = Schema.Struct({
  userAgent: Schema.String,
  codexHome: Schema.String,
  platformFamily: Schema.String,
  platformOs: Schema.String
})
export type InitializeResponse = typeof InitializeResponse.Type

// ---- items and turns ----
export const AgentMessageItem = Schema.Struct({
  type: Schema.Literal("agentMessage"),
  id: Schema.String,
  text: Schema.String,
  phase: optionalNullable(Schema.Unknown)
})
export const UserMessageItem = Schema.Struct({
  type: Schema.Literal("userMessage"),
  id: Schema.String,
  content: Schema.Array(Schema.Unknown)
})
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: Schema.String,
  summary: Schema.optional(Schema.Array(Schema.String)),
  content: Schema.optional(Schema.Array(Schema.String))
})
export const PlanItem = Schema.Struct({
  type: Schema.Literal("plan"),
  id: Schema.String,
  text: Schema.String
})
export const ImageGenerationItem = Schema.Struct({
  type: Schema.Literal("imageGeneration"),
  id: Schema.String,
  status: Schema.String,
  savedPath: optionalNullable(Schema.String)
})
export const ContextCompactionItem = Schema.Struct({
  type: Schema.Literal("contextCompaction"),
  id: Schema.String
})
export const DynamicToolCallItem = Schema.Struct({
  type: Schema.Literal("dynamicToolCall"),
  id: Schema.String,
  tool: Schema.String,
  namespace: optionalNullable(Schema.String),
  arguments: Schema.Unknown,
  status: Schema.String
})
/** Every other item kind (command executions, file changes, MCP calls, ...) passes through untyped. */
export const OtherItem = Schema.Struct({ type: Schema.String, id: Schema.String })
export const ThreadItem = Schema.Union(
  AgentMessageItem,
  UserMessageItem,
  ReasoningItem,
  PlanItem,
  ImageGenerationItem,
  ContextCompactionItem,
  DynamicToolCallItem,
  OtherItem
)
export type ThreadItem = typeof ThreadItem.Type

export const TurnStatus = Schema.Literal("completed", "interrupted", "failed", "inProgress")
export type TurnStatus = typeof TurnStatus.Type
export const TurnError = Schema.Struct({
  message: Schema.String,
  codexErrorInfo: optionalNullable(Schema.Unknown),
  additionalDetails: optionalNullable(Schema.String)
})
export const Turn = Schema.Struct({
  id: Schema.String,
  status: TurnStatus,
  items: Schema.Array(ThreadItem),
  error: optionalNullable(TurnError)
})
export type Turn = typeof Turn.Type

export const ThreadStatus = Schema.Union(
  Schema.Struct({ type: Schema.Literal("notLoaded") }),
  Schema.Struct({ type: Schema.Literal("idle") }),
  Schema.Struct({ type: Schema.Literal("systemError") }),
  Schema.Struct({ type: Schema.Literal("active"), activeFlags: Schema.Array(Schema.String) })
)
export type ThreadStatus = typeof ThreadStatus.Type

export const Thread = Schema.Struct({
  id: Schema.String,
  status: Schema.optional(ThreadStatus),
  modelProvider: Schema.String,
  model: optionalNullable(Schema.String),
  preview: Schema.String,
  ephemeral: Schema.Boolean,
  cwd: Schema.String,
  // catalog metadata (S14); optional so a thread from any method decodes
  name: optionalNullable(Schema.String),
  createdAt: Schema.optional(Schema.Number),
  updatedAt: Schema.optional(Schema.Number),
  forkedFromId: optionalNullable(Schema.String),
  parentThreadId: optionalNullable(Schema.String),
  source: Schema.optional(Schema.Unknown)
})
export type Thread = typeof Thread.Type

// ---- user input ----
export const TextInput = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
export const LocalImageInput = Schema.Struct({ type: Schema.Literal("localImage"), path: Schema.String })
export const UserInput = Schema.Union(TextInput, LocalImageInput)
export type UserInput = typeof UserInput.Type

// ---- dynamic tools (experimental API) ----
export const DynamicToolFunction = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String,
  description: Schema.String,
  inputSchema: Schema.Unknown,
  deferLoading: Schema.optional(Schema.Boolean)
})
export type DynamicToolFunction = typeof DynamicToolFunction.Type
export const DynamicToolNamespace = Schema.Struct({
  type: Schema.Literal("namespace"),
  name: Schema.String,
  description: Schema.String,
  tools: Schema.Array(DynamicToolFunction)
})
export const DynamicToolSpec = Schema.Union(DynamicToolFunction, DynamicToolNamespace)
export type DynamicToolSpec = typeof DynamicToolSpec.Type

/** `item/tool/call` server request params */
export const DynamicToolCallParams = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  callId: Schema.String,
  namespace: optionalNullable(Schema.String),
  tool: Schema.String,
  arguments: Schema.Unknown
})
export type DynamicToolCallParams = typeof DynamicToolCallParams.Type
export const DynamicToolCallOutputContentItem = Schema.Union(
  Schema.Struct({ type: Schema.Literal("inputText"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("inputImage"), imageUrl: Schema.String })
)
export const DynamicToolCallResponse = Schema.Struct({
  contentItems: Schema.Array(DynamicToolCallOutputContentItem),
  success: Schema.Boolean
})
export type DynamicToolCallResponse = typeof DynamicToolCallResponse.Type

// ---- collaboration mode (experimental API) ----
export const CollaborationMode = Schema.Struct({
  mode: Schema.Literal("plan", "default"),
  settings: Schema.Struct({
    model: Schema.String,
    reasoning_effort: optionalNullable(Schema.String),
    developer_instructions: optionalNullable(Schema.String)
  })
})
export type CollaborationMode = typeof CollaborationMode.Type

export const SandboxPolicy = Schema.Union(
  Schema.Struct({ type: Schema.Literal("dangerFullAccess") }),
  Schema.Struct({ type: Schema.Literal("readOnly") }),
  Schema.Struct({ type: Schema.Literal("workspaceWrite") })
)
export type SandboxPolicy = typeof SandboxPolicy.Type

// ---- thread/start, thread/resume ----
const threadOptions = {
  model: optionalNullable(Schema.String),
  modelProvider: optionalNullable(Schema.String),
  cwd: optionalNullable(Schema.String),
  approvalPolicy: optionalNullable(AskForApproval),
  approvalsReviewer: optionalNullable(ApprovalsReviewer),
  sandbox: optionalNullable(SandboxMode),
  personality: optionalNullable(Personality),
  serviceTier: optionalNullable(Schema.String),
  baseInstructions: optionalNullable(Schema.String),
  developerInstructions: optionalNullable(Schema.String),
  config: optionalNullable(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}
export const ThreadStartParams = Schema.Struct({
  ...threadOptions,
  ephemeral: optionalNullable(Schema.Boolean),
  dynamicTools: optionalNullable(Schema.Array(DynamicToolSpec))
})
export type ThreadStartParams = typeof ThreadStartParams.Type
export const ThreadResumeParams = Schema.Struct({
  ...threadOptions,
  threadId: Schema.String,
  excludeTurns: Schema.optional(Schema.Boolean)
})
export type ThreadResumeParams = typeof ThreadResumeParams.Type

const threadOpened = {
  thread: Thread,
  model: Schema.String,
  modelProvider: Schema.String,
  cwd: Schema.String,
  approvalPolicy: Schema.Unknown,
  sandbox: Schema.Unknown
}
export const ThreadStartResponse = Schema.Struct(threadOpened)
export type ThreadStartResponse = typeof ThreadStartResponse.Type
export const ThreadResumeResponse = Schema.Struct(threadOpened)
export type ThreadResumeResponse = typeof ThreadResumeResponse.Type

// ---- turn/start, turn/interrupt ----
export const TurnStartParams = Schema.Struct({
  threadId: Schema.String,
  input: Schema.Array(UserInput),
  model: optionalNullable(Schema.String),
  cwd: optionalNullable(Schema.String),
  approvalPolicy: optionalNullable(AskForApproval),
  approvalsReviewer: optionalNullable(ApprovalsReviewer),
  personality: optionalNullable(Personality),
  serviceTier: optionalNullable(Schema.String),
  sandboxPolicy: optionalNullable(SandboxPolicy),
  collaborationMode: optionalNullable(CollaborationMode)
})
export type TurnStartParams = typeof TurnStartParams.Type
export const TurnStartResponse = Schema.Struct({ turn: Turn })
export type TurnStartResponse = typeof TurnStartResponse.Type

export const TurnInterruptParams = Schema.Struct({ threadId: Schema.String, turnId: Schema.String })
export const TurnInterruptResponse = Schema.Struct({})

export const TurnSteerParams = Schema.Struct({
  threadId: Schema.String,
  expectedTurnId: Schema.String,
  input: Schema.Array(UserInput)
})
export const TurnSteerResponse = Schema.Struct({ turnId: Schema.String })

// ---- thread/read (metadata only: a passive status read) ----
export const ThreadReadParams = Schema.Struct({ threadId: Schema.String, includeTurns: Schema.optional(Schema.Boolean) })
export const ThreadReadResponse = Schema.Struct({ thread: Thread })

// ---- supervision (S14-S16): catalog listing, turn history, probe forks, injection, archive ----
export const ThreadSourceKind = Schema.Literal(
  "cli",
  "vscode",
  "exec",
  "appServer",
  "subAgent",
  "subAgentReview",
  "subAgentCompact",
  "subAgentThreadSpawn",
  "subAgentOther",
  "unknown"
)
export const ThreadListParams = Schema.Struct({
  cursor: optionalNullable(Schema.String),
  limit: optionalNullable(Schema.Number),
  archived: optionalNullable(Schema.Boolean),
  parentThreadId: optionalNullable(Schema.String),
  ancestorThreadId: optionalNullable(Schema.String),
  includedThreadIds: optionalNullable(Schema.Array(Schema.String)),
  sourceKinds: optionalNullable(Schema.Array(ThreadSourceKind))
})
export type ThreadListParams = typeof ThreadListParams.Type
export const ThreadListResponse = Schema.Struct({
  data: Schema.Array(Thread),
  nextCursor: optionalNullable(Schema.String)
})
export type ThreadListResponse = typeof ThreadListResponse.Type

export const ThreadTurnsListParams = Schema.Struct({
  threadId: Schema.String,
  cursor: optionalNullable(Schema.String),
  limit: optionalNullable(Schema.Number),
  sortDirection: optionalNullable(Schema.Literal("asc", "desc")),
  itemsView: optionalNullable(Schema.Literal("notLoaded", "summary", "full"))
})
export const ThreadTurnsListResponse = Schema.Struct({
  data: Schema.Array(Turn),
  nextCursor: optionalNullable(Schema.String)
})
export type ThreadTurnsListResponse = typeof ThreadTurnsListResponse.Type

/** A fork never carries model or provider here: the probe pins the snapshot with Codex's own pair (S15). */
export const ThreadForkParams = Schema.Struct({
  threadId: Schema.String,
  ephemeral: Schema.optional(Schema.Boolean),
  excludeTurns: Schema.optional(Schema.Boolean),
  lastTurnId: optionalNullable(Schema.String)
})
export const ThreadForkResponse = Schema.Struct(threadOpened)
export type ThreadForkResponse = typeof ThreadForkResponse.Type

/** Raw Responses API items appended to a thread's model-visible history. */
export const ThreadInjectItemsParams = Schema.Struct({ threadId: Schema.String, items: Schema.Array(Schema.Unknown) })
export const ThreadInjectItemsResponse = Schema.Struct({})
export const ThreadArchiveParams = Schema.Struct({ threadId: Schema.String })
export const ThreadArchiveResponse = Schema.Struct({})
export const ThreadDeleteParams = Schema.Struct({ threadId: Schema.String })
export const ThreadDeleteResponse = Schema.Struct({})
export const ThreadUnsubscribeParams = Schema.Struct({ threadId: Schema.String })
export const ThreadUnsubscribeResponse = Schema.Struct({
  status: Schema.Literal("notLoaded", "notSubscribed", "unsubscribed")
})

// ---- thread/compact/start ----
export const ThreadCompactStartParams = Schema.Struct({ threadId: Schema.String })
export const ThreadCompactStartResponse = Schema.Struct({})

// ---- notifications ----
export const ThreadStartedNotification = Schema.Struct({ thread: Thread })
export const TurnStartedNotification = Schema.Struct({ threadId: Schema.String, turn: Turn })
export const TurnCompletedNotification = Schema.Struct({ threadId: Schema.String, turn: Turn })
export type TurnCompletedNotification = typeof TurnCompletedNotification.Type
export const ItemStartedNotification = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  item: ThreadItem
})
export const ItemCompletedNotification = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  item: ThreadItem
})
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
  requestId: Schema.Union(Schema.String, Schema.Int)
})
export type ServerRequestResolvedNotification = typeof ServerRequestResolvedNotification.Type

// ---- server requests in general ----
/** Every server request the harness routes carries the thread it belongs to; the rest of its params stay untyped here. */
export const ThreadScopedRequestParams = Schema.Struct({ threadId: Schema.String })

// ---- the contract: which methods we call and which notifications we read, with their generated-schema names ----
export interface MethodContract {
  readonly params: Schema.Schema.AnyNoContext
  readonly result: Schema.Schema.AnyNoContext
  /** definition names in the generated JSON schema */
  readonly paramsDefinition: string
  readonly resultDefinition: string
}
export const ClientMethods = {
  initialize: {
    params: InitializeParams,
    result: InitializeResponse,
    paramsDefinition: "InitializeParams",
    resultDefinition: "InitializeResponse"
  },
  "thread/start": {
    params: ThreadStartParams,
    result: ThreadStartResponse,
    paramsDefinition: "ThreadStartParams",
    resultDefinition: "ThreadStartResponse"
  },
  "thread/resume": {
    params: ThreadResumeParams,
    result: ThreadResumeResponse,
    paramsDefinition: "ThreadResumeParams",
    resultDefinition: "ThreadResumeResponse"
  },
  "turn/start": {
    params: TurnStartParams,
    result: TurnStartResponse,
    paramsDefinition: "TurnStartParams",
    resultDefinition: "TurnStartResponse"
  },
  "turn/interrupt": {
    params: TurnInterruptParams,
    result: TurnInterruptResponse,
    paramsDefinition: "TurnInterruptParams",
    resultDefinition: "TurnInterruptResponse"
  },
  "turn/steer": {
    params: TurnSteerParams,
    result: TurnSteerResponse,
    paramsDefinition: "TurnSteerParams",
    resultDefinition: "TurnSteerResponse"
  },
  "thread/read": {
    params: ThreadReadParams,
    result: ThreadReadResponse,
    paramsDefinition: "ThreadReadParams",
    resultDefinition: "ThreadReadResponse"
  },
  "thread/compact/start": {
    params: ThreadCompactStartParams,
    result: ThreadCompactStartResponse,
    paramsDefinition: "ThreadCompactStartParams",
    resultDefinition: "ThreadCompactStartResponse"
  },
  "thread/list": {
    params: ThreadListParams,
    result: ThreadListResponse,
    paramsDefinition: "ThreadListParams",
    resultDefinition: "ThreadListResponse"
  },
  "thread/turns/list": {
    params: ThreadTurnsListParams,
    result: ThreadTurnsListResponse,
    paramsDefinition: "ThreadTurnsListParams",
    resultDefinition: "ThreadTurnsListResponse"
  },
  "thread/fork": {
    params: ThreadForkParams,
    result: ThreadForkResponse,
    paramsDefinition: "ThreadForkParams",
    resultDefinition: "ThreadForkResponse"
  },
  "thread/inject_items": {
    params: ThreadInjectItemsParams,
    result: ThreadInjectItemsResponse,
    paramsDefinition: "ThreadInjectItemsParams",
    resultDefinition: "ThreadInjectItemsResponse"
  },
  "thread/archive": {
    params: ThreadArchiveParams,
    result: ThreadArchiveResponse,
    paramsDefinition: "ThreadArchiveParams",
    resultDefinition: "ThreadArchiveResponse"
  },
  "thread/delete": {
    params: ThreadDeleteParams,
    result: ThreadDeleteResponse,
    paramsDefinition: "ThreadDeleteParams",
    resultDefinition: "ThreadDeleteResponse"
  },
  "thread/unsubscribe": {
    params: ThreadUnsubscribeParams,
    result: ThreadUnsubscribeResponse,
    paramsDefinition: "ThreadUnsubscribeParams",
    resultDefinition: "ThreadUnsubscribeResponse"
  }
} as const satisfies Record<string, MethodContract>
export type ClientMethod = keyof typeof ClientMethods

export const ServerNotifications = {
  "thread/started": { schema: ThreadStartedNotification, definition: "ThreadStartedNotification" },
  "turn/started": { schema: TurnStartedNotification, definition: "TurnStartedNotification" },
  "turn/completed": { schema: TurnCompletedNotification, definition: "TurnCompletedNotification" },
  "item/started": { schema: ItemStartedNotification, definition: "ItemStartedNotification" },
  "item/completed": { schema: ItemCompletedNotification, definition: "ItemCompletedNotification" },
  "item/agentMessage/delta": { schema: AgentMessageDeltaNotification, definition: "AgentMessageDeltaNotification" },
  error: { schema: ErrorNotification, definition: "ErrorNotification" },
  "serverRequest/resolved": { schema: ServerRequestResolvedNotification, definition: "ServerRequestResolvedNotification" }
} as const
export type ServerNotificationMethod = keyof typeof ServerNotifications

/** Item kinds the harness reads, each held to the matching variant of the generated ThreadItem union. */
export const ThreadItemContracts = [
  { schema: AgentMessageItem, definition: "AgentMessageThreadItem" },
  { schema: UserMessageItem, definition: "UserMessageThreadItem" },
  { schema: ReasoningItem, definition: "ReasoningThreadItem" },
  { schema: PlanItem, definition: "PlanThreadItem" },
  { schema: ImageGenerationItem, definition: "ImageGenerationThreadItem" },
  { schema: ContextCompactionItem, definition: "ContextCompactionThreadItem" },
  { schema: DynamicToolCallItem, definition: "DynamicToolCallThreadItem" }
] as const

/** Server-request methods the harness knows of; any other still gets an answer (an error when nobody handles it). */
export const ServerRequestMethods = [
  "item/commandExecution/requestApproval",
  "item/fileChange/requestApproval",
  "item/permissions/requestApproval",
  "item/tool/call",
  "item/tool/requestUserInput",
  "mcpServer/elicitation/request"
] as const
