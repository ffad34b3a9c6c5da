// How a chat turn looks: streamed reply text, a one-line progress indicator on stderr while the agent works, and a
// Delivery that counts replies and does not print a streamed final text twice; one line per command, file change and
// tool call as each completes (on stderr, so stdout stays the replies). With --json, one JSON event per line.
// At a terminal the user may type while a turn streams: once they do, their prompt line is drawn below the output and
// kept there (cleared before each write, redrawn after), reply text goes out in whole lines above it, and the spinner
// stays off, so what they type is never glued to reply text.
// Streamed text and progress labels come from the model (a command it runs, a tool it names), so they are made safe to
// print first (terminalText): an escape sequence in a delta never reaches the terminal, even split over deltas.
import { type Context, Effect, type Scope } from "effect"
import type { ThreadItem } from "../../../schemas/protocol.js"
import { Delivery, type Reply } from "../../ports/Delivery.js"
import type { EventSink } from "../../../schemas/turnEvents.js"
import * as TerminalDelivery from "../TerminalDelivery.js"
import { makeTerminalStream, terminalText } from "../../platform/terminalText.js"
import * as JsonEvents from "../jsonEvents.js"
import { progressLine } from "../runProgress.js"

const spinnerFrames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/** A one-line progress indicator on stderr; a no-op unless enabled (stderr is a terminal). */
const makeSpinner = (enabled: boolean) => {
  let timer: ReturnType<typeof setInterval> | undefined
  let label = ""
  let frame = 0
  // held while a question or an approval waits for a typed line, so the line is not drawn over
  let held = false
  const draw = () => void process.stderr.write(`\r\x1b[2K${spinnerFrames[frame++ % spinnerFrames.length]} ${label}`)
  const clear = () => {
    if (timer === undefined) return
    clearInterval(timer)
    timer = undefined
    process.stderr.write("\r\x1b[2K")
  }
  return {
    hold: (on: boolean) => {
      held = on
      if (on) clear()
    },
    show: (text: string) => {
      if (!enabled || held) return
      label = terminalText(text).replace(/\s+/g, " ")
      if (timer === undefined) timer = setInterval(draw, 100)
      draw()
    },
    clear
  }
}

const short = (text: string, max = 60) => {
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** What the progress line says while an item runs; undefined for items that are not waits worth naming. */
const progressLabel = (item: ThreadItem): string | undefined => {
  switch (item.type) {
    case "commandExecution":
      return `running ${short(item.command)}`
    case "dynamicToolCall":
      return `running ${item.tool}`
    case "mcpToolCall":
      return `running ${item.server}.${item.tool}`
    case "webSearch":
      return "searching the web"
    case "fileChange":
      return "editing files"
    default:
      return undefined
  }
}

export interface ViewOptions {
  readonly json: boolean
  /** the session the next turn runs in (`/new` changes it), named by the `--json` events */
  readonly sessionId: () => string
  /** stream assistant text as it arrives (terminal mode, and never when replies are private) */
  readonly stream: boolean
  /** show the progress line (terminal mode with stderr a terminal) */
  readonly progress: boolean
}

/** The terminal's input line, as chat's readline draws it. */
export interface InputLine {
  /** erases the prompt and what was typed after it (the cursor ends at the start of the prompt's first row) */
  readonly hide: () => void
  /** draws the prompt and what was typed so far (the cursor where the user left it) */
  readonly redraw: () => void
}

export interface TurnView {
  readonly delivery: Context.Tag.Service<Delivery>
  readonly onEvent: EventSink
  /** resets the per-turn state and shows the progress line */
  readonly begin: Effect.Effect<void>
  /** clears the progress line and ends a half-written line; the number of replies the turn delivered */
  readonly end: Effect.Effect<number>
  /** while a typed answer is awaited: no progress line over it */
  readonly asking: (on: boolean) => void
  /** a line on stderr between replies' lines (never in the middle of one, never over the typed input) */
  readonly notice: (line: string) => Effect.Effect<void>
  /** the terminal's input line, once readline owns it (terminal mode) */
  readonly attachInput: (input: InputLine) => void
  /**
   * readline is about to echo `text` with `typed` on its line: true to let it. While a turn streams the first keystroke
   * moves the prompt below the output instead (and the view draws it); Enter releases it.
   */
  readonly echo: (text: string, typed: string) => boolean
}

/**
 * Chat's view of its turns: a Delivery wrapping the terminal one (counting replies and, when the text was already
 * streamed, not printing the same final text twice; media lines and notices still show) and the turn's event sink
 * (JSON lines, or streamed text and the progress line).
 */
export const makeView = (options: ViewOptions): Effect.Effect<TurnView, never, Scope.Scope> =>
  Effect.gen(function* () {
    const terminal = yield* Effect.provide(Delivery, TerminalDelivery.layer({ json: options.json }))
    const spinner = makeSpinner(options.progress)
    yield* Effect.addFinalizer(() => Effect.sync(spinner.clear))
    // per turn
    let encoder = JsonEvents.turnEncoder(options.sessionId())
    let replies = 0
    const streamed = new Set<string>() // item ids whose text was streamed
    const shown = new Set<string>() // their completed texts
    let atLineStart = true
    // the streamed reply text, made safe piece by piece
    const safeText = makeTerminalStream()
    // typing during a turn: the input line, whether it is drawn below the output, and reply text held until its line ends
    let input: InputLine | undefined
    let streaming = false
    let asked = false
    let promptShown = false
    let held = ""

    const out = (text: string) => {
      if (text === "") return
      process.stdout.write(text)
      atLineStart = text.endsWith("\n")
    }
    /** runs `f` with the typed input line out of the way, and puts it back after */
    const aside = (f: () => void) => {
      spinner.clear()
      if (!promptShown || input === undefined) return f()
      input.hide()
      f()
      input.redraw()
    }
    const write = (text: string) => {
      if (text === "") return
      spinner.clear()
      if (!promptShown) return out(text)
      // above the input line only whole lines go out: a half line would have the prompt drawn right after it
      held += text
      const cut = held.lastIndexOf("\n")
      if (cut < 0) return
      const ready = held.slice(0, cut + 1)
      held = held.slice(cut + 1)
      aside(() => out(ready))
    }
    const endLine = () => {
      if (promptShown) {
        if (held !== "") write("\n")
      } else if (!atLineStart) out("\n")
    }
    /** the input line leaves the live area (submitted, or the turn ended): what was held goes out, the line ended */
    const releasePrompt = () => {
      promptShown = false
      out(held)
      held = ""
      if (!atLineStart) out("\n")
    }
    const progress = (label: string) => {
      // never over a half-written line of reply text, nor over the typed input
      if (atLineStart && !promptShown) spinner.show(label)
    }
    const say = (line: string) => {
      if (!promptShown) endLine()
      aside(() => void process.stderr.write(`${line}\n`))
    }

    const aroundInput = <A, E>(effect: Effect.Effect<A, E>) =>
      promptShown && input !== undefined
        ? Effect.acquireUseRelease(Effect.sync(() => input?.hide()), () => effect, () => Effect.sync(() => input?.redraw()))
        : effect

    const delivery: TurnView["delivery"] = {
      deliver: (reply: Reply) =>
        Effect.suspend(() => {
          if (reply.source !== "notice") replies++
          spinner.clear()
          endLine()
          if (options.stream && reply.source === "final" && reply.text !== undefined && shown.has(reply.text)) {
            return reply.media.length === 0 ? Effect.void : aroundInput(terminal.deliver({ ...reply, text: undefined }))
          }
          return aroundInput(terminal.deliver(reply))
        })
    }

    const onEvent: EventSink = (event) =>
      Effect.sync(() => {
        if (options.json) {
          for (const e of encoder.turnEvent(event)) process.stdout.write(JsonEvents.line(e))
          return
        }
        if (event._tag === "TurnCompleted") {
          spinner.clear()
          write(safeText.end())
          endLine()
          return
        }
        if (event._tag !== "Notification") return
        const n = event.notification
        if (n._tag === "AgentMessageDelta") {
          if (!options.stream) return
          streamed.add(n.params.itemId)
          write(safeText.write(n.params.delta))
        } else if (n._tag === "ItemStarted") {
          const label = progressLabel(n.params.item)
          if (label !== undefined) progress(label)
        } else if (n._tag === "ItemCompleted") {
          const item = n.params.item
          // what the agent did, as `run` shows it; the command and paths come from the agent, so made safe first
          const did = progressLine(event)
          if (did !== undefined) say(`  ${terminalText(did).replace(/\n/g, " ")}`)
          if (item.type === "agentMessage" && streamed.has(item.id)) {
            shown.add(item.text)
            write(safeText.end())
            endLine()
          }
          if (item.type === "agentMessage" || progressLabel(item) !== undefined) progress("thinking…")
        }
      })

    return {
      delivery,
      onEvent,
      begin: Effect.sync(() => {
        encoder = JsonEvents.turnEncoder(options.sessionId())
        replies = 0
        streamed.clear()
        shown.clear()
        safeText.end()
        atLineStart = true
        held = ""
        streaming = true
        progress("thinking…")
      }),
      end: Effect.sync(() => {
        spinner.clear()
        write(safeText.end())
        streaming = false
        // the chat prompts again after the turn, with what was typed so far
        if (promptShown) {
          input?.hide()
          releasePrompt()
        }
        endLine()
        return replies
      }),
      asking: (on) => {
        asked = on
        spinner.hold(on)
        // the question is the prompt now: the input line makes way for it
        if (on && promptShown) {
          input?.hide()
          releasePrompt()
        }
        if (on) endLine()
      },
      notice: (line) => Effect.sync(() => say(line)),
      attachInput: (line) => {
        input = line
      },
      echo: (text, typed) => {
        if (!streaming || asked || input === undefined || !options.stream) return true
        if (promptShown) {
          if (!text.includes("\n")) return true
          // Enter: the typed line stays on screen as sent; the output continues below it
          process.stdout.write(text)
          atLineStart = true
          releasePrompt()
          return false
        }
        // nothing typed (an Enter on an empty line, say): nothing to show
        if (typed === "") return false
        spinner.clear()
        endLine()
        promptShown = true
        input.redraw()
        return false
      }
    }
  })
