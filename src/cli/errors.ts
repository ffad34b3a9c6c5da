// Turning any failure into one readable line and an exit code: 2 for usage, 1 for everything else.
import { ValidationError } from "@effect/cli"
import { Cause, Option, Schema } from "effect"
import { helpDocText } from "./helpDocText.js"

export class TurnDidNotComplete extends Schema.TaggedError<TurnDidNotComplete>()("TurnDidNotComplete", {
  status: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `the turn ended ${this.status}${this.detail === "" ? "" : `: ${this.detail}`}`
  }
}

/** A command line this CLI refuses before @effect/cli parses it (exit 2). */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { line: Schema.String }) {
  override get message() {
    return this.line
  }
}

/** Not a failure to report: the command ends with this exit status, saying nothing more (`exec` passes its command's on). */
export class ExitStatus extends Schema.TaggedError<ExitStatus>()("ExitStatus", { code: Schema.Int }) {
  override get message() {
    return `exit status ${this.code}`
  }
}

export interface Rendered {
  readonly line: string
  readonly exitCode: number
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()

/** A failure, as the single line printed on stderr. Never a stack trace. */
export const render = (cause: Cause.Cause<unknown>): Rendered | undefined => {
  if (Cause.isInterruptedOnly(cause)) return { line: "interrupted", exitCode: 1 }
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (ValidationError.isValidationError(error)) {
      // what @effect/cli found wrong with the command line (main.ts keeps it from printing its own coloured version)
      const text = oneLine(helpDocText(error.error))
      return { line: text === "" ? "invalid command line (`--help` shows the usage)" : text, exitCode: 2 }
    }
    if (error instanceof UsageError) return { line: oneLine(error.line), exitCode: 2 }
    if (error instanceof ExitStatus) return { line: "", exitCode: error.code }
    if (error instanceof Error) return { line: oneLine(error.message || error.name), exitCode: 1 }
    return { line: oneLine(String(error)), exitCode: 1 }
  }
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) {
    const d = defect.value
    return { line: `internal error: ${oneLine(d instanceof Error ? d.message : String(d))}`, exitCode: 1 }
  }
  return { line: "failed", exitCode: 1 }
}
