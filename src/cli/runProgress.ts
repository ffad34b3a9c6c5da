// `run`'s signs of life on a terminal: a line when the turn starts, and one per command, file change and tool call as
// each completes, all on stderr (stdout stays the reply alone). Only when stderr is a terminal: a script reading stderr
// gets the same few lines it always did. Text from the agent is made safe to print first (terminalText).
import { Effect } from "effect"
import type { TurnEvent } from "../../schemas/turnEvents.js"
import { itemOf } from "./jsonEvents.js"
import { terminalText } from "../platform/terminalText.js"

const say = (text: string) => Effect.sync(() => void process.stderr.write(`${terminalText(text).replace(/\n/g, " ")}\n`))

const shorten = (text: string, max = 160) => (text.length > max ? `${text.slice(0, max - 1)}…` : text)

/** The progress line for one event, if it gets one. Pure. */
export const progressLine = (event: TurnEvent): string | undefined => {
  if (event._tag === "TurnStarted") return "… working (Ctrl-C interrupts; the session is kept)"
  if (event._tag !== "Notification" || event.notification._tag !== "ItemCompleted") return undefined
  const item = itemOf(event.notification.params.item)
  switch (item.kind) {
    case "command":
      return `› ran ${shorten(item.command ?? "")}${typeof item.exit_code === "number" ? ` (exit ${item.exit_code})` : ""}`
    case "file_change":
      return `› changed ${shorten((item.paths ?? []).join(", "))}`
    case "tool_call":
      return `› called ${item.tool ?? "a tool"}${item.status !== undefined && item.status !== "completed" ? ` (${item.status})` : ""}`
    default:
      return undefined
  }
}

export const make = () => ({
  onEvent: (event: TurnEvent) => {
    const line = progressLine(event)
    return line === undefined ? Effect.void : say(line)
  }
})
