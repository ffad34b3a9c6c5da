// `codex-harness run` through a `serve` (connect.ts): the turn runs in the service's warm harness, this process only
// prints what the service streams. Output is the same as a local run: the final reply on stdout (or the `--json`
// events, exactly the local stream's: the control API's own events are left out), notices and approvals on stderr.
// With `--approvals ask` an approval waits for any client of the service; this terminal says how to answer it.
// The message goes to the session's queue in the service like any other: sent while the session's turn runs, it is
// steered into that turn or queued for after it (as in `chat`), and this terminal follows the turn that carries it.
// Ctrl-C interrupts this message's own turn (asked of the service explicitly: a closed connection leaves the turn
// running, so a reloaded Control UI page can reattach); a message steered into another client's turn is only left.
import { Console, Effect, Option, Stream } from "effect"
import * as fs from "node:fs"
import type { ControlEvent } from "../../schemas/control.js"
import { HarnessEvent } from "../../schemas/events.js"
import type * as ControlClient from "../control/ControlClient.js"
import { terminalText } from "../platform/terminalText.js"
import type { RunOptions } from "./commands/run.js"
import { withClient } from "./connect.js"
import { TurnDidNotComplete, UsageError } from "./errors.js"
import * as JsonEvents from "./jsonEvents.js"

const isHarnessEvent = (event: ControlEvent): event is HarnessEvent =>
  (HarnessEvent.members as ReadonlyArray<{ readonly fields: { readonly type: { readonly literals: ReadonlyArray<string> } } }>)
    .some((m) => m.fields.type.literals.includes(event.type))

const err = (line: string) => Effect.sync(() => void process.stderr.write(`${line}\n`))
const out = (text: string) => Effect.sync(() => void process.stdout.write(text.endsWith("\n") ? text : `${text}\n`))

const decided = { allow_once: "allowed", allow_always: "allowed (always)", deny: "denied", no_decision: "declined (no decision)" } as const

/** What a person at this terminal sees of one event (`--json` prints the events instead). */
export const show = (event: ControlEvent, typedSession: boolean): Effect.Effect<void> => {
  switch (event.type) {
    case "session.selected":
      return typedSession ? Effect.void : err(`session: ${event.session_id}`)
    case "message.accepted":
      return event.disposition === "steer"
        ? err("(a turn is running in this session: steering into it)")
        : event.disposition === "queue"
        ? err("(a turn is running in this session: queued for after it)")
        : Effect.void
    case "reply":
      if (event.text === undefined) return Effect.void
      return event.source === "notice" ? err(terminalText(event.text)) : out(terminalText(event.text))
    case "approval.requested":
      return err(
        `approval ${event.id}: ${terminalText(event.detail)}\n  answer from any terminal: codex-harness answer ${event.id} allow|always|deny`
      )
    case "approval.decided":
      return err(`approval: ${decided[event.decision]} ${event.kind} ${terminalText(event.subject)} (${event.by === "policy" ? "--approvals" : "answered"})`)
    case "question.asked":
      return err(
        `question ${event.id}: ${event.questions.map((q) => terminalText(q.text)).join(" / ")}\n  answer from any terminal: codex-harness answer ${event.id} ${
          event.questions.some((q) => q.is_secret) ? "--text - (the answer on stdin: it is secret)" : "--text ANSWER"
        } (or --decline)`
      )
    case "interaction.closed":
      return event.outcome === "timed_out" ? err(`${event.id}: nobody answered in time; declined`) : Effect.void
    default:
      return Effect.void
  }
}

export const runRemote = (options: RunOptions, target: ControlClient.Target, prompt: string) =>
  withClient(target, (client) =>
    Effect.gen(function* () {
      let terminal: ControlEvent | undefined
      let sessionId: string | undefined
      // the turn is this message's own: it started one, or its queued turn has started
      let ownTurn = false
      let queued = false
      yield* client.StartTurn({
        ...(Option.isSome(options.session) ? { session: options.session.value } : {}),
        ...(options.last ? { last: true } : {}),
        prompt,
        ...(Option.isSome(options.model) ? { model: options.model.value } : {}),
        ...(Option.isSome(options.turnKind) ? { turn_kind: options.turnKind.value } : {}),
        approvals: options.approvals
      }).pipe(
        Stream.runForEach((event) =>
          Effect.gen(function* () {
            if (event.type === "session.selected") sessionId = event.session_id
            if (event.type === "message.accepted") {
              ownTurn = event.disposition === "start"
              queued = event.disposition === "queue"
            }
            if (event.type === "turn.started" && queued) ownTurn = true
            if (event.type === "turn.completed" || event.type === "turn.failed") terminal = event
            if (options.json) {
              if (isHarnessEvent(event)) yield* Effect.sync(() => void process.stdout.write(JsonEvents.line(event)))
            } else {
              yield* show(event, Option.isSome(options.session))
            }
          })
        ),
        // Ctrl-C: this message's own turn is interrupted (within a bound); the session is kept, as at a local run
        Effect.onInterrupt(() =>
          sessionId === undefined
            ? Effect.void
            : (ownTurn
              ? client.Interrupt({ session: sessionId }).pipe(Effect.timeout("5 seconds"), Effect.ignore)
              : Effect.void).pipe(
                Effect.zipRight(Console.error(`interrupted; continue the session with: codex-harness run --session ${sessionId} PROMPT`))
              )
        ),
        // the serve went away during the turn (killed, its machine gone): that is not "unreachable", and the session is kept
        Effect.catchIf(
          (e) => e._tag === "RpcClientError" && sessionId !== undefined && terminal === undefined,
          () =>
            Effect.fail(new TurnDidNotComplete({
              status: "lost",
              detail: `the connection to the serve closed during the turn; continue with: codex-harness run --session ${sessionId} PROMPT`
            }))
        )
      )
      if (terminal === undefined) return yield* new TurnDidNotComplete({ status: "lost", detail: "the service ended the stream without the turn's end" })
      if (Option.isSome(options.outputLastMessage) && terminal.type === "turn.completed" && terminal.final_text !== null) {
        const file = options.outputLastMessage.value
        const text = terminal.final_text
        yield* Effect.try({
          try: () => fs.writeFileSync(file, text.endsWith("\n") ? text : `${text}\n`),
          catch: (e) => new UsageError({ line: `--output-last-message ${file}: ${e instanceof Error ? e.message : String(e)}` })
        })
      }
      if (terminal.type === "turn.failed") {
        if (!options.json) yield* Console.error(`continue the session with: codex-harness run --session ${terminal.session_id} PROMPT`)
        return yield* new TurnDidNotComplete({ status: terminal.status, detail: terminal.error })
      }
    }))
