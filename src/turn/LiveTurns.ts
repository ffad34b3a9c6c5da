// The registry of sessions' running turns in this process: which connection, thread and turn a session is running
// right now (a user turn, or a manual compaction's turn). Steering, plain-text answers and the archive guard's owner
// check read it; entries live exactly as long as the Scope that registered them.
import { Context, Effect, Layer, type Scope } from "effect"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"

export interface LiveTurn {
  readonly connection: AppServerConnection
  readonly threadId: string
  readonly turnId: string
}

export interface LiveTurnsService {
  /** makes `turn` the session's running turn until the Scope closes (a later registration replaces it) */
  readonly register: (sessionId: string, turn: LiveTurn) => Effect.Effect<void, never, Scope.Scope>
  readonly get: (sessionId: string) => Effect.Effect<LiveTurn | undefined>
  /** every session with a running turn, and that turn */
  readonly all: Effect.Effect<ReadonlyArray<readonly [string, LiveTurn]>>
}

export class LiveTurns extends Context.Tag("codex-harness/LiveTurns")<LiveTurns, LiveTurnsService>() {}

export const make = (): LiveTurnsService => {
  const running = new Map<string, LiveTurn>()
  return {
    register: (sessionId, turn) =>
      Effect.acquireRelease(Effect.sync(() => void running.set(sessionId, turn)), () =>
        Effect.sync(() => {
          // only our own entry: a newer turn of the session may have replaced it
          if (running.get(sessionId) === turn) running.delete(sessionId)
        })).pipe(Effect.asVoid),
    get: (sessionId) => Effect.sync(() => running.get(sessionId)),
    all: Effect.sync(() => [...running.entries()])
  }
}

export const layer: Layer.Layer<LiveTurns> = Layer.sync(LiveTurns, make)
