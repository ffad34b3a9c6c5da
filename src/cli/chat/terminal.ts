// Chat at a terminal: a prompt, streamed replies, slash commands, approvals and questions answered by the next typed
// line (a secret one unechoed and kept out of the history), messages typed during a turn steered into it or queued,
// and Ctrl-C to interrupt the running turn (twice, or at the prompt, to leave).
import { Console, Deferred, Effect, type Exit, Queue, type Scope } from "effect"
import * as readline from "node:readline"
import type { TurnResult } from "../../harness/CodexHarness.js"
import { type ChatServices, missingReply } from "./piped.js"
import { type ChatState, classify, runSlash, type SlashOutcome, submitOptions } from "./slash.js"
import type { TurnView } from "./view.js"

/** An approval prompt waiting for the next line typed at the terminal (one at a time). */
export interface PendingAnswer {
  current: Deferred.Deferred<string> | undefined
  /** the line answers a secret question: not echoed, not kept in the history (S34) */
  secret: boolean
}

/** readline's echo goes through this (undocumented but stable) method; muting it hides a secret as it is typed */
type Echoing = { _writeToOutput?: (text: string) => void; history?: Array<string>; line?: string; prevRows?: number }

type TerminalEvent =
  | { readonly _tag: "line"; readonly line: string }
  | { readonly _tag: "ctrl-c" }
  | { readonly _tag: "eof" }
  | { readonly _tag: "turn-done"; readonly exit: Exit.Exit<TurnResult, unknown> }

export const interactive = (
  { harness, processes, queue }: ChatServices,
  state: ChatState,
  view: TurnView,
  scope: Scope.Scope,
  pendingAnswer: PendingAnswer
) =>
  Effect.gen(function* () {
    const say = (line: string) => Console.log(line)
    // every readline event and every turn's end goes through one queue, so none is lost between two waits
    const events = yield* Queue.unbounded<TerminalEvent>()
    const rl = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: true, historySize: 500 })
        rl.setPrompt("you › ")
        const echoing = rl as unknown as Echoing
        const echo = echoing._writeToOutput?.bind(rl)
        if (echo !== undefined) {
          echoing._writeToOutput = (text) => {
            if (pendingAnswer.secret) {
              if (text.includes("\n")) echo("\n")
              return
            }
            // while a turn streams, the view decides where the typed line goes (below the output, never glued to it)
            if (view.echo(text, echoing.line ?? "")) echo(text)
          }
        }
        view.attachInput({
          hide: () => {
            // back to the prompt's first row (a long typed line wraps), then erase from there down
            readline.moveCursor(process.stdout, 0, -rl.getCursorPos().rows)
            readline.cursorTo(process.stdout, 0)
            readline.clearScreenDown(process.stdout)
            // readline's redraw starts by going up the rows it last drew; they are gone, and output may stand there now
            if (echoing.prevRows !== undefined) echoing.prevRows = 0
          },
          redraw: () => rl.prompt(true)
        })
        // bridge: readline's callbacks run outside any fiber; each only offers its event to the unbounded queue
        rl.on("line", (line) => {
          if (pendingAnswer.secret && echoing.history?.[0] === line) echoing.history.shift()
          Queue.unsafeOffer(events, { _tag: "line", line })
        })
        // with a SIGINT listener readline reports Ctrl-C here instead of closing itself
        // bridge: as above
        rl.on("SIGINT", () => Queue.unsafeOffer(events, { _tag: "ctrl-c" }))
        // bridge: as above
        rl.on("close", () => Queue.unsafeOffer(events, { _tag: "eof" }))
        return rl
      }),
      (rl) => Effect.sync(() => rl.close())
    )
    yield* say(`chat: /help for commands, Ctrl-C interrupts a turn, Ctrl-C at the prompt or /quit ends the chat`)

    /**
     * Runs one message through the session's steering queue; "quit" when the user asked to end the chat meanwhile.
     * Messages typed while it runs go to the queue too: steered into the running turn by default, or queued for after
     * it (`/queue followup|collect`); slash commands run at once.
     */
    const converse = (prompt: string) =>
      Effect.gen(function* () {
        yield* view.begin
        const first = yield* queue.submit(state.sessionId, prompt, submitOptions(state, view))
        // done when the queue has carried everything (steered messages and follow-ups included)
        yield* queue.idle(state.sessionId).pipe(
          Effect.zipRight(Effect.exit(first.reply)),
          Effect.flatMap((exit) => Queue.offer(events, { _tag: "turn-done", exit })),
          Effect.forkIn(scope)
        )
        let interrupting = false
        let eof = false
        while (true) {
          const event = yield* Queue.take(events)
          switch (event._tag) {
            case "turn-done": {
              const why = missingReply(event.exit, yield* view.end)
              if (why !== undefined) yield* Console.error(why === "interrupted" ? "(interrupted)" : `(no reply: ${why})`)
              return eof ? "quit" : "continue"
            }
            case "ctrl-c":
              if (interrupting) {
                // a second Ctrl-C: end the chat; closing the scope interrupts the turn and stops the app-server
                yield* view.end
                return "quit"
              }
              interrupting = true
              yield* queue.cancelQueued(state.sessionId)
              yield* queue.interrupt(state.sessionId)
              break
            case "line": {
              const question = pendingAnswer.current
              if (question !== undefined) {
                // the line answers the approval prompt on screen, not the agent
                yield* Deferred.succeed(question, event.line)
                break
              }
              const input = classify(event.line)
              if (input._tag === "blank") break
              if (input._tag === "slash") {
                if ((yield* runSlash(input.name, input.arg, { harness, queue, processes, state, say })) === "quit") eof = true
                break
              }
              const more = yield* queue.submit(state.sessionId, input.text, submitOptions(state, view)).pipe(
                Effect.either
              )
              yield* view.notice(
                more._tag === "Left"
                  ? `(not sent: ${more.left.message})`
                  : more.right.disposition === "steer"
                  ? "(steering into the running turn)"
                  : "(queued for after this turn)"
              )
              break
            }
            case "eof":
              eof = true
              break
          }
        }
      })

    while (true) {
      // lines readline already has (pasted, or typed ahead) are already on screen: prompt only when waiting
      if ((yield* Queue.size(events)) === 0) rl.prompt(true)
      const event = yield* Queue.take(events)
      if (event._tag === "ctrl-c" || event._tag === "eof") {
        process.stdout.write("\n")
        return
      }
      if (event._tag !== "line") continue // a late turn-done: nothing to do
      const input = classify(event.line)
      if (input._tag === "blank") continue
      const outcome: SlashOutcome =
        input._tag === "slash"
          ? yield* runSlash(input.name, input.arg, { harness, queue, processes, state, say })
          : yield* converse(input.text)
      if (outcome === "quit") return
    }
  })
