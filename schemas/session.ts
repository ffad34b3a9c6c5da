// Records of a session file (JSONL, one record per line). The file is append-only and holds only harness-owned records:
// Codex keeps the canonical native thread; this is the mirror (S39, S40). Only a rewrite (a redaction) replaces lines,
// atomically and under the session's lock (SessionStore.rewrite).
import { Schema } from "effect"

const at = Schema.String // ISO-8601 time the record was written
const turnRef = { threadId: Schema.String, turnId: Schema.String }

export const UserRecord = Schema.TaggedStruct("user", {
  at,
  text: Schema.String,
  kind: Schema.optional(Schema.Literal("user", "heartbeat", "lightweight", "ringZero", "messageOnly", "toolDisabled"))
})
/** The final assistant text of a turn; `delivered: false` when it stayed private (message_tool mode). */
export const AssistantRecord = Schema.TaggedStruct("assistant", {
  at,
  ...turnRef,
  text: Schema.String,
  delivered: Schema.optional(Schema.Boolean)
})
/** Text the agent sent with the message tool (delivered). */
export const MessageRecord = Schema.TaggedStruct("message", { at, ...turnRef, text: Schema.String })
export const ReasoningRecord = Schema.TaggedStruct("reasoning", { at, ...turnRef, text: Schema.String })
export const PlanRecord = Schema.TaggedStruct("plan", { at, ...turnRef, text: Schema.String })
export const MediaRecord = Schema.TaggedStruct("media", { at, ...turnRef, path: Schema.String })
/**
 * A tool call (S38, S40): one the harness ran (a dynamic tool), or, with `native`, a Codex-native one the harness saw
 * complete (a shell command, a file change, an MCP call). The result as the ToolResultPersistence hook let it be
 * recorded (bounded; `truncated` when cut) and the input's shape, never the arguments. Codex records the call in its own
 * rollout; this is the harness's copy (for a native call: its description), the one a redaction may rewrite
 * (`redacted`). Files written before `native` existed hold only dynamic calls, and decode as they are.
 */
export const ToolRecord = Schema.TaggedStruct("tool", {
  at,
  ...turnRef,
  callId: Schema.String,
  name: Schema.String,
  /** the input's shape (JSON: its keys, and a type such as "<string>" in place of every value), never the values (S38) */
  inputShape: Schema.optional(Schema.String),
  /** a Codex-native call: its item kind (`commandExecution`, `fileChange`, `mcpToolCall`); absent: a dynamic tool call */
  native: Schema.optional(Schema.String),
  success: Schema.Boolean,
  text: Schema.String,
  truncated: Schema.optional(Schema.Boolean),
  redacted: Schema.optional(Schema.Boolean)
})
/** Native compaction: its start and terminal status only; Codex keeps the summary (S39). */
export const CompactionRecord = Schema.TaggedStruct("compaction", {
  at,
  ...turnRef,
  status: Schema.Literal("started", "completed", "failed", "interrupted")
})
export const HeartbeatRecord = Schema.TaggedStruct("heartbeat", {
  at,
  ...turnRef,
  outcome: Schema.Literal("quiet", "notify"),
  message: Schema.optional(Schema.String)
})
/**
 * Where a session's threads live, recorded with its binding: every later operation on the session (turn, steer,
 * compaction, branch) leases its connection from this, never from the flags of the call. A session never moves to
 * another CODEX_HOME or provider.
 */
export const SessionRuntime = Schema.Struct({
  /**
   * how the app-server is reached: a local child process over stdio, or a WebSocket to one somebody else started
   * (`--app-server`, config `appServer.url`). A websocket runtime is remote: the harness cannot stop that process, so a
   * connection to it that ends or is retired detaches the bindings that had work on it (S37).
   */
  transport: Schema.Literal("stdio", "websocket"),
  /** with websocket: the app-server's URL (never a credential: its token is read from the environment) */
  url: Schema.optional(Schema.String),
  /** the CODEX_HOME that app-server runs with (absolute); with websocket, the one it reported (the remote machine's) */
  codexHome: Schema.String,
  /** the Responses API server the harness pointed Codex at; absent: Codex's own provider configuration */
  providerUrl: Schema.optional(Schema.String),
  /** the client-pool key its connection is leased under (a supervised chat's private connection has its own) */
  poolKey: Schema.String,
  /** model-locked (supervised, S13): no model or provider override, and no other connection, ever */
  locked: Schema.Boolean
})
export type SessionRuntime = typeof SessionRuntime.Type

/**
 * The session's Codex thread; the last binding record wins. A locked (supervised) binding resumes without model or
 * provider overrides and keeps the pair Codex reports (S13).
 */
export const BindingRecord = Schema.TaggedStruct("binding", {
  at,
  threadId: Schema.String,
  model: Schema.optional(Schema.String),
  modelProvider: Schema.optional(Schema.String),
  locked: Schema.optional(Schema.Boolean),
  /** the runtime the thread lives in; absent in files written before it was recorded */
  runtime: Schema.optional(SessionRuntime),
  /** files written before `runtime`: a supervised branch's private pool key and its CODEX_HOME */
  connection: Schema.optional(Schema.String),
  codexHome: Schema.optional(Schema.String)
})
/**
 * Continue as branch, decided (S15): the chat continues native thread `sourceThreadId` as it was through `lastTurnId`,
 * on `runtime` (its private supervision connection, model-locked). Nothing exists in Codex for it yet: its first turn
 * forks that snapshot, starts the canonical thread with the model and provider the fork returned and injects the
 * `messages` user and assistant records that follow this one (the bounded visible history). It stays pending until the
 * canonical thread has a turn record; a first turn that never started leaves it pending for the next one.
 */
export const BranchRecord = Schema.TaggedStruct("branch", {
  at,
  sourceThreadId: Schema.String,
  lastTurnId: Schema.optional(Schema.String),
  messages: Schema.Number,
  /** older messages were left out, or a message was cut */
  truncated: Schema.optional(Schema.Boolean),
  runtime: SessionRuntime
})
/**
 * The temporary native fork a supervised branch's first turn pinned its snapshot with (S15, S4). "open" until it was
 * archived ("closed"); "cleanupFailed" is recovery state: the fork could not be archived and is still in the home.
 */
export const ProbeRecord = Schema.TaggedStruct("probe", {
  at,
  threadId: Schema.String,
  sourceThreadId: Schema.String,
  status: Schema.Literal("open", "closed", "cleanupFailed"),
  reason: Schema.optional(Schema.String)
})
/**
 * The binding to `threadId` is dropped: the next message starts a fresh thread. Written when a manual compaction on a
 * remote connection could not confirm that its turn stopped, so later work cannot overlap it (S37), or when the person
 * asked for a fresh thread in the same session (`/new --carry`, `/new --thread`). A binding to any other thread is
 * untouched. `carry`: the fresh thread gets the session's conversation projected into it before its first turn (S38).
 */
export const DetachedRecord = Schema.TaggedStruct("detached", {
  at,
  threadId: Schema.String,
  reason: Schema.String,
  carry: Schema.optional(Schema.Boolean)
})
/** The user's explicit model choice for this session; later turns keep it until the user changes it (S12). */
export const ModelChoiceRecord = Schema.TaggedStruct("model", { at, model: Schema.String })
export const NoticeRecord = Schema.TaggedStruct("notice", { at, text: Schema.String })
export const TurnRecord = Schema.TaggedStruct("turn", {
  at,
  ...turnRef,
  status: Schema.String,
  error: Schema.optional(Schema.String)
})

/**
 * The prompts since the last turn outcome never got one: their turn failed or was interrupted before it started, or
 * the harness stopped mid-turn (written when the session is next opened). A prompt is always followed by its outcome.
 */
export const SettledRecord = Schema.TaggedStruct("settled", {
  at,
  status: Schema.Literal("failed", "interrupted"),
  reason: Schema.String
})

export const SessionRecord = Schema.Union(
  UserRecord,
  AssistantRecord,
  MessageRecord,
  ReasoningRecord,
  PlanRecord,
  MediaRecord,
  ToolRecord,
  CompactionRecord,
  HeartbeatRecord,
  BindingRecord,
  DetachedRecord,
  ModelChoiceRecord,
  NoticeRecord,
  TurnRecord,
  ProbeRecord,
  BranchRecord,
  SettledRecord
)
export type SessionRecord = typeof SessionRecord.Type
export type SessionRecordTag = SessionRecord["_tag"]
