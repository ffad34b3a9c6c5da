// The embedder's dynamic tools as a turn extension (S11, S21): advertised on every thread of a session and run inside
// the harness when Codex asks. Codex Code Mode serializes nested dynamic calls, so the harness does too: calls of one
// session run one at a time (a one-permit semaphore per session, kept in a bounded map), and results are text.
import { Effect } from "effect"
import type { TurnExtension } from "../turn/TurnExtension.js"
import { DynamicTools } from "../ports/DynamicTools.js"
import type { HarnessTool } from "./ToolCatalog.js"

export const defaults = {
  /** sessions whose semaphore is kept; idle ones beyond this are forgotten, least recently used first */
  maxSessions: 1_024
} as const

export interface EmbedderToolsOptions {
  readonly maxSessions?: number | undefined
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
  const serialized: ReadonlyArray<HarnessTool> = tools.map((t) => ({
    ...t,
    handler: (args, call) => lanes.run(call.sessionId, t.handler(args, call))
  }))
  return { name: "dynamic-tools", tools: () => serialized }
}

/** The extension over the embedder's DynamicTools port. */
export const fromPort = (options: EmbedderToolsOptions = {}): Effect.Effect<TurnExtension> =>
  Effect.flatMap(DynamicTools, (port) => port.tools).pipe(Effect.map((tools) => makeExtension(tools, options)))

/** The extension over the embedder's DynamicTools port (optional: without it, no tools). */
export const fromOptionalPort = (options: EmbedderToolsOptions = {}): Effect.Effect<TurnExtension> => fromPort(options)
