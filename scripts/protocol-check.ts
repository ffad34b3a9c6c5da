// `node dist/scripts/protocol-check.js`: holds schemas/protocol.ts to the JSON schema the pinned codex binary generates.
// Prints one summary line, or one line per problem and exits 1. Failures are printed as one line, never a stack.
import { Cause, Effect, Exit } from "effect"
import { runCheck, summarize } from "../src/appserver/ProtocolCheck.js"

const firstLine = (s: string): string => s.split("\n")[0] ?? s

const program = runCheck().pipe(
  Effect.map((report) => {
    const lines = summarize(report)
    if (report.problems.length === 0) {
      lines.forEach((l) => console.log(l))
      return 0
    }
    lines.forEach((l) => console.error(l))
    console.error(`protocol check: ${report.problems.length} problem${report.problems.length === 1 ? "" : "s"}`)
    return 1
  }),
  Effect.catchAll((error) => Effect.sync(() => (console.error(`protocol check failed: ${error.message}`), 1)))
)

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isSuccess(exit)) {
    process.exitCode = exit.value
  } else {
    const squashed = Cause.squash(exit.cause)
    console.error(`protocol check failed: ${firstLine(squashed instanceof Error ? squashed.message : String(squashed))}`)
    process.exitCode = 1
  }
})
