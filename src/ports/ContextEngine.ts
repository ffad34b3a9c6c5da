// Port (optional): the context engine decides what a fresh Codex thread of a session knows before its first turn (S38).
// When a session starts a fresh thread while its transcript mirror holds history (the bound thread is gone, or the
// person asked for a fresh thread that carries the conversation), the harness asks the engine whether to project the
// prior conversation into it, and which of the mirror's records to project. The projection itself is the harness's:
// user and assistant text, tool-call names and ids, input shapes (keys and types, never argument values) and the
// recorded (redacted) tool-result content, bounded in count and bytes, injected with `thread/inject_items` before the
// turn starts. An engine can only choose records and tighten the bounds, so no engine can put a raw argument value into
// a fresh thread. The default projects the whole mirror.
import { Context, Effect } from "effect"
import type { SessionRecord } from "../../schemas/session.js"

/** Why a fresh thread is starting: the bound thread is gone, or `/new --carry` dropped the binding on purpose. */
export type BootstrapReason = "threadGone" | "carry"

export interface BootstrapRequest {
  readonly sessionId: string
  readonly reason: BootstrapReason
  /** the fresh thread (not yet bound, no turn started) */
  readonly threadId: string
  /** the thread it takes over from */
  readonly previousThreadId: string | undefined
  /** the session's mirror records, oldest first, as they were before this turn's prompt was recorded */
  readonly records: ReadonlyArray<SessionRecord>
}

/** How much a projection may carry; the harness's defaults are upper limits an engine can only lower. */
export interface ProjectionBounds {
  /** projected entries: a message, or a tool call with its result */
  readonly maxEntries: number
  /** UTF-8 bytes of all projected text (the newest entries are kept) */
  readonly maxTotalBytes: number
  /** a longer text is cut, with a marker saying how much was left out */
  readonly maxEntryBytes: number
}

export type BootstrapDecision =
  /** the fresh thread starts empty */
  | { readonly _tag: "Skip" }
  /** project these records (default: all of the request's), within these bounds (default: the harness's) */
  | {
    readonly _tag: "Project"
    readonly records?: ReadonlyArray<SessionRecord> | undefined
    readonly bounds?: Partial<ProjectionBounds> | undefined
  }

export interface ContextEngineService {
  readonly bootstrap: (request: BootstrapRequest) => Effect.Effect<BootstrapDecision>
}

/** The default: project the whole mirror, within the harness's bounds. */
export const projectAll: ContextEngineService = { bootstrap: () => Effect.succeed({ _tag: "Project" }) }

/** Never project: every fresh thread starts empty. */
export const skipAll: ContextEngineService = { bootstrap: () => Effect.succeed({ _tag: "Skip" }) }

/**
 * Optional port: whether a fresh thread that replaces a gone one (or one asked for with `newThread(id, { carry: true })`)
 * gets the conversation so far, and which of it. The default projects all of it within the harness's bounds.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ContextEngine } from "codex-harness"
 *
 * // carry only the last 20 records into a fresh thread
 * const Recent = Layer.succeed(ContextEngine.ContextEngine, {
 *   bootstrap: ({ records }) => Effect.succeed({ _tag: "Project", records: records.slice(-20) })
 * })
 * ```
 */
export class ContextEngine extends Context.Reference<ContextEngine>()("codex-harness/ContextEngine", {
  defaultValue: (): ContextEngineService => projectAll
}) {}
