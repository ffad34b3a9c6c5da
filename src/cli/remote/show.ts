// What a person at a terminal sees of a turn run through a serve, and what `--json` prints of it: the same as a local
// run (replies on stdout, notices, approvals and questions on stderr; `--json` exactly the local event stream, without
// the control API's own events). Every text from the serve is shown through terminalText: the serve relays the
// model's words, and a terminal obeys escape sequences. Plain (no Effect): the --connect client loads this.
import type { ControlEvent } from "../../../schemas/control.js"
import type { HarnessEvent } from "../../../schemas/events.js"
import { terminalText } from "../../platform/terminalText.js"

/** where a command's output goes: `out` a reply (stdout, a newline added when missing), `err` a line on stderr */
export interface Output {
  readonly out: (text: string) => void
  readonly err: (line: string) => void
}

export const processOutput: Output = {
  out: (text) => void process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (line) => void process.stderr.write(`${line}\n`)
}

/** the `--json` stream's event types (schemas/events.ts HarnessEvent; test/unit/remote-show.test.ts holds them equal) */
export const harnessEventTypes: ReadonlySet<string> = new Set([
  "thread.started",
  "turn.started",
  "item.started",
  "item.completed",
  "approval.decided",
  "question.declined",
  "reply",
  "turn.completed",
  "turn.failed"
])

export const isHarnessEvent = (event: ControlEvent): event is HarnessEvent => harnessEventTypes.has(event.type)

/** one line of the `--json` stream */
export const jsonLine = (event: HarnessEvent): string => `${JSON.stringify(event)}\n`

const decided: Readonly<Record<string, string>> = {
  allow_once: "allowed",
  allow_always: "allowed (always)",
  deny: "denied",
  no_decision: "declined (no decision)"
}

/** text from the serve, safe at a terminal whatever type it came as */
const safe = (value: unknown): string => terminalText(String(value))

/** What a person at this terminal sees of one event. */
export const show = (event: ControlEvent, typedSession: boolean, output: Output): void => {
  switch (event.type) {
    case "session.selected":
      if (!typedSession) output.err(`session: ${safe(event.session_id)}`)
      return
    case "message.accepted":
      if (event.disposition === "steer") output.err("(a turn is running in this session: steering into it)")
      else if (event.disposition === "queue") output.err("(a turn is running in this session: queued for after it)")
      return
    case "reply":
      if (event.text === undefined) return
      if (event.source === "notice") output.err(safe(event.text))
      else output.out(safe(event.text))
      return
    case "approval.requested":
      output.err(`approval ${safe(event.id)}: ${safe(event.detail)}\n  answer from any terminal: codex-harness answer ${safe(event.id)} allow|always|deny`)
      return
    case "approval.decided":
      output.err(
        `approval: ${decided[event.decision] ?? safe(event.decision)} ${safe(event.kind)} ${safe(event.subject)} (${event.by === "policy" ? "--approvals" : "answered"})`
      )
      return
    case "question.asked": {
      const secret = Array.isArray(event.questions) && event.questions.some((q) => q.is_secret)
      const texts = Array.isArray(event.questions) ? event.questions.map((q) => safe(q.text)).join(" / ") : ""
      output.err(
        `question ${safe(event.id)}: ${texts}\n  answer from any terminal: codex-harness answer ${safe(event.id)} ${
          secret ? "--text - (the answer on stdin: it is secret)" : "--text ANSWER"
        } (or --decline)`
      )
      return
    }
    case "interaction.closed":
      if (event.outcome === "timed_out") output.err(`${safe(event.id)}: nobody answered in time; declined`)
      return
    default:
      return
  }
}
