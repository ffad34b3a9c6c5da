// Threads, turns and the items in them, as the app-server reports them. The item union is closed: every kind the pinned
// binary emits has its schema, and anything else (a kind a newer binary adds, or a known kind whose fields no longer
// fit) decodes to `UnknownItem`, which keeps the raw item. Decoding an item never fails on its kind, so a newer binary
// never breaks a turn, and code above the connection narrows on `type` without casts.
// Statuses stay strings: a status a newer binary adds must not turn a whole item Unknown.
import { Schema } from "effect"
import { optionalNullable } from "./common.js"

/** A user message part: text parts are typed (they are what the harness reads); images, skills, mentions... keep
 * their fields. */
export const TextContent = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
export const OtherContent = Schema.Struct({ type: Schema.String })
export const UserMessageContent = Schema.Union(TextContent, OtherContent)
export type UserMessageContent = typeof UserMessageContent.Type

export const UserMessageItem = Schema.Struct({
  type: Schema.Literal("userMessage"),
  id: Schema.String,
  content: Schema.Array(UserMessageContent)
})
export const HookPromptItem = Schema.Struct({
  type: Schema.Literal("hookPrompt"),
  id: Schema.String,
  fragments: Schema.Array(Schema.Struct({ text: Schema.String, hookRunId: Schema.String }))
})
export const AgentMessageItem = Schema.Struct({
  type: Schema.Literal("agentMessage"),
  id: Schema.String,
  text: Schema.String,
  phase: optionalNullable(Schema.Unknown)
})
export const FunctionCallOutputItem = Schema.Struct({
  type: Schema.Literal("functionCallOutput"),
  id: Schema.String,
  name: Schema.String,
  namespace: optionalNullable(Schema.String),
  /** a string, or content items */
  output: Schema.Unknown
})
export const PlanItem = Schema.Struct({
  type: Schema.Literal("plan"),
  id: Schema.String,
  text: Schema.String
})
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: Schema.String,
  summary: Schema.optional(Schema.Array(Schema.String)),
  content: Schema.optional(Schema.Array(Schema.String))
})
export const CommandExecutionItem = Schema.Struct({
  type: Schema.Literal("commandExecution"),
  id: Schema.String,
  command: Schema.String,
  commandActions: Schema.Array(Schema.Unknown),
  cwd: Schema.String,
  /** inProgress | completed | failed | declined */
  status: Schema.String,
  aggregatedOutput: optionalNullable(Schema.String),
  exitCode: optionalNullable(Schema.Number),
  durationMs: optionalNullable(Schema.Number),
  processId: optionalNullable(Schema.String),
  source: Schema.optional(Schema.String)
})
export const FileUpdateChange = Schema.Struct({
  path: Schema.String,
  /** `{type: "add" | "delete" | "update", move_path?}` */
  kind: Schema.Unknown,
  diff: Schema.String
})
export const FileChangeItem = Schema.Struct({
  type: Schema.Literal("fileChange"),
  id: Schema.String,
  changes: Schema.Array(FileUpdateChange),
  /** inProgress | completed | failed | declined */
  status: Schema.String
})
export const McpToolCallItem = Schema.Struct({
  type: Schema.Literal("mcpToolCall"),
  id: Schema.String,
  server: Schema.String,
  tool: Schema.String,
  arguments: Schema.Unknown,
  /** inProgress | completed | failed */
  status: Schema.String,
  result: optionalNullable(Schema.Unknown),
  error: optionalNullable(Schema.Struct({ message: Schema.String })),
  durationMs: optionalNullable(Schema.Number)
})
export const DynamicToolCallItem = Schema.Struct({
  type: Schema.Literal("dynamicToolCall"),
  id: Schema.String,
  tool: Schema.String,
  namespace: optionalNullable(Schema.String),
  arguments: Schema.Unknown,
  /** inProgress | completed | failed */
  status: Schema.String,
  contentItems: optionalNullable(Schema.Array(Schema.Unknown)),
  success: optionalNullable(Schema.Boolean),
  durationMs: optionalNullable(Schema.Number)
})
export const CollabAgentToolCallItem = Schema.Struct({
  type: Schema.Literal("collabAgentToolCall"),
  id: Schema.String,
  /** spawnAgent | sendInput | wait | ... */
  tool: Schema.String,
  status: Schema.String,
  senderThreadId: Schema.String,
  receiverThreadIds: Schema.Array(Schema.String),
  agentsStates: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  prompt: optionalNullable(Schema.String),
  model: optionalNullable(Schema.String)
})
export const SubAgentActivityItem = Schema.Struct({
  type: Schema.Literal("subAgentActivity"),
  id: Schema.String,
  agentPath: Schema.String,
  agentThreadId: Schema.String,
  /** started | interacted | interrupted | completed */
  kind: Schema.String,
  model: optionalNullable(Schema.String)
})
export const WebSearchItem = Schema.Struct({
  type: Schema.Literal("webSearch"),
  id: Schema.String,
  query: Schema.String,
  action: optionalNullable(Schema.Unknown)
})
export const ImageViewItem = Schema.Struct({
  type: Schema.Literal("imageView"),
  id: Schema.String,
  path: Schema.String
})
export const SleepItem = Schema.Struct({
  type: Schema.Literal("sleep"),
  id: Schema.String,
  durationMs: Schema.Number
})
export const ImageGenerationItem = Schema.Struct({
  type: Schema.Literal("imageGeneration"),
  id: Schema.String,
  status: Schema.String,
  savedPath: optionalNullable(Schema.String),
  revisedPrompt: optionalNullable(Schema.String)
})
export const EnteredReviewModeItem = Schema.Struct({
  type: Schema.Literal("enteredReviewMode"),
  id: Schema.String,
  review: Schema.String
})
export const ExitedReviewModeItem = Schema.Struct({
  type: Schema.Literal("exitedReviewMode"),
  id: Schema.String,
  review: Schema.String
})
export const ContextCompactionItem = Schema.Struct({
  type: Schema.Literal("contextCompaction"),
  id: Schema.String
})

/** An item as it is on the wire: a kind, an id, and whatever else it carries. */
const RawItem = Schema.Struct(
  { type: Schema.String, id: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)

/**
 * An item the harness has no schema for (a kind a newer binary adds, or a known kind whose fields no longer fit its
 * schema): `itemType` is the kind the binary gave and `raw` the whole item as sent, so nothing is lost. Its `type` is
 * "unknown" so that narrowing on a known kind never admits it. Encoding gives the raw item back.
 */
export const UnknownItem = Schema.transform(
  RawItem,
  Schema.Struct({
    type: Schema.Literal("unknown"),
    itemType: Schema.String,
    id: Schema.String,
    raw: Schema.Record({ key: Schema.String, value: Schema.Unknown })
  }),
  {
    strict: true,
    decode: (wire) => ({ type: "unknown" as const, itemType: wire.type, id: wire.id, raw: wire }),
    encode: (item) => ({ ...item.raw, type: item.itemType, id: item.id })
  }
)
export type UnknownItem = typeof UnknownItem.Type

/** Every item kind of the pinned binary, each held to its variant of the generated ThreadItem union. */
export const ThreadItemContracts = [
  { schema: UserMessageItem, definition: "UserMessageThreadItem" },
  { schema: HookPromptItem, definition: "HookPromptThreadItem" },
  { schema: AgentMessageItem, definition: "AgentMessageThreadItem" },
  { schema: FunctionCallOutputItem, definition: "FunctionCallOutputThreadItem" },
  { schema: PlanItem, definition: "PlanThreadItem" },
  { schema: ReasoningItem, definition: "ReasoningThreadItem" },
  { schema: CommandExecutionItem, definition: "CommandExecutionThreadItem" },
  { schema: FileChangeItem, definition: "FileChangeThreadItem" },
  { schema: McpToolCallItem, definition: "McpToolCallThreadItem" },
  { schema: DynamicToolCallItem, definition: "DynamicToolCallThreadItem" },
  { schema: CollabAgentToolCallItem, definition: "CollabAgentToolCallThreadItem" },
  { schema: SubAgentActivityItem, definition: "SubAgentActivityThreadItem" },
  { schema: WebSearchItem, definition: "WebSearchThreadItem" },
  { schema: ImageViewItem, definition: "ImageViewThreadItem" },
  { schema: SleepItem, definition: "SleepThreadItem" },
  { schema: ImageGenerationItem, definition: "ImageGenerationThreadItem" },
  { schema: EnteredReviewModeItem, definition: "EnteredReviewModeThreadItem" },
  { schema: ExitedReviewModeItem, definition: "ExitedReviewModeThreadItem" },
  { schema: ContextCompactionItem, definition: "ContextCompactionThreadItem" }
] as const

/** The closed item union: the known kinds first, then `UnknownItem`, which takes whatever none of them does. */
export const ThreadItem = Schema.Union(
  UserMessageItem,
  HookPromptItem,
  AgentMessageItem,
  FunctionCallOutputItem,
  PlanItem,
  ReasoningItem,
  CommandExecutionItem,
  FileChangeItem,
  McpToolCallItem,
  DynamicToolCallItem,
  CollabAgentToolCallItem,
  SubAgentActivityItem,
  WebSearchItem,
  ImageViewItem,
  SleepItem,
  ImageGenerationItem,
  EnteredReviewModeItem,
  ExitedReviewModeItem,
  ContextCompactionItem,
  UnknownItem
)
export type ThreadItem = typeof ThreadItem.Type
/** The item kinds, `"unknown"` included. */
export type ThreadItemType = ThreadItem["type"]
/** The item of this kind. */
export type ItemOf<T extends ThreadItemType> = Extract<ThreadItem, { readonly type: T }>

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

export const TextInput = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
export const LocalImageInput = Schema.Struct({ type: Schema.Literal("localImage"), path: Schema.String })
export const UserInput = Schema.Union(TextInput, LocalImageInput)
export type UserInput = typeof UserInput.Type
