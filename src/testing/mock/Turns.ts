// The turns in progress on one mock peer and the notifications that start and end them, in the order the real server
// sends them. A turn is recorded before its turn/start is answered; it must never be finished twice (finishing removes
// it first, so a second finish finds nothing and says so).
import { Effect } from "effect"
import type { FinishTurnOptions, TurnStartInput } from "./Script.js"
import { replyTextOf, type ServerState, uuid } from "./ServerState.js"
import { agentMessageItem, nowMillis, nowSeconds, turnObject, userMessageItem } from "./Shapes.js"
import type { Signal } from "./Signal.js"

export interface ActiveTurn {
  readonly turnId: string
  readonly params: TurnStartInput
  readonly startedAt: number
}

export interface PeerTurns {
  readonly active: (threadId: string) => ActiveTurn | undefined
  /** records the thread's new turn (its turn/start is being answered) and wakes whoever awaits it */
  readonly open: (threadId: string, turn: ActiveTurn) => Effect.Effect<void>
  /** what follows the turn/start answer: status, turn/started, the user's item; a "complete" script also finishes it */
  readonly begin: (params: TurnStartInput, turnId: string, startedAt: number) => Effect.Effect<void>
  /** ends the thread's active turn (items, then turn/completed); false when there was none */
  readonly finish: (threadId: string, options?: FinishTurnOptions) => Effect.Effect<boolean>
}

export const makeTurns = (
  state: ServerState,
  notify: (method: string, params?: unknown) => Effect.Effect<void>,
  changed: Signal
): PeerTurns => {
  const activeTurns = new Map<string, ActiveTurn>()

  const finish = (threadId: string, options: FinishTurnOptions = {}) =>
    Effect.gen(function* () {
      const active = activeTurns.get(threadId)
      if (active === undefined) return false
      activeTurns.delete(threadId)
      yield* changed.fire
      const status = options.status ?? "completed"
      const text = options.text ?? (status === "completed" ? replyTextOf(state, active.params) : undefined)
      const turnId = active.turnId
      if (text !== undefined) {
        const itemId = `msg_${uuid(state)}`
        yield* notify("item/started", { item: agentMessageItem(itemId, ""), threadId, turnId, startedAtMs: yield* nowMillis })
        if (text !== "") yield* notify("item/agentMessage/delta", { threadId, turnId, itemId, delta: text })
        yield* notify("item/completed", { item: agentMessageItem(itemId, text), threadId, turnId, completedAtMs: yield* nowMillis })
      }
      yield* notify("thread/status/changed", { threadId, status: { type: "idle" } })
      const completedAt = yield* nowSeconds
      yield* notify("turn/completed", {
        threadId,
        turn: turnObject(turnId, status, active.startedAt, { completedAt, error: options.error })
      })
      return true
    })

  const begin = (params: TurnStartInput, turnId: string, startedAt: number) =>
    Effect.gen(function* () {
      const threadId = params.threadId
      yield* notify("thread/status/changed", { threadId, status: { type: "active", activeFlags: [] } })
      yield* notify("turn/started", { threadId, turn: turnObject(turnId, "inProgress", startedAt) })
      const userItem = userMessageItem(uuid(state), params.input ?? [])
      yield* notify("item/started", { item: userItem, threadId, turnId, startedAtMs: yield* nowMillis })
      yield* notify("item/completed", { item: userItem, threadId, turnId, completedAtMs: yield* nowMillis })
      if (state.turnMode === "complete") yield* finish(threadId)
    })

  return {
    active: (threadId) => activeTurns.get(threadId),
    open: (threadId, turn) =>
      Effect.suspend(() => {
        activeTurns.set(threadId, turn)
        return changed.fire
      }),
    begin,
    finish
  }
}
