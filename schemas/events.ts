// The `--json` event stream of `run` and `chat`: one JSON object per line on stdout, the harness's own events only
// (the app-server's raw notifications are not part of it). Snake case and event names after `codex exec --json`, whose
// users read this too. Every event carries `version`; a change that could break a reader raises it.
// `codex-harness events schema` prints this as a JSON Schema; test/integration/json-events.test.ts holds a real run's
// stream to it.
import { Schema } from "effect"

export const eventsVersion = 1

const version = Schema.Literal(eventsVersion)

/** A thread item as the stream shows it: its kind and the fields a reader of that kind needs. */
export const EventItem = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literal("agent_message", "reasoning", "command", "file_change", "tool_call", "plan", "user_message", "other"),
  /** what Codex calls the item (`commandExecution`, `mcpToolCall`...), for kinds the stream does not name */
  item_type: Schema.String,
  text: Schema.optional(Schema.String),
  command: Schema.optional(Schema.String),
  exit_code: Schema.optional(Schema.NullOr(Schema.Number)),
  output: Schema.optional(Schema.String),
  paths: Schema.optional(Schema.Array(Schema.String)),
  tool: Schema.optional(Schema.String),
  status: Schema.optional(Schema.String)
})
export type EventItem = typeof EventItem.Type

export const Usage = Schema.Struct({
  input_tokens: Schema.Number,
  cached_input_tokens: Schema.Number,
  output_tokens: Schema.Number,
  reasoning_output_tokens: Schema.Number,
  total_tokens: Schema.Number
})
export type Usage = typeof Usage.Type

export const ThreadStarted = Schema.Struct({
  type: Schema.Literal("thread.started"),
  version,
  session_id: Schema.String,
  thread_id: Schema.String,
  model: Schema.String,
  model_provider: Schema.String,
  /** an existing thread continued (false: a new one) */
  resumed: Schema.Boolean,
  /** the thread that was gone and this one replaced */
  replaced_thread_id: Schema.optional(Schema.String)
})

export const TurnStarted = Schema.Struct({ type: Schema.Literal("turn.started"), version, session_id: Schema.String, turn_id: Schema.String })

export const ItemEvent = Schema.Struct({
  type: Schema.Literal("item.started", "item.completed"),
  version,
  turn_id: Schema.optional(Schema.String),
  item: EventItem
})

export const ApprovalEvent = Schema.Struct({
  type: Schema.Literal("approval.decided"),
  version,
  kind: Schema.Literal("command", "file_change", "permissions", "mcp_tool", "diagnostics"),
  /** what was asked: the command, the server and tool, or the item */
  subject: Schema.String,
  decision: Schema.Literal("allow_once", "allow_always", "deny", "no_decision"),
  /** who decided: the `--approvals` policy or the person at the terminal */
  by: Schema.Literal("policy", "prompt"),
  /** through `serve`: the id of the `approval.requested` this decides, and its session */
  id: Schema.optional(Schema.String),
  session_id: Schema.optional(Schema.String)
})

export const QuestionEvent = Schema.Struct({
  type: Schema.Literal("question.declined"),
  version,
  source: Schema.Literal("request_user_input", "elicitation", "url_elicitation"),
  server_name: Schema.optional(Schema.String),
  questions: Schema.Array(Schema.String)
})

export const ReplyEvent = Schema.Struct({
  type: Schema.Literal("reply"),
  version,
  session_id: Schema.String,
  /** `final` for the turn's answer; `notice` for the harness's own messages */
  source: Schema.String,
  text: Schema.optional(Schema.String),
  media: Schema.Array(Schema.Struct({ kind: Schema.String, path: Schema.String }))
})

export const TurnCompleted = Schema.Struct({
  type: Schema.Literal("turn.completed"),
  version,
  session_id: Schema.String,
  thread_id: Schema.String,
  turn_id: Schema.String,
  final_text: Schema.NullOr(Schema.String),
  usage: Schema.NullOr(Usage)
})

export const TurnFailed = Schema.Struct({
  type: Schema.Literal("turn.failed"),
  version,
  session_id: Schema.String,
  thread_id: Schema.optional(Schema.String),
  turn_id: Schema.optional(Schema.String),
  /** `failed` or `interrupted` when the turn ran; `error` when it could not start */
  status: Schema.Literal("failed", "interrupted", "error"),
  error: Schema.String,
  final_text: Schema.NullOr(Schema.String),
  usage: Schema.NullOr(Usage)
})

export const HarnessEvent = Schema.Union(
  ThreadStarted,
  TurnStarted,
  ItemEvent,
  ApprovalEvent,
  QuestionEvent,
  ReplyEvent,
  TurnCompleted,
  TurnFailed
)
export type HarnessEvent = typeof HarnessEvent.Type
