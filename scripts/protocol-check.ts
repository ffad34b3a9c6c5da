// `node dist/scripts/protocol-check.js [codex-binary]`: runs protocol-check/ to hold schemas/protocol.ts to the JSON
// schema the pinned codex binary generates. Prints one summary line, or one line per problem and exits 1; a failure
// to run the check is one line too, never a stack.
import { NodeFileSystem } from "@effect/platform-node"
import { Cause, Effect, Exit } from "effect"
import { resolve } from "../src/appserver/CodexBinary.js"
import { runCheck, summarize } from "./protocol-check/index.js"

const firstLine = (s: string): string => s.split("\n")[0] ?? s

const program = resolve(process.argv[2]).pipe(
  Effect.flatMap((codex) => runCheck(codex)),
  Effect.map((report) => {
    const lines = summarize(report)
    if (report.problems.length === 0) {
      lines.forEach((l) => console.log(l))
      return 0
    }
    lines.forEach((l) => console.error(l))
    return 1
  }),
  Effect.catchAll((error) => Effect.sync(() => (console.error(`protocol check failed: ${error.message}`), 1))),
  Effect.provide(NodeFileSystem.layer)
)

Effect.runPromiseExit(program).then((exit) => {
  if (Exit.isSuccess(exit)) {
    process.exitCode = exit.value
  } else {
    const squashed = Cause.squash(exit.cause)
    const message = squashed instanceof Error ? squashed.message : String(squashed)
    console.error(`protocol check failed: ${firstLine(message)}`)
    process.exitCode = 1
  }
})
