// Records of a session file (JSONL, one record per line). The harness only ever appends its own records.
import { Schema } from "effect"

const at = Schema.String // ISO-8601 time the record was written

export const UserRecord = Schema.TaggedStruct("user", { at, text: Schema.String })
export const AssistantRecord = Schema.TaggedStruct("assistant", {
  at,
  text: Schema.String,
  threadId: Schema.String,
  turnId: Schema.String
})
/** The session's current Codex thread; the last binding record wins. */
export const BindingRecord = Schema.TaggedStruct("binding", {
  at,
  threadId: Schema.String,
  model: Schema.optional(Schema.String),
  modelProvider: Schema.optional(Schema.String)
})
export const TurnRecord = Schema.TaggedStruct("turn", {
  at,
  threadId: Schema.String,
  turnId: Schema.String,
  status: Schema.String,
  error: Schema.optional(Schema.String)
})

export const SessionRecord = Schema.Union(UserRecord, AssistantRecord, BindingRecord, TurnRecord)
export type SessionRecord = typeof SessionRecord.Type
