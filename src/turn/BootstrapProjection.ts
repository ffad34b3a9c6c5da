// Thread-bootstrap projection (S38): a session's prior conversation, from its transcript mirror, as Responses API items
// for `thread/inject_items` into a fresh Codex thread. It carries user and assistant text, each tool call's name and
// id, its input shape (keys and types, recorded when the call ran: the mirror never keeps argument values) and its
// result as the mirror recorded it (after the ToolResultPersistence hook; "[redacted]" once redacted). Tool calls are
// the dynamic ones the harness ran and the Codex-native ones it described (shell, apply_patch, MCP: NativeToolCalls),
// projected alike as a `function_call` and its `function_call_output`. Reasoning, plans,
// notices and heartbeat polls are not projected. Bounded in count and bytes like a supervised branch's history (the
// newest entries are kept). The pure part is here; `inject` asks the ContextEngine port and sends the items.
import { Effect, Schema } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { BootstrapReason, ContextEngineService, ProjectionBounds } from "../ports/ContextEngine.js"
import type { MirrorError, TranscriptMirrorService } from "../session/TranscriptMirror.js"
import { truncateUtf8, utf8Length } from "./Instructions.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** The upper limits of a carried conversation: a branch's history and a bootstrap projection share them. */
export const conversationBounds: ProjectionBounds = {
  maxEntries: 200,
  maxTotalBytes: 512 * 1024,
  maxEntryBytes: 64 * 1024
}

export interface Fitted<T> {
  readonly entry: T
  readonly bytes: number
  /** some of its text was cut */
  readonly cut: boolean
}

export interface Kept<T> {
  /** oldest first */
  readonly kept: ReadonlyArray<T>
  readonly bytes: number
  /** older entries were left out, or an entry was cut */
  readonly truncated: boolean
}

/** The newest entries that fit the bounds, each cut to `maxEntryBytes` by `fit`. Pure. */
export const keepNewest = <T>(
  newestFirst: Iterable<T>,
  bounds: ProjectionBounds,
  fit: (entry: T, maxEntryBytes: number) => Fitted<T>
): Kept<T> => {
  const kept: Array<T> = []
  let bytes = 0
  let truncated = false
  for (const entry of newestFirst) {
    const fitted = fit(entry, bounds.maxEntryBytes)
    if (kept.length >= bounds.maxEntries || bytes + fitted.bytes > bounds.maxTotalBytes) {
      truncated = true
      break
    }
    if (fitted.cut) truncated = true
    kept.push(fitted.entry)
    bytes += fitted.bytes
  }
  return { kept: kept.reverse(), bytes, truncated }
}

/** `text` cut to `maxBytes` (with a marker), its size and whether it was cut. */
export const fitText = (text: string, maxBytes: number) => {
  const fitted = truncateUtf8(text, maxBytes)
  return { text: fitted, bytes: utf8Length(fitted), cut: fitted !== text }
}

/** A visible message as a raw Responses API item. */
export const messageItem = (role: "user" | "assistant", text: string) =>
  role === "user"
    ? { type: "message", role: "user", content: [{ type: "input_text", text }] }
    : { type: "message", role: "assistant", content: [{ type: "output_text", text }] }

// ---- input shapes ----

const shapeLimits = { maxDepth: 4, maxKeys: 32, maxKeyBytes: 64, maxElementShapes: 4 } as const

/**
 * The shape of a tool call's input: its keys, and the type of every value in place of the value ("<string>",
 * "<number>", "<boolean>", "<null>"; arrays hold the distinct shapes of their elements). Bounded in depth and keys. No
 * value of the input is ever part of it. Pure.
 */
export const shapeOf = (value: unknown, depth = 0): unknown => {
  if (value === null) return "<null>"
  if (Array.isArray(value)) {
    if (depth >= shapeLimits.maxDepth) return "<array>"
    const seen = new Map<string, unknown>()
    for (const element of value) {
      const shape = shapeOf(element, depth + 1)
      seen.set(JSON.stringify(shape), shape)
      if (seen.size >= shapeLimits.maxElementShapes) break
    }
    return [...seen.values()]
  }
  switch (typeof value) {
    case "string":
      return "<string>"
    case "number":
    case "bigint":
      return "<number>"
    case "boolean":
      return "<boolean>"
    case "object": {
      if (depth >= shapeLimits.maxDepth) return "<object>"
      const keys = Object.keys(value as object)
      const shape: Record<string, unknown> = {}
      for (const key of keys.slice(0, shapeLimits.maxKeys)) {
        const name = truncateUtf8(key, shapeLimits.maxKeyBytes)
        Object.defineProperty(shape, name, {
          value: shapeOf((value as Record<string, unknown>)[key], depth + 1),
          enumerable: true,
          writable: true,
          configurable: true
        })
      }
      if (keys.length > shapeLimits.maxKeys) shape["…"] = `<${keys.length - shapeLimits.maxKeys} more keys>`
      return shape
    }
    default:
      return `<${typeof value}>`
  }
}

/** The recorded form of an input's shape: JSON text. */
export const inputShape = (input: unknown): string => JSON.stringify(shapeOf(input))

/** What a projected call says when its input shape was never recorded (records older than shapes). */
export const unknownInput = JSON.stringify("<input not recorded>")

// ---- projection ----

export type Entry =
  | { readonly kind: "message"; readonly role: "user" | "assistant"; readonly text: string }
  | { readonly kind: "tool"; readonly callId: string; readonly name: string; readonly input: string; readonly output: string }

/** The projectable entries of mirror records, oldest first. Pure. */
export const entriesOf = (records: ReadonlyArray<SessionRecord>): ReadonlyArray<Entry> =>
  records.flatMap((record): ReadonlyArray<Entry> => {
    switch (record._tag) {
      case "user":
        return record.kind === "heartbeat" || record.text === "" ? [] : [{ kind: "message", role: "user", text: record.text }]
      case "assistant":
      case "message":
        return record.text === "" ? [] : [{ kind: "message", role: "assistant", text: record.text }]
      case "tool":
        return [{
          kind: "tool",
          callId: record.callId,
          name: record.name,
          input: record.inputShape ?? unknownInput,
          output: record.success ? record.text : `[the call failed] ${record.text}`
        }]
      default:
        return []
    }
  })

const fitEntry = (entry: Entry, maxEntryBytes: number): Fitted<Entry> => {
  if (entry.kind === "message") {
    const text = fitText(entry.text, maxEntryBytes)
    return { entry: { ...entry, text: text.text }, bytes: text.bytes, cut: text.cut }
  }
  // a shape too large to carry whole is dropped rather than cut into invalid JSON
  const input = utf8Length(entry.input) > maxEntryBytes ? unknownInput : entry.input
  const output = fitText(entry.output, maxEntryBytes)
  const bytes = utf8Length(entry.name) + utf8Length(entry.callId) + utf8Length(input) + output.bytes
  return { entry: { ...entry, input, output: output.text }, bytes, cut: output.cut || input !== entry.input }
}

export interface Projection {
  /** raw Responses API items, oldest first */
  readonly items: ReadonlyArray<unknown>
  readonly entries: number
  readonly bytes: number
  readonly truncated: boolean
}

/** The bounded projection of mirror records (bounds: the defaults, only ever lowered). Pure. */
export const project = (records: ReadonlyArray<SessionRecord>, bounds: Partial<ProjectionBounds> = {}): Projection => {
  const limits: ProjectionBounds = {
    maxEntries: Math.max(0, Math.min(bounds.maxEntries ?? Infinity, conversationBounds.maxEntries)),
    maxTotalBytes: Math.max(0, Math.min(bounds.maxTotalBytes ?? Infinity, conversationBounds.maxTotalBytes)),
    maxEntryBytes: Math.max(0, Math.min(bounds.maxEntryBytes ?? Infinity, conversationBounds.maxEntryBytes))
  }
  const { bytes, kept, truncated } = keepNewest([...entriesOf(records)].reverse(), limits, fitEntry)
  const items = kept.flatMap((entry): ReadonlyArray<unknown> =>
    entry.kind === "message"
      ? [messageItem(entry.role, entry.text)]
      : [
        { type: "function_call", call_id: entry.callId, name: entry.name, arguments: entry.input },
        { type: "function_call_output", call_id: entry.callId, output: entry.output }
      ]
  )
  return { items, entries: kept.length, bytes, truncated }
}

// ---- injection ----

/** The projection could not be put into the fresh thread: the turn does not start on a thread missing its history. */
export class BootstrapFailed extends Schema.TaggedError<BootstrapFailed>()("BootstrapFailed", {
  sessionId: Schema.String,
  threadId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the conversation of session ${this.sessionId} could not be carried into its fresh thread ${this.threadId}: ${this.reason}`
  }
}

export interface InjectRequest {
  readonly sessionId: string
  readonly reason: BootstrapReason
  readonly threadId: string
  readonly previousThreadId: string | undefined
  /** the mirror's records before this turn's prompt */
  readonly records: ReadonlyArray<SessionRecord>
}

/**
 * Asks the context engine (the ContextEngine port, read when the harness is built) whether to project and what, and injects the projection into the fresh thread before
 * its first turn; the mirror records a notice of what was carried, or of the failure. A failed injection is a
 * BootstrapFailed (the fresh thread is deleted, best effort, so it is never bound half-made).
 */
export const inject = (
  connection: AppServerConnection,
  engine: ContextEngineService,
  mirror: Pick<TranscriptMirrorService, "notice">,
  request: InjectRequest
): Effect.Effect<Projection | undefined, BootstrapFailed | MirrorError> =>
  Effect.gen(function* () {
    const { sessionId, threadId } = request
    if (entriesOf(request.records).length === 0) return undefined
    const decision = yield* engine.bootstrap(request).pipe(
      Effect.catchAllDefect((defect) =>
        Effect.fail(new BootstrapFailed({ sessionId, threadId, reason: `the context engine failed: ${String(defect)}` }))
      )
    )
    if (decision._tag === "Skip") return undefined
    const projection = project(decision.records ?? request.records, decision.bounds)
    if (projection.items.length === 0) return undefined
    yield* connection.request("thread/inject_items", { threadId, items: projection.items }).pipe(
      Effect.catchAll((error) =>
        mirror.notice(sessionId, `The conversation could not be carried into thread ${threadId}: ${error.message}`).pipe(
          Effect.ignore,
          Effect.zipRight(
            connection.request("thread/delete", { threadId }, { timeout: "10 seconds" }).pipe(
              Effect.catchAll((e) => HarnessLog.warning(`fresh thread ${threadId} could not be deleted: ${e.message}`))
            )
          ),
          Effect.zipRight(Effect.fail(new BootstrapFailed({ sessionId, threadId, reason: error.message })))
        )
      )
    )
    yield* mirror.notice(
      sessionId,
      `Carried ${projection.entries} entries of this session's conversation into thread ${threadId}` +
        `${projection.truncated ? " (bounded)" : ""}.`
    )
    return projection
  }).pipe(Effect.withSpan("BootstrapProjection.inject", { attributes: { sessionId: request.sessionId, reason: request.reason } }))
