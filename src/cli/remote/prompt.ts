// Where `run` gets its prompt: the PROMPT argument, or stdin for `-` or for no argument with input piped (a prompt
// longer than the argument limit, or made by another program). A terminal on stdin with no PROMPT is a usage error, not
// a wait for typing; an empty prompt is never sent to a model. Plain (no Effect): the --connect client reads its
// prompt with this, and runPrompt.ts gives the rest of the CLI the same as Effects.
import { RemoteUsageError } from "./usage.js"

/** how much of stdin a prompt may take: far beyond any model's context, still a bound */
export const maxPromptBytes = 16 * 1024 * 1024

/** the longest prompt a serve takes (schemas/control.ts maxPromptChars; test/unit/remote-args.test.ts holds them equal) */
export const maxServePromptChars = 1024 * 1024

/** why a serve would refuse this prompt (its schema's bound), as the usage line to say before sending it */
export const servePromptProblem = (prompt: string): string | undefined =>
  prompt.length > maxServePromptChars
    ? `the prompt is ${prompt.length} characters: a serve takes at most ${maxServePromptChars} (1 MiB); run it without a serve`
    : undefined

/** All of stdin, up to `maxBytes`; `what` names it in the one-line errors (a prompt, a token). */
export const readStdin = (maxBytes: number, what = "the prompt"): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        cleanup()
        process.stdin.pause()
        reject(new RemoteUsageError(`${what} on stdin is over ${maxBytes >= 1024 * 1024 ? `${maxBytes / 1024 / 1024} MiB` : `${maxBytes / 1024} KiB`}`))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resolve(Buffer.concat(chunks).toString("utf8"))
    }
    const onError = (error: Error) => {
      cleanup()
      reject(new RemoteUsageError(`cannot read ${what} from stdin: ${error.message}`))
    }
    const cleanup = () => {
      process.stdin.off("data", onData)
      process.stdin.off("end", onEnd)
      process.stdin.off("error", onError)
    }
    process.stdin.on("data", onData)
    process.stdin.once("end", onEnd)
    process.stdin.once("error", onError)
  })

export const readPrompt = async (argument: string | undefined): Promise<string> => {
  const fromStdin = argument === undefined || argument === "-"
  if (fromStdin && process.stdin.isTTY === true) throw new RemoteUsageError("no PROMPT: give one, or pipe it on stdin (`-` reads it from there)")
  const prompt = fromStdin ? await readStdin(maxPromptBytes) : argument
  if (prompt.trim() === "") throw new RemoteUsageError(fromStdin ? "the prompt on stdin is empty" : "the prompt is empty")
  return prompt
}
