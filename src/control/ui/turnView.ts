// The live turn: the events of the run the page follows (live.ts) drawn into the log as they come. The agent's reply
// grows with each `item.delta` and is replaced by the item's whole text at `item.completed` (the deltas are a preview;
// the completed item is what Codex kept). Every agent message stays in the log, not only the final reply: those that
// completed before it are marked intermediate when the turn ends. Commands, tool calls and file changes are one line
// each, updated in place from started to completed. The messages the page sent are lines of their own, each saying
// what serve did with it (a turn of its own, steered into the running turn, queued after it). All of it is text nodes
// (dom.ts): model and tool output never becomes markup.
import type { ControlEvent } from "../../../schemas/control.js"
import type { EventItem } from "../../../schemas/events.js"
import { clip, el } from "./dom.js"

export type TurnState = "idle" | "running" | "completed" | "failed" | "interrupted"

export type Disposition = "start" | "steer" | "queue" | "answer"

/** A message's line in the log, told later what became of the message. */
export interface SentMessage {
  readonly accepted: (disposition: Disposition, mode: string) => void
  /** serve refused it, or it was withdrawn before a turn carried it */
  readonly refused: (error: string) => void
}

const dispositionText: Record<Disposition, string> = {
  start: "",
  steer: "steered into the running turn",
  queue: "queued: runs after the running turn",
  answer: "taken as the answer to the turn's question"
}

export interface TurnView {
  /** a message as sent (a new turn's prompt, or one sent while a turn runs) */
  readonly sent: (prompt: string) => SentMessage
  /** the page follows a turn it did not start (another client's, or its own before a reload) from here on */
  readonly following: (sessionId: string) => void
  readonly event: (event: ControlEvent) => void
  /** the turn being followed ended before its events could be followed (its outcome is in the transcript) */
  readonly endedUnseen: () => void
  /** the stream itself failed (the call was refused, the connection was lost) */
  readonly streamFailed: (error: string) => void
  /** the stream ended before the turn's outcome came; `interruptSent`: this page had asked for an interrupt */
  readonly endedWithoutOutcome: (interruptSent: boolean) => void
  readonly clear: () => void
  readonly state: () => TurnState
}

const commandStatus = (item: EventItem): string => {
  if (item.exit_code !== undefined && item.exit_code !== null) return `exit ${item.exit_code}`
  return item.status ?? "running"
}

export const make = (log: HTMLElement, status: HTMLElement): TurnView => {
  let state: TurnState = "idle"
  const setState = (next: TurnState, text: string) => {
    state = next
    status.dataset.state = next
    status.textContent = text
  }
  setState("idle", "no turn running")

  const scrolled = <T extends HTMLElement>(node: T): T => {
    log.append(node)
    node.scrollIntoView({ block: "end" })
    return node
  }
  const find = (testid: string, itemId: string): HTMLElement | null => {
    for (const node of log.querySelectorAll<HTMLElement>(`[data-testid="${testid}"]`)) if (node.dataset.itemId === itemId) return node
    return null
  }
  const notice = (text: string, testid = "notice") => scrolled(el("div", { className: "entry notice", testid }, text))

  /** the reply being streamed for this item (made on its first delta or its start) */
  const agentText = (itemId: string): HTMLElement => {
    const found = find("agent-text", itemId)
    if (found !== null) return found
    const node = scrolled(el("div", { className: "entry agent", testid: "agent-text", data: { itemId, streaming: "true" } }))
    turnReplies.push(node)
    return node
  }

  const toolLine = (item: EventItem, done: boolean) => {
    const line = find("tool-line", item.id) ??
      scrolled(el("div", { className: "entry tool", testid: "tool-line", data: { itemId: item.id, kind: item.kind } }))
    let head: string
    let tail: string
    switch (item.kind) {
      case "command":
        head = `$ ${item.command ?? ""}`
        tail = done ? commandStatus(item) : "running"
        break
      case "file_change":
        head = `edit ${(item.paths ?? []).join(", ")}`
        tail = item.status ?? (done ? "done" : "running")
        break
      default:
        head = `tool ${item.tool ?? item.item_type}`
        tail = item.status ?? (done ? "done" : "running")
    }
    line.dataset.status = done ? "completed" : "running"
    if (item.exit_code !== undefined && item.exit_code !== null) line.dataset.exitCode = String(item.exit_code)
    line.replaceChildren(el("span", { className: "head" }, head), " ", el("span", { className: "badge" }, tail))
    if (done && item.output !== undefined && item.output !== "") {
      line.append(el("pre", { className: "output", testid: "tool-output" }, clip(item.output)))
    }
  }

  const item = (i: EventItem, done: boolean) => {
    switch (i.kind) {
      case "agent_message": {
        const node = agentText(i.id)
        if (done) {
          node.textContent = i.text ?? node.textContent
          node.dataset.streaming = "false"
        }
        return
      }
      case "command":
      case "tool_call":
      case "file_change":
        return toolLine(i, done)
      case "reasoning":
        if (done && i.text !== undefined && i.text !== "") scrolled(el("div", { className: "entry reasoning", testid: "reasoning" }, i.text))
        return
      case "plan":
        if (done && i.text !== undefined && i.text !== "") scrolled(el("div", { className: "entry plan", testid: "plan" }, `plan: ${i.text}`))
        return
      default:
        // the messages the page sent are drawn by sent(); other kinds carry nothing to read
        return
    }
  }

  /** the agent messages of the turn under way (from its start): all but the final one are intermediate at its end */
  let turnReplies: Array<HTMLElement> = []

  const finished = (finalText: string | null) => {
    const replies = turnReplies.filter((node) => node.isConnected)
    turnReplies = []
    let last = replies.at(-1)
    if (finalText !== null && (last === undefined || last.textContent !== finalText)) {
      // no delta or item reached the page (a reply Codex sent whole): the final text is still shown
      last = scrolled(el("div", { className: "entry agent", testid: "agent-text", data: { streaming: "false" } }, finalText))
      replies.push(last)
    }
    for (const node of replies) {
      node.dataset.streaming = "false"
      if (finalText !== null && node === last) node.dataset.final = "true"
      else node.dataset.intermediate = "true"
    }
  }

  const event = (e: ControlEvent) => {
    switch (e.type) {
      case "session.selected":
        return void notice(`session ${e.session_id}${e.created ? " (new)" : ""}`)
      case "thread.started":
        return void notice(`thread ${e.thread_id} · ${e.model} (${e.model_provider})${e.resumed ? " resumed" : ""}`)
      case "turn.started":
        turnReplies = []
        return setState("running", `turn ${e.turn_id} running…`)
      case "item.started":
      case "item.completed":
        return item(e.item, e.type === "item.completed")
      case "item.delta": {
        const node = agentText(e.item_id)
        node.append(e.delta)
        // how many pieces the reply came in: a reader (and the browser test) can tell a streamed reply from a whole one
        node.dataset.deltas = String(Number(node.dataset.deltas ?? "0") + 1)
        return
      }
      case "approval.decided":
        return void notice(`${e.decision.replace("_", " ")}: ${e.subject} (${e.by === "policy" ? "policy" : "answered"})`, "decision")
      case "question.declined":
        return void notice(`question declined: ${e.questions.join(" / ")}`)
      case "reply":
        if (e.source === "final") return
        if (e.text !== undefined) notice(e.text)
        for (const m of e.media) notice(`${m.kind}: ${m.path}`)
        return
      case "turn.completed":
        finished(e.final_text)
        return setState("completed", "turn completed")
      case "turn.failed":
        scrolled(el("div", { className: "entry error", testid: "turn-error", data: { status: e.status } }, `turn ${e.status}: ${e.error}`))
        if (e.final_text !== null) finished(e.final_text)
        return setState(e.status === "interrupted" ? "interrupted" : "failed", `turn ${e.status}`)
      default:
        // approvals and questions are cards (prompts.ts), not log lines
        return
    }
  }

  return {
    sent: (prompt) => {
      const line = scrolled(el("div", { className: "entry user", testid: "user-prompt" }, prompt))
      // a message sent while a turn runs does not restart the status: it says what became of it on its own line
      if (state !== "running") setState("running", "starting…")
      return {
        accepted: (disposition, mode) => {
          line.dataset.disposition = disposition
          line.dataset.mode = mode
          if (disposition !== "start") line.append(el("span", { className: "badge", testid: "disposition" }, ` (${dispositionText[disposition]})`))
        },
        refused: (error) => {
          line.dataset.disposition = "refused"
          line.append(el("span", { className: "badge error", testid: "disposition" }, ` (not taken: ${error})`))
        }
      }
    },
    following: (sessionId) => {
      notice(`following the turn running in session ${sessionId} (its earlier events are in the transcript above)`, "following")
      setState("running", "turn running…")
    },
    event,
    endedUnseen: () => {
      if (state !== "running") return
      notice("the turn ended before the page could follow it: its outcome is in the session's transcript", "ended-unseen")
      setState("idle", "no turn running")
    },
    streamFailed: (error) => {
      scrolled(el("div", { className: "entry error", testid: "turn-error" }, error))
      setState("failed", "turn failed")
    },
    endedWithoutOutcome: (interruptSent) => {
      if (state !== "running") return
      if (!interruptSent) {
        scrolled(el("div", { className: "entry error", testid: "turn-error" }, "the turn's stream ended without its outcome"))
        return setState("failed", "turn failed")
      }
      // serve ends an interrupted turn's stream without a turn.failed event: the interrupt this page sent is the outcome
      scrolled(el("div", { className: "entry error", testid: "turn-error", data: { status: "interrupted" } }, "turn interrupted"))
      setState("interrupted", "turn interrupted")
    },
    clear: () => {
      log.replaceChildren()
      turnReplies = []
      setState("idle", "no turn running")
    },
    state: () => state
  }
}
