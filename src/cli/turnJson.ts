// A turn event as one JSON line: the shape `run --json` and `chat --json` print.
import type { TurnEvent } from "../turn/TurnEvent.js"

export const turnEventJson = (event: TurnEvent): unknown => {
  switch (event._tag) {
    case "ThreadOpened":
      return { type: "thread.opened", thread: event.thread }
    case "TurnStarted":
      return { type: "turn.started", threadId: event.threadId, turnId: event.turnId }
    case "Notification":
      return { type: "notification", method: event.notification.method, params: event.notification.params }
    case "TurnCompleted": {
      const { items: _items, ...outcome } = event.outcome
      return { type: "turn.completed", ...outcome }
    }
  }
}
