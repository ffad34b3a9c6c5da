// Piped chat: one message per stdin line, each sent after the previous reply (never steered into a running turn); the
// exit code is 0 only when every message got its reply.
//
// Lines end at "\n" only (a CRLF line loses its "\r"): a bare "\r" inside a line is part of the message, where
// readline would have split it in two. Reading is bounded like readline's: stdin is paused while read lines wait for
// their turn, and a line is held only up to `maxLineBytes` (1 MiB); a longer one is skipped as it streams in (never
// buffered whole), counted as a message that got no reply, and named on stderr.
import { Cause, Console, Effect, Exit, Option, Schema, Stream } from "effect"
import type { ProcessesService } from "../../processes/Processes.js"
import type { CodexHarnessService, TurnResult } from "../../harness/CodexHarness.js"
import type { SessionWorkService } from "../../harness/SessionWork.js"
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

/** the longest line sent as a message; a longer one is refused */
export const maxLineBytes = 1024 * 1024

export type PipedLine = { readonly _tag: "line"; readonly text: string } | { readonly _tag: "tooLong"; readonly bytes: number }

/** Splits bytes into lines at "\n" only, dropping one "\r" before it; a line over `max` bytes is not kept. */
export const makeLineSplitter = (max: number = maxLineBytes) => {
  let parts: Array<Uint8Array> = []
  let size = 0
  let tooLong = false
  const finish = (last: Uint8Array): PipedLine => {
    const bytes = size + last.length
    const line = tooLong || bytes > max ? undefined : Buffer.concat([...parts, last])
    parts = []
    size = 0
    tooLong = false
    if (line === undefined) return { _tag: "tooLong", bytes }
    return { _tag: "line", text: line.subarray(0, line.at(-1) === 0x0d ? -1 : undefined).toString("utf8") }
  }
  return {
    push: (chunk: Uint8Array): Array<PipedLine> => {
      const lines: Array<PipedLine> = []
      let start = 0
      for (let end = chunk.indexOf(0x0a); end >= 0; end = chunk.indexOf(0x0a, start)) {
        lines.push(finish(chunk.subarray(start, end)))
        start = end + 1
      }
      const rest = chunk.subarray(start)
      size += rest.length
      if (size > max) tooLong = true
      if (tooLong) parts = []
      else if (rest.length > 0) parts.push(rest)
      return lines
    },
    /** the last line, when the input did not end with a newline */
    end: (): Array<PipedLine> => (size > 0 || tooLong ? [finish(new Uint8Array(0))] : [])
  }
}

/**
 * The lines of a stream, one per `next()`. Flowing while no read line waits, paused while one does (so at most one
 * chunk's lines and one partial line are held); `return()` stops reading at once, also while a `next()` waits.
 */
export const linesOf = (input: NodeJS.ReadableStream, max: number = maxLineBytes): AsyncIterableIterator<PipedLine> => {
  const splitter = makeLineSplitter(max)
  const queue: Array<PipedLine> = []
  let ended = false
  let closed = false
  let failure: { readonly error: unknown } | undefined
  let wake: (() => void) | undefined
  const notify = () => wake?.()
  const onData = (chunk: Buffer | string) => {
    queue.push(...splitter.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk))
    if (queue.length > 0) input.pause()
    notify()
  }
  const onEnd = () => {
    ended = true
    queue.push(...splitter.end())
    notify()
  }
  const onError = (error: unknown) => {
    failure = { error }
    notify()
  }
  input.on("data", onData)
  input.on("end", onEnd)
  input.on("error", onError)
  const close = () => {
    closed = true
    input.off("data", onData)
    input.off("end", onEnd)
    input.off("error", onError)
    // stdin stops reading (so the process can end) only on a "pause" event, and pause() emits one only when the stream
    // flows; it may have been paused for backpressure and have started reading again since
    if (input.isPaused()) input.resume()
    input.pause()
    notify()
  }
  const done: IteratorResult<PipedLine> = { done: true, value: undefined }
  const iterator: AsyncIterableIterator<PipedLine> = {
    next: async () => {
      for (;;) {
        if (closed) return done
        const line = queue.shift()
        if (line !== undefined) return { done: false, value: line }
        if (failure !== undefined) throw failure.error
        if (ended) {
          close()
          return done
        }
        input.resume()
        await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
      }
    },
    return: async () => {
      close()
      return done
    },
    [Symbol.asyncIterator]: () => iterator
  }
  return iterator
}

// through the session's work registry like every message, one after the other: each is its own turn
const turnFor = (queue: SessionWorkService, state: ChatState, view: TurnView, prompt: string) =>
  queue.submit(state.sessionId, prompt, submitOptions(state, view)).pipe(Effect.flatMap((submitted) => submitted.reply))

export interface ChatServices {
  readonly harness: CodexHarnessService
  readonly queue: SessionWorkService
  readonly processes: ProcessesService
}

export const piped = ({ harness, processes, queue }: ChatServices, state: ChatState, view: TurnView) =>
  Effect.gen(function* () {
    const say = (line: string) => Console.error(line)
    let total = 0
    const failed: Array<number> = []
    // the stream pulls the next line only after the previous message is done, so every message is a follow-up, never
    // steered into a turn; closing the stream stops reading stdin
    yield* Stream.fromAsyncIterable(linesOf(process.stdin), (e) => e).pipe(
      Stream.orDie,
      Stream.runForEachWhile((line) =>
        Effect.gen(function* () {
          if (line._tag === "tooLong") {
            const n = ++total
            failed.push(n)
            yield* say(`codex-harness: message ${n} was not sent: its line is ${line.bytes} bytes, over the limit of ${maxLineBytes} bytes`)
            return true
          }
          const input = classify(line.text)
          if (input._tag === "blank") return true
          if (input._tag === "slash") {
            return (yield* runSlash(input.name, input.arg, { harness, queue, processes, state, say })) === "continue"
          }
          const n = ++total
          yield* view.begin
          const exit = yield* Effect.exit(turnFor(queue, state, view, input.text))
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
