// The transcript mirror (S39, S40): the harness's own records of a session, written through the SessionStore. Codex
// keeps the canonical thread; this mirrors what the harness saw and did: prompts, bindings with their runtime, final
// texts (delivered or private), reasoning, plans, media, compaction start and terminal status, heartbeats, notices and
// turn outcomes, the dynamic tool calls the harness ran and a description of the native ones Codex ran (S38: shapes and
// results, never arguments). It never invents a summary and never touches Codex-native records: a redaction rewrites
// the harness's own session file only (S40), never Codex's rollout.
import { Context, Effect, Layer } from "effect"
import type { ThreadItem, TurnStatus } from "../../schemas/protocol.js"
import type { SessionRecord, SessionRuntime, UserRecord } from "../../schemas/session.js"

/** user, heartbeat or an internal turn kind (S8) */
export type PromptKind = NonNullable<typeof UserRecord.Type["kind"]>
import {
  corruptWarning,
  type InvalidSessionId,
  type RecordChange,
  type SessionContents,
  type SessionRewriteError,
  SessionStore,
  type SessionStoreError
} from "./SessionStore.js"
import { growingStates, type SessionState } from "./SessionState.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export type MirrorError = SessionStoreError | InvalidSessionId

/** Where in Codex a record belongs. */
export interface TurnRef {
  readonly threadId: string
  readonly turnId: string
}

/** What a turn produced, as far as the transcript cares. */
export interface TurnRecordOutcome extends TurnRef {
  readonly status: TurnStatus
  readonly finalText: string | undefined
  readonly items: ReadonlyArray<ThreadItem>
  readonly error: string | undefined
}

export interface BindingFacts {
  readonly threadId: string
  readonly model: string
  readonly modelProvider: string
  readonly runtime: SessionRuntime
}

export type CompactionStatus = "started" | "completed" | "failed" | "interrupted"

/**
 * A tool call as it is recorded (after the ToolResultPersistence hook, bounded): a dynamic one the harness ran, or
 * (`native`) a Codex-native one it saw complete.
 */
export interface ToolCallFacts extends TurnRef {
  readonly callId: string
  readonly name: string
  /** the input's shape (keys and types), never its values (S38) */
  readonly inputShape?: string | undefined
  /** the item kind of a Codex-native call (commandExecution, fileChange, mcpToolCall); absent: a dynamic tool call */
  readonly native?: string | undefined
  readonly success: boolean
  readonly text: string
  readonly truncated: boolean
}

/** Which records a redaction replaces: a tool call's result by its call id, or everything a turn said. */
export type RedactTarget = { readonly callId: string } | { readonly turnId: string }

/** What replaces redacted text. */
export const redactedText = "[redacted]"

/** The kinds a turn redaction covers: its tool results, replies, messages, reasoning and plans (not the prompt). */
const turnTextTags: ReadonlySet<SessionRecord["_tag"]> = new Set(["tool", "assistant", "message", "reasoning", "plan"])

/** The change that redacts `target`. Pure. Already redacted records are left alone, so a redaction can be repeated. */
export const redaction = (target: RedactTarget): RecordChange => (record) => {
  const matches = "callId" in target
    ? record._tag === "tool" && record.callId === target.callId
    : turnTextTags.has(record._tag) && "turnId" in record && record.turnId === target.turnId
  if (!matches || !("text" in record)) return undefined
  if (record._tag === "tool") return record.redacted === true ? undefined : { ...record, text: redactedText, redacted: true, truncated: undefined }
  return record.text === redactedText ? undefined : { ...record, text: redactedText }
}

export interface TranscriptMirrorService {
  /** the session's records and the state they imply; corrupt lines are logged (with their line numbers) and skipped */
  readonly read: (sessionId: string) => Effect.Effect<{ readonly contents: SessionContents; readonly state: SessionState }, MirrorError>
  /** the user's message, written before anything is sent so a failed turn never loses it */
  readonly prompt: (sessionId: string, text: string, kind?: PromptKind) => Effect.Effect<void, MirrorError>
  readonly modelChoice: (sessionId: string, model: string) => Effect.Effect<void, MirrorError>
  readonly binding: (sessionId: string, facts: BindingFacts) => Effect.Effect<void, MirrorError>
  /** drops the binding to `threadId`; `carry`: the next fresh thread gets the conversation projected into it (S38) */
  readonly detached: (
    sessionId: string,
    threadId: string,
    reason: string,
    options?: { readonly carry?: boolean }
  ) => Effect.Effect<void, MirrorError>
  readonly notice: (sessionId: string, text: string) => Effect.Effect<void, MirrorError>
  /** a final text: `delivered` false when it stayed private (message_tool mode) */
  readonly reply: (sessionId: string, ref: TurnRef, text: string, delivered: boolean) => Effect.Effect<void, MirrorError>
  readonly message: (sessionId: string, ref: TurnRef, text: string) => Effect.Effect<void, MirrorError>
  readonly heartbeat: (
    sessionId: string,
    ref: TurnRef,
    outcome: "quiet" | "notify",
    message: string | undefined
  ) => Effect.Effect<void, MirrorError>
  readonly compaction: (sessionId: string, ref: TurnRef, status: CompactionStatus) => Effect.Effect<void, MirrorError>
  /**
   * A finished turn: its final text, what its items say (reasoning, plans, compaction, media) and the turn record.
   * `openCompaction` is the terminal status of a compaction that started in the turn and never completed.
   */
  readonly turnEnded: (
    sessionId: string,
    outcome: TurnRecordOutcome,
    options: { readonly delivered: boolean; readonly openCompaction?: CompactionStatus | undefined }
  ) => Effect.Effect<void, MirrorError>
  /** a turn that ended by interruption or failure before it produced an outcome */
  readonly turnAborted: (
    sessionId: string,
    ref: TurnRef,
    status: "interrupted" | "failed",
    error: string | undefined
  ) => Effect.Effect<void, MirrorError>
  /** the prompts since the last outcome end without a turn: it failed or was interrupted before it started */
  readonly settled: (sessionId: string, status: "failed" | "interrupted", reason: string) => Effect.Effect<void, MirrorError>
  /** a dynamic tool call the harness ran, or a Codex-native one it saw complete (S38, S40) */
  readonly tool: (sessionId: string, facts: ToolCallFacts) => Effect.Effect<void, MirrorError>
  /** rewrites harness-owned content records after the fact (SessionStore.rewrite); how many changed */
  readonly rewrite: (sessionId: string, change: RecordChange) => Effect.Effect<number, SessionRewriteError>
  /** replaces the text of the records `target` names with "[redacted]"; how many changed (0: none matched) */
  readonly redact: (sessionId: string, target: RedactTarget) => Effect.Effect<number, SessionRewriteError>
  /** any other record (a branch's probe state, say) */
  readonly append: (sessionId: string, record: SessionRecord) => Effect.Effect<void, MirrorError>
}

export class TranscriptMirror extends Context.Tag("codex-harness/TranscriptMirror")<TranscriptMirror, TranscriptMirrorService>() {}

const now = () => new Date().toISOString()

/** Transcript records for what a turn emitted besides the final text: reasoning, plans, compaction, media (S39, S41). Pure. */
export const itemRecords = (ref: TurnRef, items: ReadonlyArray<ThreadItem>, at: string): ReadonlyArray<SessionRecord> => {
  const where = { at, threadId: ref.threadId, turnId: ref.turnId }
  const records: Array<SessionRecord> = []
  for (const item of items) {
    switch (item.type) {
      case "reasoning": {
        const text = (item.summary ?? []).join("\n")
        if (text !== "") records.push({ _tag: "reasoning", ...where, text })
        break
      }
      case "plan": {
        records.push({ _tag: "plan", ...where, text: item.text })
        break
      }
      case "contextCompaction":
        records.push({ _tag: "compaction", ...where, status: "completed" })
        break
      case "imageGeneration": {
        const saved = item.savedPath
        if (typeof saved === "string") records.push({ _tag: "media", ...where, path: saved })
        break
      }
    }
  }
  return records
}

/** The files of native image-generation items with a savedPath, forwarded as reply media (S41). Pure. */
export const mediaOf = (items: ReadonlyArray<ThreadItem>): ReadonlyArray<string> =>
  items.flatMap((item) => {
    const saved = item.type === "imageGeneration" ? item.savedPath : undefined
    return typeof saved === "string" ? [saved] : []
  })

export const make = Effect.gen(function* () {
  const store = yield* SessionStore
  const append = (sessionId: string, record: SessionRecord) => store.append(sessionId, record)

  // a session is read before every turn; its corrupt lines are said once per process, not once per turn
  const warned = new Set<string>()
  const states = growingStates()

  const service: TranscriptMirrorService = {
    read: (sessionId) =>
      Effect.gen(function* () {
        // what a turn needs: the store's working set when it keeps one (the PostgreSQL store), else every record
        const contents = yield* (store.readRecent ?? store.read)(sessionId)
        if (contents.corrupt.length > 0 && !warned.has(sessionId)) {
          warned.add(sessionId)
          yield* HarnessLog.warning(corruptWarning(store.locate(sessionId), sessionId, contents.corrupt))
        }
        return { contents, state: states(sessionId, contents.records) }
      }),
    prompt: (sessionId, text, kind = "user") =>
      append(sessionId, { _tag: "user", at: now(), text, ...(kind !== "user" ? { kind } : {}) }),
    modelChoice: (sessionId, model) => append(sessionId, { _tag: "model", at: now(), model }),
    binding: (sessionId, facts) =>
      append(sessionId, {
        _tag: "binding",
        at: now(),
        threadId: facts.threadId,
        model: facts.model,
        modelProvider: facts.modelProvider,
        ...(facts.runtime.locked ? { locked: true } : {}),
        runtime: facts.runtime
      }),
    detached: (sessionId, threadId, reason, options) =>
      append(sessionId, { _tag: "detached", at: now(), threadId, reason, ...(options?.carry === true ? { carry: true } : {}) }),
    notice: (sessionId, text) => append(sessionId, { _tag: "notice", at: now(), text }),
    reply: (sessionId, ref, text, delivered) =>
      append(sessionId, { _tag: "assistant", at: now(), threadId: ref.threadId, turnId: ref.turnId, text, delivered }),
    message: (sessionId, ref, text) => append(sessionId, { _tag: "message", at: now(), threadId: ref.threadId, turnId: ref.turnId, text }),
    heartbeat: (sessionId, ref, outcome, message) =>
      append(sessionId, {
        _tag: "heartbeat",
        at: now(),
        threadId: ref.threadId,
        turnId: ref.turnId,
        outcome,
        ...(message !== undefined ? { message } : {})
      }),
    compaction: (sessionId, ref, status) =>
      append(sessionId, { _tag: "compaction", at: now(), threadId: ref.threadId, turnId: ref.turnId, status }),
    turnEnded: (sessionId, outcome, options) =>
      Effect.gen(function* () {
        const at = now()
        const ref = { threadId: outcome.threadId, turnId: outcome.turnId }
        if (outcome.finalText !== undefined) {
          yield* append(sessionId, { _tag: "assistant", at, ...ref, text: outcome.finalText, delivered: options.delivered })
        }
        for (const record of itemRecords(ref, outcome.items, at)) yield* append(sessionId, record)
        if (options.openCompaction !== undefined) {
          yield* append(sessionId, { _tag: "compaction", at, ...ref, status: options.openCompaction })
        }
        yield* append(sessionId, {
          _tag: "turn",
          at,
          ...ref,
          status: outcome.status,
          ...(outcome.error !== undefined ? { error: outcome.error } : {})
        })
      }),
    turnAborted: (sessionId, ref, status, error) =>
      append(sessionId, {
        _tag: "turn",
        at: now(),
        threadId: ref.threadId,
        turnId: ref.turnId,
        status,
        ...(error !== undefined ? { error } : {})
      }),
    settled: (sessionId, status, reason) => append(sessionId, { _tag: "settled", at: now(), status, reason }),
    tool: (sessionId, facts) =>
      append(sessionId, {
        _tag: "tool",
        at: now(),
        threadId: facts.threadId,
        turnId: facts.turnId,
        callId: facts.callId,
        name: facts.name,
        ...(facts.inputShape !== undefined ? { inputShape: facts.inputShape } : {}),
        ...(facts.native !== undefined ? { native: facts.native } : {}),
        success: facts.success,
        text: facts.text,
        ...(facts.truncated ? { truncated: true } : {})
      }),
    rewrite: (sessionId, change) => store.rewrite(sessionId, change),
    redact: (sessionId, target) => store.rewrite(sessionId, redaction(target)),
    append
  }
  return service
})

export const layer: Layer.Layer<TranscriptMirror, never, SessionStore> = Layer.effect(TranscriptMirror, make)
