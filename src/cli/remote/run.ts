// `codex-harness run` through a `serve`: the turn runs in the service's warm harness, this process only prints what the
// service streams. Output is the same as a local run: the final reply on stdout (or the `--json` events, exactly the
// local stream's: the control API's own events are left out), notices and approvals on stderr. With `--approvals ask`
// an approval waits for any client of the service; this terminal says how to answer it.
// The message goes to the session's queue in the service like any other: sent while the session's turn runs, it is
// steered into that turn or queued for after it (as in `chat`), and this terminal follows the turn that carries it.
// Ctrl-C (`stop` aborted) interrupts this message's own turn (asked of the service explicitly: a closed connection
// leaves the turn running, so a reloaded Control UI page can reattach); a message steered into another client's turn
// is only left. Plain (no Effect): bin/codex-harness.js runs it without loading the CLI (entry.ts), and runDispatch.ts
// runs it for a serve found for the state dir.
import * as fs from "node:fs"
import type { ControlEvent } from "../../../schemas/control.js"
import type * as ControlWire from "../../control/ControlWire.js"
import { type CliFailure, ofWire } from "./failures.js"
import { servePromptProblem } from "./prompt.js"
import { isHarnessEvent, jsonLine, type Output, show } from "./show.js"

export interface RemoteRun {
  readonly session: string | undefined
  readonly last: boolean
  readonly prompt: string
  readonly model: string | undefined
  readonly turnKind: "user" | "heartbeat" | "lightweight" | "ringZero" | "messageOnly" | "toolDisabled" | undefined
  readonly approvals: "deny" | "allow" | "ask"
  readonly json: boolean
  readonly outputLastMessage: string | undefined
}

/** how long Ctrl-C waits for the serve to take the interrupt */
const interruptBoundMs = 5_000

/** asks the serve to interrupt the session's turn, waiting at most `interruptBoundMs` for its answer */
export const interruptTurn = (wire: ControlWire.Wire, session: string): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, interruptBoundMs)
    void wire.call("Interrupt", { session }).then(() => {
      clearTimeout(timer)
      resolve()
    })
  })

const failed = (line: string, exitCode = 1): CliFailure => ({ line, exitCode })

/**
 * Runs the turn; undefined when it completed, else how the command fails. `stop` is Ctrl-C (or SIGTERM): the outcome is
 * then `interrupted` with an empty line (what to do next is said on stderr).
 */
export const runRemote = (
  wire: ControlWire.Wire,
  url: string,
  run: RemoteRun,
  output: Output,
  stop: AbortSignal
): Promise<CliFailure | undefined> =>
  new Promise((resolve) => {
    const tooLong = servePromptProblem(run.prompt)
    if (tooLong !== undefined) return resolve({ line: tooLong, exitCode: 2 })
    let terminal: ControlEvent | undefined
    let sessionId: string | undefined
    // the turn is this message's own: it started one, or its queued turn has started
    let ownTurn = false
    let queued = false
    let settled = false
    const settle = (outcome: CliFailure | undefined) => {
      if (settled) return
      settled = true
      stop.removeEventListener("abort", onStop)
      resolve(outcome)
    }
    const onEvent = (event: ControlEvent) => {
      if (event.type === "session.selected") sessionId = event.session_id
      if (event.type === "message.accepted") {
        ownTurn = event.disposition === "start"
        queued = event.disposition === "queue"
      }
      if (event.type === "turn.started" && queued) ownTurn = true
      if (event.type === "turn.completed" || event.type === "turn.failed") terminal = event
      if (run.json) {
        if (isHarnessEvent(event)) process.stdout.write(jsonLine(event))
      } else {
        show(event, run.session !== undefined, output)
      }
    }
    const onEnd = (failure: ControlWire.WireFailure | undefined) => {
      if (failure !== undefined) {
        // the serve went away during the turn (killed, its machine gone): that is not "unreachable", and the session is kept
        if (failure._tag === "Lost" && failure.closeCode === undefined && failure.httpStatus === undefined && sessionId !== undefined && terminal === undefined) {
          return settle(failed(
            `the turn ended lost: the connection to the serve closed during the turn; continue with: codex-harness run --session ${sessionId} PROMPT`
          ))
        }
        return settle(ofWire(failure, url))
      }
      if (terminal === undefined) return settle(failed("the turn ended lost: the service ended the stream without the turn's end"))
      if (run.outputLastMessage !== undefined && terminal.type === "turn.completed" && terminal.final_text !== null) {
        const text = terminal.final_text
        try {
          fs.writeFileSync(run.outputLastMessage, text.endsWith("\n") ? text : `${text}\n`)
        } catch (e) {
          return settle(failed(`--output-last-message ${run.outputLastMessage}: ${e instanceof Error ? e.message : String(e)}`, 2))
        }
      }
      if (terminal.type === "turn.failed") {
        if (!run.json) output.err(`continue the session with: codex-harness run --session ${terminal.session_id} PROMPT`)
        return settle(failed(`the turn ended ${terminal.status}${terminal.error === "" ? "" : `: ${terminal.error}`}`))
      }
      settle(undefined)
    }
    const cancel = wire.stream("StartTurn", {
      ...(run.session !== undefined ? { session: run.session } : {}),
      ...(run.last ? { last: true } : {}),
      prompt: run.prompt,
      ...(run.model !== undefined ? { model: run.model } : {}),
      ...(run.turnKind !== undefined ? { turn_kind: run.turnKind } : {}),
      approvals: run.approvals
    }, { item: onEvent, end: onEnd })
    // Ctrl-C: this message's own turn is interrupted (within a bound); the session is kept, as at a local run
    const onStop = () => {
      if (settled) return
      cancel()
      const id = sessionId
      const done = () => {
        if (id !== undefined) output.err(`interrupted; continue the session with: codex-harness run --session ${id} PROMPT`)
        settle(failed("", 130))
      }
      if (id !== undefined && ownTurn) void interruptTurn(wire, id).then(done)
      else done()
    }
    if (stop.aborted) onStop()
    else stop.addEventListener("abort", onStop)
  })
