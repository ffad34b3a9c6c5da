// What Codex has reported about a compaction turn, folded from the thread's notifications once the compaction was
// requested. Pure: each step returns a new value, which the operation keeps in a SubscriptionRef so that waiting for
// the turn to be known or to end is waiting for a change, not a flag set by a callback.
import type { ServerNotification } from "../../schemas/protocol.js"

export interface Terminal {
  readonly status: string
  readonly error: string | undefined
}

export interface CompactionProgress {
  /** the compaction turn, once seen: the turn carrying the contextCompaction item wins over the first turn/started */
  readonly turnId: string | undefined
  readonly fromItem: boolean
  /** the compaction item of that turn completed */
  readonly itemCompleted: boolean
  /** the compaction turn's turn/completed */
  readonly ended: Terminal | undefined
}

export const initial: CompactionProgress = { turnId: undefined, fromItem: false, itemCompleted: false, ended: undefined }

const identify = (p: CompactionProgress, turnId: string, byItem: boolean): CompactionProgress =>
  p.turnId !== undefined && (p.fromItem || !byItem) ? p : { ...p, turnId, fromItem: byItem }

/** The progress after one more of the thread's notifications (those before the request are not passed in). */
export const absorb = (p: CompactionProgress, n: ServerNotification): CompactionProgress => {
  switch (n._tag) {
    case "TurnStarted":
      return identify(p, n.params.turn.id, false)
    case "ItemStarted":
    case "ItemCompleted": {
      if (n.params.item.type !== "contextCompaction") return p
      const next = identify(p, n.params.turnId, true)
      return n._tag === "ItemCompleted" && n.params.turnId === next.turnId && !next.itemCompleted
        ? { ...next, itemCompleted: true }
        : next
    }
    case "TurnCompleted": {
      const turn = n.params.turn
      if (p.turnId === undefined || turn.id !== p.turnId || p.ended !== undefined) return p
      return { ...p, ended: { status: turn.status, error: turn.error?.message ?? undefined } }
    }
    default:
      return p
  }
}
