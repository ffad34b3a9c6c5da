// A turn event as one JSON line: the shape `run --json` and `chat --json` print.
import type { TurnEvent } from "../turn/TurnRunner.js"

export const turnEventJson = (event: TurnEvent): unknown => {
  switch (event.type) {
    case "notification":
      return { type: "notification", method: event.notification.method, params: event.notification.params }
    case "turn.completed": {
      const { items: _items, ...outcome } = event.outcome
      return { type: event.type, ...outcome }
    }
    default:
      return event
  }
}
