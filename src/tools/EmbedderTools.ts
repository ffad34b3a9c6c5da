// The embedder's dynamic tools as a turn extension (S11, S21): advertised on every thread of a session and run inside
// the harness when Codex asks. Codex Code Mode serializes nested dynamic calls, so the harness does too: calls of one
// session run one at a time (a one-permit semaphore per session, kept in a bounded map), and results are text. Each
// result is recorded in the harness's transcript as a `tool` record, as the ToolResultPersistence hook lets it (S40),
// before Codex gets it back.
import { Effect } from "effect"
import type { TurnExtension } from "../turn/TurnExtension.js"
import { DynamicTools, type ToolCallContext } from "../ports/DynamicTools.js"
import { ToolResultPersistence } from "../ports/ToolResultPersistence.js"
import { TranscriptMirror } from "../session/TranscriptMirror.js"
import { inputShape } from "../turn/BootstrapProjection.js"
import { truncateUtf8 } from "../turn/Instructions.js"
import type { HarnessTool, ToolResult } from "./ToolCatalog.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export const defaults = {
  /** sessions whose semaphore is kept; idle ones beyond this are forgotten, least recently used first */
  maxSessions: 1_024,
  /** the most of a result's text a `tool` record keeps (UTF-8 bytes); the rest is cut with a marker */
  maxRecordedResultBytes: 64 * 1024
} as const

/** What a `tool` record says when the persistence hook died: never the raw result it was meant to transform. */
export const hookFailedText = "[not recorded: the tool-result persistence hook failed]"

/**
 * Records one finished call (with its input, of which only the shape is kept); a record that cannot be written is a
 * warning, never a changed or dropped result.
 */
export type RecordToolResult = (name: string, call: ToolCallContext, result: ToolResult, input?: unknown) => Effect.Effect<void>

export interface EmbedderToolsOptions {
  readonly maxSessions?: number | undefined
  /** how a finished call is recorded; without it, calls are not recorded */
  readonly record?: RecordToolResult | undefined
}

interface Lane {
  readonly semaphore: Effect.Semaphore
  /** calls holding or waiting for the permit; a lane in use is never evicted */
  users: number
}

/** One permit per session: `run` makes the effect wait for the session's earlier calls to finish. */
export const sessionLanes = (options: EmbedderToolsOptions = {}) => {
  const max = Math.max(1, options.maxSessions ?? defaults.maxSessions)
  // insertion order is recency order: a lane is moved to the end whenever it is used
  const lanes = new Map<string, Lane>()
  // the semaphore is made first (it may go unused); the lookup and insertion then happen in one synchronous step
  const acquire = (sessionId: string) =>
    Effect.flatMap(Effect.makeSemaphore(1), (semaphore) => Effect.sync(() => lane(sessionId, semaphore)))
  const lane = (sessionId: string, semaphore: Effect.Semaphore): Lane => {
    let lane = lanes.get(sessionId)
    if (lane !== undefined) lanes.delete(sessionId)
    else lane = { semaphore, users: 0 }
    lanes.set(sessionId, lane)
    lane.users++
    if (lanes.size > max) {
      for (const [id, candidate] of lanes) {
        if (lanes.size <= max) break
        if (candidate.users === 0) lanes.delete(id)
      }
    }
    return lane
  }
  return {
    run: <A, E, R>(sessionId: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.acquireUseRelease(
        acquire(sessionId),
        (lane) => lane.semaphore.withPermits(1)(effect),
        (lane) => Effect.sync(() => void lane.users--)
      ),
    /** sessions with a lane (for tests and diagnostics) */
    size: () => lanes.size
  }
}

/** The extension serving these tools, each call serialized per session. */
export const makeExtension = (tools: ReadonlyArray<HarnessTool>, options: EmbedderToolsOptions = {}): TurnExtension => {
  const lanes = sessionLanes(options)
  const record = options.record
  const serialized: ReadonlyArray<HarnessTool> = tools.map((t) => ({
    ...t,
    handler: (args, call) =>
      lanes.run(
        call.sessionId,
        record === undefined ? t.handler(args, call) : Effect.tap(t.handler(args, call), (result) => record(t.name, call, result, args))
      )
  }))
  return { name: "dynamic-tools", tools: () => serialized }
}

/** Records results through the transcript mirror, as the ToolResultPersistence port (default: unchanged) lets them. */
export const mirrorRecorder = Effect.gen(function* () {
  const mirror = yield* TranscriptMirror
  const persistence = yield* ToolResultPersistence
  const max = defaults.maxRecordedResultBytes
  const record: RecordToolResult = (name, call, result, input) =>
    persistence.persist({ name, call, result }).pipe(
      Effect.catchAllDefect(() => Effect.succeed(hookFailedText)),
      Effect.flatMap((text) => {
        const kept = truncateUtf8(text, max)
        // the input's keys and types only: no argument value is ever recorded (S38)
        const shape = input === undefined ? undefined : inputShape(input)
        return mirror.tool(call.sessionId, { ...call, name, inputShape: shape, success: result.success, text: kept, truncated: kept !== text })
      }),
      Effect.catchAll((error) => HarnessLog.warning(`dynamic tool ${name} (call ${call.callId}): result not recorded: ${error.message}`))
    )
  return record
})

/**
 * The extension over the embedder's DynamicTools port, each call recorded in the session's transcript when a
 * TranscriptMirror is there (the production composition always has one; a bare extension in a test may not).
 */
export const fromPort = (options: EmbedderToolsOptions = {}): Effect.Effect<TurnExtension> =>
  Effect.gen(function* () {
    const tools = yield* Effect.flatMap(DynamicTools, (port) => port.tools)
    const mirror = yield* Effect.serviceOption(TranscriptMirror)
    const record = mirror._tag === "Some" ? yield* Effect.provideService(mirrorRecorder, TranscriptMirror, mirror.value) : undefined
    return makeExtension(tools, { record, ...options })
  })

/** The extension over the embedder's DynamicTools port (optional: without it, no tools). */
export const fromOptionalPort = (options: EmbedderToolsOptions = {}): Effect.Effect<TurnExtension> => fromPort(options)
