// The state one mock app-server shares across its spawns: the script as changed at runtime, persisted threads, every
// message received, the spawn count. Plain mutable fields, touched only from Effect code of the mock; it must never be
// handed to a test directly (tests see it through the MockAppServer handle).
import { Effect } from "effect"
import type { ClientMessage } from "./ClientMessages.js"
import * as Replay from "./Replay.js"
import type { Handler, MockPeer, MockScript, TurnMode, TurnStartInput } from "./Script.js"
import type { StoredThread } from "./Shapes.js"
import { makeSignal, type Signal } from "./Signal.js"

export interface ServerState {
  readonly script: MockScript
  readonly handlers: Map<string, Handler>
  replyText: string | ((params: TurnStartInput) => string)
  turnMode: TurnMode
  readonly threads: Map<string, StoredThread>
  nextUuid: number
  spawnCount: number
  readonly spawnFailures: Array<string>
  readonly peers: Array<MockPeer>
  readonly messages: Array<ClientMessage>
  /** in replay mode (`script.replay`): what was recorded and how far each connection got */
  readonly replay: Replay.ReplayState | undefined
  /** fired after any of the above changes that a test may wait for */
  readonly changed: Signal
}

export const makeState = (script: MockScript): Effect.Effect<ServerState> =>
  Effect.map(makeSignal, (changed) => ({
    script,
    handlers: new Map(Object.entries(script.handlers ?? {})),
    replyText: script.replyText ?? "mock reply",
    turnMode: script.turns ?? "complete",
    threads: new Map(),
    nextUuid: 0,
    spawnCount: 0,
    spawnFailures: [],
    peers: [],
    messages: [],
    replay: script.replay === undefined ? undefined : Replay.makeState(script.replay),
    changed
  }))

/** deterministic UUIDv7-looking ids, unique per mock server */
export const uuid = (state: ServerState) => `019a0000-0000-7000-8000-${(++state.nextUuid).toString(16).padStart(12, "0")}`

/** the agent's reply for a turn, as the script says now */
export const replyTextOf = (state: ServerState, params: TurnStartInput) =>
  typeof state.replyText === "function" ? state.replyText(params) : state.replyText
