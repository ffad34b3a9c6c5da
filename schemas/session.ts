// Records of a session file (JSONL, one record per line). The file is append-only and holds only harness-owned records:
// Codex keeps the canonical native thread; this is the mirror (S39, S40).
import { Schema } from "effect"

const at = Schema.String // ISO-8601 time the record was written
const turnRef = { threadId: Schema.String, turnId: Schema.String }

export const UserRecord = Schema.TaggedStruct("user", {
  at,
  text: Schema.String,
  kind: Schema.optional(Schema.Literal("user", "heartbeat"))
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
 * The session's Codex thread; the last binding record wins. A locked (supervised) binding resumes without model or
 * provider overrides and keeps the pair Codex reports (S13).
 */
export const BindingRecord = Schema.TaggedStruct("binding", {
  at,
  threadId: Schema.String,
  model: Schema.optional(Schema.String),
  modelProvider: Schema.optional(Schema.String),
  locked: Schema.optional(Schema.Boolean),
  /** a supervised branch (S15): the pool key of its private connection; every later turn stays on it */
  connection: Schema.optional(Schema.String),
  /** and the CODEX_HOME that connection runs with; a different one later is drift and fails closed */
  codexHome: Schema.optional(Schema.String)
})
/**
 * The temporary native fork a supervised branch pinned its snapshot with (S15, S4). "open" until its finalizer ran;
 * "cleanupFailed" is recovery state: the probe may still be loaded and the connection it lived on was retired.
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
 * remote connection could not confirm that its turn stopped, so later work cannot overlap it (S37). A binding to any
 * other thread is untouched.
 */
export const DetachedRecord = Schema.TaggedStruct("detached", { at, threadId: Schema.String, reason: Schema.String })
/** The user's explicit model choice for this session; later turns keep it until the user changes it (S12). */
export const ModelChoiceRecord = Schema.TaggedStruct("model", { at, model: Schema.String })
export const NoticeRecord = Schema.TaggedStruct("notice", { at, text: Schema.String })
export const TurnRecord = Schema.TaggedStruct("turn", {
  at,
  ...turnRef,
  status: Schema.String,
  error: Schema.optional(Schema.String)
})

export const SessionRecord = Schema.Union(
  UserRecord,
  AssistantRecord,
  MessageRecord,
  ReasoningRecord,
  PlanRecord,
  MediaRecord,
  CompactionRecord,
  HeartbeatRecord,
  BindingRecord,
  DetachedRecord,
  ModelChoiceRecord,
  NoticeRecord,
  TurnRecord,
  ProbeRecord
)
export type SessionRecord = typeof SessionRecord.Type
export type SessionRecordTag = SessionRecord["_tag"]
