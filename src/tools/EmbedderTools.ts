// The embedder's dynamic tools as a turn extension (S11, S21): advertised on every thread of a session and run inside
// the harness when Codex asks. Codex Code Mode serializes nested dynamic calls, so the harness does too: calls of one
// session run one at a time (a one-permit semaphore per session, kept in a bounded map), and results are text.
import { Effect } from "effect"
import type { TurnExtension } from "../harness/TurnExtensions.js"
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
  const acquire = (sessionId: string): Lane => {
    let lane = lanes.get(sessionId)
    if (lane !== undefined) lanes.delete(sessionId)
    else lane = { semaphore: Effect.unsafeMakeSemaphore(1), users: 0 }
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
        Effect.sync(() => acquire(sessionId)),
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
export const fromPort = (options: EmbedderToolsOptions = {}): Effect.Effect<TurnExtension, never, DynamicTools> =>
  Effect.flatMap(DynamicTools, (port) => port.tools).pipe(Effect.map((tools) => makeExtension(tools, options)))

/** Like `fromPort`, for compositions where the embedder may provide no DynamicTools: then the extension serves none. */
export const fromOptionalPort = (options: EmbedderToolsOptions = {}): Effect.Effect<TurnExtension> =>
  Effect.serviceOption(DynamicTools).pipe(
    Effect.flatMap((port) => (port._tag === "Some" ? port.value.tools : Effect.succeed([]))),
    Effect.map((tools) => makeExtension(tools, options))
  )
