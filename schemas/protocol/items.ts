// Threads, turns and the items in them, as the app-server reports them. Item kinds the harness reads are typed; every
// other kind (command executions, file changes, MCP calls, ...) passes through as `OtherItem` with its fields kept.
import { Schema } from "effect"
import { optionalNullable } from "./common.js"

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
/** A command the agent ran (S26 reads it: a node attempt reports the commands that ran on the node). */
export const CommandExecutionItem = Schema.Struct({
  type: Schema.Literal("commandExecution"),
  id: Schema.String,
  command: Schema.String,
  cwd: Schema.String,
  status: Schema.String,
  aggregatedOutput: optionalNullable(Schema.String),
  exitCode: optionalNullable(Schema.Int)
})
/** Every other item kind passes through untyped (its fields are kept). */
export const OtherItem = Schema.Struct({ type: Schema.String, id: Schema.String })
export const ThreadItem = Schema.Union(
  AgentMessageItem,
  UserMessageItem,
  ReasoningItem,
  PlanItem,
  ImageGenerationItem,
  ContextCompactionItem,
  DynamicToolCallItem,
  CommandExecutionItem,
  OtherItem
)
export type ThreadItem = typeof ThreadItem.Type

/** Item kinds the harness reads, each held to the matching variant of the generated ThreadItem union. */
export const ThreadItemContracts = [
  { schema: AgentMessageItem, definition: "AgentMessageThreadItem" },
  { schema: UserMessageItem, definition: "UserMessageThreadItem" },
  { schema: ReasoningItem, definition: "ReasoningThreadItem" },
  { schema: PlanItem, definition: "PlanThreadItem" },
  { schema: ImageGenerationItem, definition: "ImageGenerationThreadItem" },
  { schema: ContextCompactionItem, definition: "ContextCompactionThreadItem" },
  { schema: DynamicToolCallItem, definition: "DynamicToolCallThreadItem" },
  { schema: CommandExecutionItem, definition: "CommandExecutionThreadItem" }
] as const

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
