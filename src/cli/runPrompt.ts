// Where `run` gets its prompt, as Effects for the commands written with them: the rules are remote/prompt.ts's, which
// the --connect client uses without Effect.
import { Effect, Option } from "effect"
import { UsageError } from "./errors.js"
import * as Plain from "./remote/prompt.js"
import { RemoteUsageError } from "./remote/usage.js"

export const maxPromptBytes = Plain.maxPromptBytes

const asUsage = (e: unknown) => new UsageError({ line: e instanceof RemoteUsageError ? e.line : String(e) })

/** All of stdin, up to `maxBytes`; `what` names it in the one-line errors (a prompt, a token). */
export const readStdin = (maxBytes: number, what = "the prompt"): Effect.Effect<string, UsageError> =>
  Effect.tryPromise({ try: () => Plain.readStdin(maxBytes, what), catch: asUsage })

export const readPrompt = (argument: Option.Option<string>): Effect.Effect<string, UsageError> =>
  Effect.tryPromise({ try: () => Plain.readPrompt(Option.getOrUndefined(argument)), catch: asUsage })
