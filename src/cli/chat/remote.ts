// `codex-harness chat --connect URL`: a conversation through a `serve`. Every line is a message to the serve's session
// work registry, exactly as a local chat's: at a terminal a line typed while a turn runs is sent at once, and the serve
// steers it into that turn or queues it for after it (the session's queue mode); piped, each line waits for the turn
// that carries it, so every line is a follow-up. Replies, approvals and questions print as `run --connect` prints
// them (an approval is answered from any terminal with `codex-harness answer`). Ctrl-C interrupts the running turn;
// a second Ctrl-C, /quit or the end of input ends the chat. Slash commands that need this process's own harness
// (/exec, /model, /new, /queue) are refused in one line: they belong to a local chat.
import { Console, Effect, Exit, Fiber, FiberSet, Option, Stream } from "effect"
import * as crypto from "node:crypto"
import * as readline from "node:readline"
import type { ControlEvent } from "../../../schemas/control.js"
import type * as ControlClient from "../../control/ControlClient.js"
import type { ChatOptions } from "../commands/chat.js"
import { withClient } from "../connect.js"
import { ExitStatus } from "../errors.js"
import { show } from "../runRemote.js"

/** what one line is: nothing, a slash command with its argument, or a message */
const classify = (line: string) => {
  const text = line.trim()
  if (text === "") return { _tag: "blank" } as const
  if (text.startsWith("/")) {
    const [name = "", ...rest] = text.slice(1).split(/\s+/)
    return { _tag: "slash", name, arg: rest.join(" ") } as const
  }
  return { _tag: "message", text: line } as const
}

export const chatRemote = (options: ChatOptions, target: ControlClient.Target) =>
  withClient(target, (client) =>
    Effect.gen(function* () {
      const atTerminal = process.stdin.isTTY === true
      // a new session gets its id here, so every message of the chat names the same one
      let sessionId: string | undefined = Option.getOrUndefined(options.session) ?? (options.last ? undefined : crypto.randomUUID())
      if (sessionId !== undefined) yield* Console.error(`session: ${sessionId}`)
      if (atTerminal) yield* Console.error("chat through the serve: /help for commands, Ctrl-C interrupts a turn and ends the chat")
      const turns = yield* FiberSet.make<void>()
      let failed = 0
      let running = 0

      /** sends one message; done once the serve accepted it (the session is known), its turn followed in a fiber */
      const send = (text: string) =>
        Effect.gen(function* () {
          const accepted = yield* Effect.makeLatch(false)
          let terminal: ControlEvent | undefined
          // steered into (or answering) a turn this chat already follows: that follower prints the turn, once
          let quiet = false
          const follow = client.StartTurn({
            ...(sessionId !== undefined ? { session: sessionId } : { last: true }),
            prompt: text,
            ...(Option.isSome(options.model) ? { model: options.model.value } : {})
          }).pipe(
            Stream.runForEach((event) =>
              Effect.gen(function* () {
                if (event.type === "session.selected" && sessionId === undefined) {
                  sessionId = event.session_id
                  yield* Console.error(`session: ${sessionId}`)
                }
                if (event.type === "message.accepted") {
                  quiet = (event.disposition === "steer" || event.disposition === "answer") && running > 1
                  yield* accepted.open
                }
                if (event.type === "turn.completed" || event.type === "turn.failed") terminal = event
                if (event.type !== "session.selected" && (!quiet || event.type === "message.accepted")) yield* show(event, true)
              })
            ),
            Effect.ensuring(Effect.zipRight(accepted.open, Effect.sync(() => void running--))),
            Effect.exit,
            Effect.flatMap((exit) => {
              const why = Exit.isFailure(exit)
                ? "the serve refused or lost it"
                : terminal?.type === "turn.failed"
                ? terminal.status === "interrupted" ? "interrupted" : terminal.error
                : terminal === undefined
                ? "the stream ended without the turn's end"
                : undefined
              if (why === undefined) return Effect.void
              failed++
              return Console.error(`(no reply: ${why})`)
            })
          )
          running++
          const fiber = yield* FiberSet.run(turns, follow)
          yield* accepted.await
          // piped: one message after the other, as a local piped chat does
          if (!atTerminal) yield* Fiber.await(fiber)
        })

      const interruptTurn = Effect.suspend(() =>
        sessionId === undefined || running === 0
          ? Effect.void
          : client.Interrupt({ session: sessionId }).pipe(Effect.timeout("5 seconds"), Effect.ignore)
      )

      const slash = (name: string) => {
        switch (name) {
          case "quit":
            return Effect.succeed(false)
          case "compact":
            return sessionId === undefined
              ? Console.error("/compact: the session has no thread yet").pipe(Effect.as(true))
              : client.Compact({ session: sessionId }).pipe(
                Effect.flatMap((r) => Console.error(`compacted thread ${r.thread_id} in ${(r.duration_ms / 1000).toFixed(1)} s`)),
                Effect.catchAll((e) => Console.error(`/compact: ${"message" in e ? e.message : String(e)}`)),
                Effect.as(true)
              )
          case "help":
            return Console.error("through a serve: /compact, /help, /quit; other commands need a local chat (without --connect)").pipe(Effect.as(true))
          default:
            return Console.error(`/${name} is not available through a serve (chat without --connect for it); /help lists what is`).pipe(Effect.as(true))
        }
      }

      const rl = yield* Effect.acquireRelease(
        Effect.sync(() => readline.createInterface({ input: process.stdin, terminal: false })),
        (r) => Effect.sync(() => r.close())
      )
      yield* Stream.fromAsyncIterable(rl, (e) => e).pipe(
        Stream.orDie,
        Stream.runForEachWhile((line) => {
          const input = classify(line)
          return input._tag === "blank"
            ? Effect.succeed(true)
            : input._tag === "slash"
            ? slash(input.name)
            : Effect.as(send(input.text), true)
        }),
        // Ctrl-C: the running turn is interrupted (asked of the serve: closing the connection would leave it running)
        Effect.onInterrupt(() => interruptTurn)
      )
      // the end of input: what was sent is still answered
      yield* FiberSet.awaitEmpty(turns).pipe(Effect.onInterrupt(() => interruptTurn))
      if (failed > 0) return yield* new ExitStatus({ code: 1 })
    }))
