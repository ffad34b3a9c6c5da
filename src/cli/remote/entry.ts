// `codex-harness run --connect URL ...` and `chat --connect URL ...` without the CLI: bin/codex-harness.js loads this
// entry (dist/bundle/connect.cjs: the control API over Node's http, the event printer, the prompt reader) instead of the
// command line (Effect, @effect/cli, the harness), because a process per turn through a warm serve pays its start-up on
// every turn. What it does not take for sure (args.ts) it gives back (undefined), and the bin runs the CLI, which
// parses and refuses in its own words. Its output, failures and exit codes are the CLI's: one line `codex-harness:
// ...` on stderr, 2 for usage, 1 otherwise, 130 after Ctrl-C and 143 after SIGTERM (either interrupts this command's
// own turn first, as the CLI does).
import { ServeFileUnusable } from "../../control/ServeFileReads.js"
import { parse } from "./args.js"
import { chatRemote } from "./chat.js"
import type { CliFailure } from "./failures.js"
import * as HttpWire from "./httpWire.js"
import { readPrompt } from "./prompt.js"
import { runRemote } from "./run.js"
import { processOutput } from "./show.js"
import { connectTarget } from "./target.js"
import { RemoteUsageError } from "./usage.js"

const signalCodes: Readonly<Record<string, number>> = { SIGINT: 130, SIGTERM: 143 }

/** What a thrown failure reads as: a usage refusal (exit 2), an unusable serve file, or an internal error. */
const failureOf = (error: unknown): CliFailure =>
  error instanceof RemoteUsageError
    ? { line: error.line, exitCode: 2 }
    : error instanceof ServeFileUnusable
    ? { line: error.message, exitCode: 1 }
    : { line: `internal error: ${error instanceof Error ? error.message : String(error)}`, exitCode: 1 }

/** The command's exit code once it has run, or undefined when this entry does not take the command line. */
export const main = async (args: ReadonlyArray<string>): Promise<number | undefined> => {
  const parsed = parse(args)
  if (parsed === undefined) return undefined
  let prompt: string | undefined
  let target: { readonly url: string; readonly token: string }
  try {
    prompt = parsed.command === "run" ? await readPrompt(parsed.prompt) : undefined
    target = connectTarget(parsed.connect, parsed.stateDir)
  } catch (error) {
    return failed(failureOf(error))
  }
  // from here Ctrl-C and SIGTERM interrupt this command's turn before it ends (until now they ended it at once)
  const stop = new AbortController()
  let signal: string | undefined
  const onSignal = (name: NodeJS.Signals) => {
    signal ??= name
    stop.abort()
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
  const wire = HttpWire.make(target)
  let outcome: CliFailure | undefined
  try {
    outcome = parsed.command === "run"
      ? await runRemote(wire, target.url, {
        session: parsed.session,
        last: parsed.last,
        prompt: prompt!,
        model: parsed.model,
        turnKind: parsed.turnKind,
        approvals: parsed.approvals,
        json: parsed.json,
        outputLastMessage: parsed.outputLastMessage
      }, processOutput, stop.signal)
      : await chatRemote(wire, target.url, { session: parsed.session, last: parsed.last, model: parsed.model }, processOutput, stop.signal)
  } catch (error) {
    outcome = failureOf(error)
  } finally {
    wire.close()
    process.off("SIGINT", onSignal)
    process.off("SIGTERM", onSignal)
  }
  if (signal !== undefined) return signalCodes[signal] ?? 1
  return outcome === undefined ? 0 : failed(outcome)
}

/** prints the failure's line (if it has one) and gives its exit code */
const failed = (outcome: CliFailure): number => {
  if (outcome.line !== "") process.stderr.write(`codex-harness: ${outcome.line.replace(/\s+/g, " ").trim()}\n`)
  return outcome.exitCode
}
