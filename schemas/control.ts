// The control API `codex-harness serve` offers (src/control/): an @effect/rpc group, so a client (the CLI with
// `--connect`, the Control UI, an embedder's bot) starts turns, answers approvals and questions, and reads sessions and
// threads through one long-lived harness. Payloads, results and errors are Schemas, decoded on both ends.
//
// A turn's stream carries the `--json` events (schemas/events.ts) plus the control API's own: which session the turn
// runs in, and the approvals and questions waiting for a client, by id.
import { Rpc, RpcGroup } from "@effect/rpc"
import { Schema } from "effect"
import { eventsVersion, HarnessEvent } from "./events.js"
import { SessionRecord } from "./session.js"

const version = Schema.Literal(eventsVersion)

/** bounds a client cannot exceed: a prompt is what `run` reads from stdin at most */
export const maxPromptChars = 1024 * 1024
const Text = (max: number) => Schema.String.pipe(Schema.maxLength(max))
const Id = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))

/** The first event of a turn's stream: the session it runs in (`created`: a new one). */
export const SessionSelected = Schema.Struct({
  type: Schema.Literal("session.selected"),
  version,
  session_id: Schema.String,
  created: Schema.Boolean
})

/**
 * What became of a message sent with StartTurn, as the session's queue mode decided (S35): it starts a turn, is steered
 * into the running one after the quiet window, waits for after it, or answered the question the running turn asked.
 */
export const MessageAccepted = Schema.Struct({
  type: Schema.Literal("message.accepted"),
  version,
  session_id: Schema.String,
  disposition: Schema.Literal("start", "steer", "queue", "answer"),
  mode: Schema.Literal("steer", "followup", "collect")
})

/** A piece of the agent's reply as it streams (the `--json` stream has the whole item at item.completed only). */
export const ItemDelta = Schema.Struct({
  type: Schema.Literal("item.delta"),
  version,
  session_id: Schema.String,
  item_id: Schema.String,
  delta: Schema.String
})

export const ApprovalKind = Schema.Literal("command", "file_change", "permissions", "mcp_tool", "diagnostics")

/** An approval Codex asked for that waits for a client's `Answer` (until `expires_at`, then it is declined). */
export const ApprovalRequested = Schema.Struct({
  type: Schema.Literal("approval.requested"),
  version,
  id: Schema.String,
  session_id: Schema.String,
  kind: ApprovalKind,
  /** one line: the command, the files, the tool */
  subject: Schema.String,
  /** what a person reads before deciding (the terminal prompt's text) */
  detail: Schema.String,
  /** epoch milliseconds */
  expires_at: Schema.Number
})
export type ApprovalRequested = typeof ApprovalRequested.Type

export const QuestionField = Schema.Struct({
  id: Schema.String,
  header: Schema.optional(Schema.String),
  text: Schema.String,
  kind: Schema.Literal("text", "number", "integer", "boolean", "choice", "multi", "continue"),
  options: Schema.Array(Schema.Struct({ label: Schema.String, description: Schema.optional(Schema.String) })),
  allow_other: Schema.Boolean,
  is_secret: Schema.Boolean,
  required: Schema.Boolean,
  hint: Schema.optional(Schema.String)
})

/** A question (request_user_input, an MCP elicitation) waiting for a client's `Answer`. */
export const QuestionAsked = Schema.Struct({
  type: Schema.Literal("question.asked"),
  version,
  id: Schema.String,
  session_id: Schema.String,
  source: Schema.Literal("request_user_input", "elicitation", "url_elicitation"),
  server_name: Schema.optional(Schema.String),
  message: Schema.optional(Schema.String),
  /** shown as text, never opened (S32) */
  url: Schema.optional(Schema.String),
  questions: Schema.Array(QuestionField),
  /** why the previous answer was not accepted */
  problem: Schema.optional(Schema.String),
  expires_at: Schema.Number
})
export type QuestionAsked = typeof QuestionAsked.Type

/** An approval or question no longer waits: answered (by which client), timed out, or withdrawn by the turn. */
export const InteractionClosed = Schema.Struct({
  type: Schema.Literal("interaction.closed"),
  version,
  id: Schema.String,
  session_id: Schema.String,
  outcome: Schema.Literal("answered", "timed_out", "withdrawn"),
  by: Schema.optional(Schema.String)
})

export const Pending = Schema.Union(ApprovalRequested, QuestionAsked)
export type Pending = typeof Pending.Type

export const ControlEvent = Schema.Union(...HarnessEvent.members, SessionSelected, MessageAccepted, ItemDelta, ApprovalRequested, QuestionAsked, InteractionClosed)
export type ControlEvent = typeof ControlEvent.Type

/** Every failure of the API: a code a client can act on and the one line the CLI prints. */
export class ControlFailure extends Schema.TaggedError<ControlFailure>()("ControlFailure", {
  code: Schema.Literal("usage", "not_found", "busy", "refused", "failed", "shutting_down"),
  message: Schema.String
}) {}

export const TurnKind = Schema.Literal("user", "heartbeat", "lightweight", "ringZero", "messageOnly", "toolDisabled")

/** Which session a request means: a whole id or a unique prefix (4+), `last`, or neither (a new session). */
export const SessionRef = Schema.Struct({
  session: Schema.optional(Id),
  last: Schema.optional(Schema.Boolean)
})

export const Health = Schema.Struct({
  version: Schema.String,
  pid: Schema.Number,
  state_dir: Schema.String,
  started_at: Schema.String,
  active_turns: Schema.Array(Schema.Struct({ session_id: Schema.String, turn_id: Schema.optional(Schema.String) })),
  pending: Schema.Number,
  clients: Schema.Number
})

export const SessionRow = Schema.Struct({
  sessionId: Schema.String,
  updatedAt: Schema.String,
  threadId: Schema.NullOr(Schema.String),
  turns: Schema.Number,
  title: Schema.NullOr(Schema.String),
  model: Schema.NullOr(Schema.String),
  modelProvider: Schema.NullOr(Schema.String),
  providerUrl: Schema.NullOr(Schema.String)
})

export const CatalogRow = Schema.Struct({
  threadId: Schema.String,
  node: Schema.String,
  remote: Schema.Boolean,
  title: Schema.String,
  status: Schema.Literal("notLoaded", "idle", "active", "systemError", "unknown"),
  activeFlags: Schema.Array(Schema.String),
  model: Schema.optional(Schema.String),
  modelProvider: Schema.optional(Schema.String),
  cwd: Schema.optional(Schema.String),
  createdAt: Schema.optional(Schema.Number),
  updatedAt: Schema.optional(Schema.Number),
  forkedFromId: Schema.optional(Schema.String),
  parentThreadId: Schema.optional(Schema.String),
  source: Schema.String
})

export const SteerResult = Schema.Struct({
  outcome: Schema.Literal("steered", "not_steerable", "no_active_turn"),
  turn_id: Schema.optional(Schema.String),
  reason: Schema.optional(Schema.String)
})

export const ApprovalAnswer = Schema.Literal("allow_once", "allow_always", "deny")

export class ControlRpcs extends RpcGroup.make(
  Rpc.make("Health", { success: Health, error: ControlFailure }),
  Rpc.make("StartTurn", {
    payload: {
      ...SessionRef.fields,
      prompt: Text(maxPromptChars),
      model: Schema.optional(Id),
      turn_kind: Schema.optional(TurnKind),
      /** how this turn's approvals are decided: by a client's Answer (default), or a fixed policy */
      approvals: Schema.optional(Schema.Literal("ask", "allow", "deny")),
      /**
       * the message's idempotency key, cluster serves only: the same id sent again (to any runner's serve, say after the
       * first one died) runs no second turn, it gets the outcome of the one it started; refused by a single serve
       */
      message_id: Schema.optional(Id)
    },
    success: ControlEvent,
    error: ControlFailure,
    stream: true
  }),
  Rpc.make("Steer", { payload: { session: Id, texts: Schema.Array(Text(maxPromptChars)) }, success: SteerResult, error: ControlFailure }),
  Rpc.make("Interrupt", { payload: { session: Id }, success: Schema.Struct({ interrupted: Schema.Boolean }), error: ControlFailure }),
  Rpc.make("Answer", {
    payload: {
      id: Id,
      /** for an approval */
      decision: Schema.optional(ApprovalAnswer),
      /** for a question: answers by question id; or `decline` */
      answers: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Array(Text(64 * 1024)) })),
      decline: Schema.optional(Schema.Boolean)
    },
    success: Schema.Void,
    error: ControlFailure
  }),
  Rpc.make("Pending", { success: Schema.Array(Pending), error: ControlFailure }),
  Rpc.make("Watch", {
    payload: { session: Schema.optional(Id) },
    success: ControlEvent,
    error: ControlFailure,
    stream: true
  }),
  Rpc.make("ListSessions", { success: Schema.Array(SessionRow), error: ControlFailure }),
  Rpc.make("ShowSession", {
    payload: SessionRef.fields,
    success: Schema.Struct({ session_id: Schema.String, records: Schema.Array(SessionRecord) }),
    error: ControlFailure
  }),
  Rpc.make("ListThreads", {
    success: Schema.Struct({ rows: Schema.Array(CatalogRow), truncated: Schema.Boolean }),
    error: ControlFailure
  }),
  Rpc.make("ShowThread", { payload: { thread: Id }, success: CatalogRow, error: ControlFailure }),
  Rpc.make("Compact", {
    payload: { session: Id },
    success: Schema.Struct({ session_id: Schema.String, thread_id: Schema.String, turn_id: Schema.String, duration_ms: Schema.Number }),
    error: ControlFailure
  }),
  Rpc.make("Branch", {
    payload: { thread: Id, session: Schema.optional(Id) },
    // the branch is decided: its first turn forks the snapshot and starts its own model-locked thread (S15)
    success: Schema.Struct({
      session_id: Schema.String,
      source_thread_id: Schema.String,
      last_turn_id: Schema.NullOr(Schema.String),
      messages: Schema.Number,
      truncated: Schema.Boolean
    }),
    error: ControlFailure
  }),
  Rpc.make("Archive", {
    payload: { thread: Id, confirm_no_other_runner: Schema.optional(Schema.Boolean) },
    success: Schema.Struct({ thread_id: Schema.String, detached_sessions: Schema.Array(Schema.String) }),
    error: ControlFailure
  })
) {}
