// Where `run` gets its prompt: the PROMPT argument, or stdin for `-` or for no argument with input piped (a prompt
// longer than the argument limit, or made by another program). A terminal on stdin with no PROMPT is a usage error, not
// a wait for typing; an empty prompt is never sent to a model.
import { Effect, Option } from "effect"
import { UsageError } from "./errors.js"

/** how much of stdin a prompt may take: far beyond any model's context, still a bound */
export const maxPromptBytes = 16 * 1024 * 1024

/** All of stdin, up to `maxBytes`; `what` names it in the one-line errors (a prompt, a token). */
export const readStdin = (maxBytes: number, what = "the prompt") =>
  Effect.async<string, UsageError>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        cleanup()
        process.stdin.pause()
        resume(Effect.fail(new UsageError({ line: `${what} on stdin is over ${maxBytes >= 1024 * 1024 ? `${maxBytes / 1024 / 1024} MiB` : `${maxBytes / 1024} KiB`}` })))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
    }
    const onError = (error: Error) => {
      cleanup()
      resume(Effect.fail(new UsageError({ line: `cannot read ${what} from stdin: ${error.message}` })))
    }
    const cleanup = () => {
      process.stdin.off("data", onData)
      process.stdin.off("end", onEnd)
      process.stdin.off("error", onError)
    }
    process.stdin.on("data", onData)
    process.stdin.once("end", onEnd)
    process.stdin.once("error", onError)
    return Effect.sync(() => {
      cleanup()
      process.stdin.pause()
    })
  })

export const readPrompt = (argument: Option.Option<string>): Effect.Effect<string, UsageError> =>
  Effect.gen(function* () {
    const fromStdin = Option.isNone(argument) || argument.value === "-"
    if (fromStdin && process.stdin.isTTY === true) {
      return yield* new UsageError({ line: "no PROMPT: give one, or pipe it on stdin (`-` reads it from there)" })
    }
    const prompt = fromStdin ? yield* readStdin(maxPromptBytes) : argument.value
    if (prompt.trim() === "") {
      return yield* new UsageError({ line: fromStdin ? "the prompt on stdin is empty" : "the prompt is empty" })
    }
    return prompt
  })
