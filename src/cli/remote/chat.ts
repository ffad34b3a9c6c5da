// `codex-harness chat --connect URL`: a conversation through a `serve`. Every line is a message to the serve's session
// work registry, exactly as a local chat's: at a terminal a line typed while a turn runs is sent at once, and the serve
// steers it into that turn or queues it for after it (the session's queue mode); piped, each line waits for the turn
// that carries it, so every line is a follow-up. Replies, approvals and questions print as `run --connect` prints
// them (an approval is answered from any terminal with `codex-harness answer`). Ctrl-C (`stop` aborted) interrupts the
// running turn and ends the chat, as do /quit and the end of input (what was sent is still answered then). Slash
// commands that need this process's own harness (/exec, /model, /new, /queue) are refused in one line: they belong to
// a local chat. Plain (no Effect): the --connect client runs it without loading the CLI (entry.ts).
import * as readline from "node:readline"
import type { ControlEvent } from "../../../schemas/control.js"
import * as ControlWire from "../../control/ControlWire.js"
import { type CliFailure, ofWire } from "./failures.js"
import { interruptTurn } from "./run.js"
import { type Output, show } from "./show.js"

/**
 * A fresh session's id. Web Crypto's, read when a chat starts: this module is loaded by every `run --connect` too, and
 * an import of node:crypto cost each of those processes about 5 ms of loading for an id only a chat makes.
 */
const newSessionId = (): string => globalThis.crypto.randomUUID()

export interface RemoteChat {
  readonly session: string | undefined
  readonly last: boolean
  readonly model: string | undefined
}

/** what one line is: nothing, a slash command, or a message */
const classify = (line: string) => {
  const text = line.trim()
  if (text === "") return { _tag: "blank" } as const
  if (text.startsWith("/")) return { _tag: "slash", name: text.slice(1).split(/\s+/)[0] ?? "" } as const
  return { _tag: "message", text: line } as const
}

/** Runs the chat until /quit, the end of input or `stop`; undefined when every message was answered. */
export const chatRemote = async (
  wire: ControlWire.Wire,
  url: string,
  chat: RemoteChat,
  output: Output,
  stop: AbortSignal
): Promise<CliFailure | undefined> => {
  const atTerminal = process.stdin.isTTY === true
  // a new session gets its id here, so every message of the chat names the same one
  let sessionId: string | undefined = chat.session ?? (chat.last ? undefined : newSessionId())
  if (sessionId !== undefined) output.err(`session: ${sessionId}`)
  if (atTerminal) output.err("chat through the serve: /help for commands, Ctrl-C interrupts a turn and ends the chat")
  const following = new Set<Promise<void>>()
  let failedTurns = 0
  let running = 0
  /** a refusal that ends the chat (the serve unreachable, the token refused), as the command's failure */
  let fatal: CliFailure | undefined

  /** sends one message; resolves once the serve accepted it (the session is known), its turn followed meanwhile */
  const send = (text: string): Promise<void> =>
    new Promise((accepted) => {
      let terminal: ControlEvent | undefined
      // steered into (or answering) a turn this chat already follows: that follower prints the turn, once
      let quiet = false
      running++
      const ended = new Promise<void>((done) => {
        wire.stream("StartTurn", {
          ...(sessionId !== undefined ? { session: sessionId } : { last: true }),
          prompt: text,
          ...(chat.model !== undefined ? { model: chat.model } : {})
        }, {
          item: (event) => {
            if (event.type === "session.selected" && sessionId === undefined) {
              sessionId = event.session_id
              output.err(`session: ${sessionId}`)
            }
            if (event.type === "message.accepted") {
              quiet = (event.disposition === "steer" || event.disposition === "answer") && running > 1
              accepted()
            }
            if (event.type === "turn.completed" || event.type === "turn.failed") terminal = event
            if (event.type !== "session.selected" && (!quiet || event.type === "message.accepted")) show(event, true, output)
          },
          end: (failure) => {
            running--
            accepted()
            const why = failure !== undefined
              ? "the serve refused or lost it"
              : terminal?.type === "turn.failed"
              ? terminal.status === "interrupted" ? "interrupted" : terminal.error
              : terminal === undefined
              ? "the stream ended without the turn's end"
              : undefined
            // never connected, or refused before the serve took it: the chat cannot go on
            if (failure !== undefined && failure._tag === "Lost" && terminal === undefined && fatal === undefined && sessionId === undefined) {
              fatal = ofWire(failure, url)
            }
            if (why !== undefined) {
              failedTurns++
              if (fatal === undefined) output.err(`(no reply: ${why})`)
            }
            done()
          }
        })
      })
      following.add(ended)
      void ended.then(() => following.delete(ended))
    })

  const slash = async (name: string): Promise<boolean> => {
    switch (name) {
      case "quit":
        return false
      case "compact": {
        if (sessionId === undefined) {
          output.err("/compact: the session has no thread yet")
          return true
        }
        const result = await wire.call("Compact", { session: sessionId })
        output.err(result.ok
          ? `compacted thread ${result.value.thread_id} in ${(result.value.duration_ms / 1000).toFixed(1)} s`
          : `/compact: ${result.failure._tag === "ControlFailure" ? result.failure.message : ControlWire.failureText(result.failure)}`)
        return true
      }
      case "help":
        output.err("through a serve: /compact, /help, /quit; other commands need a local chat (without --connect)")
        return true
      default:
        output.err(`/${name} is not available through a serve (chat without --connect for it); /help lists what is`)
        return true
    }
  }

  const interrupted = async () => {
    if (sessionId !== undefined && running > 0) await interruptTurn(wire, sessionId)
  }
  const lines = readline.createInterface({ input: process.stdin, terminal: false })
  const stopped = new Promise<"stopped">((resolve) => {
    if (stop.aborted) resolve("stopped")
    else stop.addEventListener("abort", () => resolve("stopped"), { once: true })
  })
  try {
    const iterator = lines[Symbol.asyncIterator]()
    for (;;) {
      const next = await Promise.race([iterator.next(), stopped])
      if (next === "stopped") {
        await interrupted()
        return { line: "", exitCode: 130 }
      }
      if (next.done === true || fatal !== undefined) break
      const input = classify(next.value)
      if (input._tag === "blank") continue
      if (input._tag === "slash") {
        if (!(await slash(input.name))) break
        continue
      }
      // piped: one message after the other, as a local piped chat does
      const before = new Set(following)
      await Promise.race([send(input.text), stopped])
      if (!atTerminal) await Promise.race([Promise.all([...following].filter((p) => !before.has(p))), stopped])
    }
    // the end of input: what was sent is still answered
    if ((await Promise.race([Promise.all([...following]), stopped])) === "stopped") {
      await interrupted()
      return { line: "", exitCode: 130 }
    }
  } finally {
    lines.close()
  }
  if (fatal !== undefined) return fatal
  return failedTurns > 0 ? { line: "", exitCode: 1 } : undefined
}
