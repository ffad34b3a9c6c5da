// `run` and `chat` through a serve as Effects, for the CLI when it runs them itself (a serve found for the state dir,
// or a command line the --connect entry left to it): the same plain code as entry.ts (run.ts, chat.ts), its outcome as
// the CLI's failures, and an interruption (Ctrl-C, SIGTERM: runMain interrupts the program) passed on as the abort
// that interrupts this command's turn, waited for, so the serve is told before the process exits.
import { Effect, Schema } from "effect"
import type * as ControlWire from "../../control/ControlWire.js"
import { ExitStatus, UsageError } from "../errors.js"
import { type RemoteChat, chatRemote } from "./chat.js"
import * as HttpWire from "./httpWire.js"
import type { CliFailure } from "./failures.js"
import { type RemoteRun, runRemote } from "./run.js"
import { processOutput } from "./show.js"
import type { Target } from "./target.js"

/** a command through a serve that failed: its one line, exit 1 */
export class ServeCommandFailed extends Schema.TaggedError<ServeCommandFailed>()("ServeCommandFailed", { line: Schema.String }) {
  override get message() {
    return this.line
  }
}

const through = (target: Target, use: (wire: ControlWire.Wire, stop: AbortSignal) => Promise<CliFailure | undefined>) =>
  Effect.async<CliFailure | undefined>((resume) => {
    const stop = new AbortController()
    const wire = HttpWire.make(target)
    const done = use(wire, stop.signal).finally(() => wire.close())
    done.then((outcome) => resume(Effect.succeed(outcome)), (defect: unknown) => resume(Effect.die(defect)))
    // interrupted: the turn is interrupted (bounded, run.ts) and that is waited for
    return Effect.promise(() => {
      stop.abort()
      return done.catch(() => undefined)
    })
  }).pipe(
    Effect.flatMap((outcome): Effect.Effect<void, UsageError | ExitStatus | ServeCommandFailed> =>
      outcome === undefined
        ? Effect.void
        : outcome.exitCode === 2
        ? Effect.fail(new UsageError({ line: outcome.line }))
        : outcome.line === ""
        ? Effect.fail(new ExitStatus({ code: outcome.exitCode }))
        : Effect.fail(new ServeCommandFailed({ line: outcome.line })))
  )

export const runThrough = (target: Target, run: RemoteRun) =>
  through(target, (wire, stop) => runRemote(wire, target.url, run, processOutput, stop))

export const chatThrough = (target: Target, chat: RemoteChat) =>
  through(target, (wire, stop) => chatRemote(wire, target.url, chat, processOutput, stop))
