// Piped chat: one message per stdin line, each sent after the previous reply (never steered into a running turn); the
// exit code is 0 only when every message got its reply.
import { Cause, Console, Effect, Exit, Option, Schema, Stream } from "effect"
import * as readline from "node:readline"
import type { CompactionService } from "../../compaction/Compaction.js"
import type { CodexHarnessService, TurnResult } from "../../harness/CodexHarness.js"
import type { SteeringQueueService } from "../../harness/SteeringQueue.js"
import { type ChatState, classify, runSlash, submitOptions } from "./slash.js"
import type { TurnView } from "./view.js"

export class ChatIncomplete extends Schema.TaggedError<ChatIncomplete>()("ChatIncomplete", {
  failed: Schema.Array(Schema.Number),
  total: Schema.Number
}) {
  override get message() {
    return `${this.failed.length} of ${this.total} messages got no reply (${this.failed.map((n) => `#${n}`).join(", ")})`
  }
}

/** Why a message got no reply, or undefined when it got one. */
export const missingReply = (exit: Exit.Exit<TurnResult, unknown>, replies: number): string | undefined =>
  Exit.match(exit, {
    onFailure: (cause) => {
      if (Cause.isInterruptedOnly(cause)) return "interrupted"
      const failure = Cause.failureOption(cause)
      const error = Option.isSome(failure) ? failure.value : Cause.squash(cause)
      return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").trim()
    },
    onSuccess: (result) =>
      result.status !== "completed"
        ? `the turn ended ${result.status}${result.error !== undefined ? `: ${result.error.replace(/\s+/g, " ").trim()}` : ""}`
        : replies === 0
        ? "the turn completed without a reply"
        : undefined
  })

const turnFor = (harness: CodexHarnessService, state: ChatState, view: TurnView, prompt: string) =>
  harness.runTurn({ sessionId: state.sessionId, prompt, ...submitOptions(state, view) })

export interface ChatServices {
  readonly harness: CodexHarnessService
  readonly queue: SteeringQueueService
  readonly compaction: CompactionService
}

export const piped = ({ compaction, harness, queue }: ChatServices, state: ChatState, view: TurnView) =>
  Effect.gen(function* () {
    const say = (line: string) => Console.error(line)
    const rl = yield* Effect.acquireRelease(
      Effect.sync(() => readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false })),
      (rl) => Effect.sync(() => rl.close())
    )
    let total = 0
    const failed: Array<number> = []
    // the readline iterator buffers a bounded number of lines (it pauses stdin beyond that); the stream pulls the next
    // line only after the previous message is done, so every message is a follow-up, never steered into a turn
    yield* Stream.fromAsyncIterable(rl, (e) => e).pipe(
      Stream.orDie,
      Stream.runForEachWhile((line) =>
        Effect.gen(function* () {
          const input = classify(line)
          if (input._tag === "blank") return true
          if (input._tag === "slash") {
            return (yield* runSlash(input.name, input.arg, { harness, queue, compaction, state, say })) === "continue"
          }
          const n = ++total
          yield* view.begin
          const exit = yield* Effect.exit(turnFor(harness, state, view, input.text))
          const why = missingReply(exit, yield* view.end)
          if (why !== undefined) {
            failed.push(n)
            yield* say(`codex-harness: message ${n} got no reply: ${why}`)
          }
          return true
        })
      )
    )
    if (failed.length > 0) return yield* Effect.fail(new ChatIncomplete({ failed, total }))
  })
