// One `doctor` check: what it found, as one line (`ok   …`, `FAIL <check>: <why>`, `skip <check>: <why>`), never
// longer than its time bound. A check that does not finish in time fails saying so; one that dies (a bug) fails with
// the defect's message, so every check always gets its line and the next one still runs.
import { Data, Duration, Effect, Option } from "effect"
import { spawn } from "node:child_process"
import { oneLine } from "../../session/SessionTable.js"

export class CheckFailed extends Data.TaggedError("CheckFailed")<{ readonly reason: string }> {}
export class CheckSkipped extends Data.TaggedError("CheckSkipped")<{ readonly reason: string }> {}

export const failed = (reason: string) => new CheckFailed({ reason })
export const skipped = (reason: string) => new CheckSkipped({ reason })

/** what a check that passed says (the whole text after `ok`), and what later checks may use of what it found */
export interface Passed<A> {
  readonly text: string
  readonly value: A
}
export const passed = (text: string): Passed<void> => ({ text, value: undefined })
export const passedWith = <A>(text: string, value: A): Passed<A> => ({ text, value })

export type Status = "ok" | "fail" | "skip"

/** one check's outcome, as `--json` prints it */
export interface CheckResult {
  readonly check: string
  readonly status: Status
  readonly detail: string
}

/** The line a person reads. Everything in it is made safe for a terminal: reasons quote paths and other programs. */
export const line = (result: CheckResult): string => {
  const detail = oneLine(result.detail, Number.POSITIVE_INFINITY)
  switch (result.status) {
    case "ok":
      return `ok   ${detail}`
    case "fail":
      return `FAIL ${result.check}: ${detail}`
    case "skip":
      return `skip ${result.check}: ${detail}`
  }
}

const seconds = (d: Duration.DurationInput) => Duration.toSeconds(Duration.decode(d))

/**
 * Runs one check within `bound`. Its outcome is a result, never a failure; only errors that are not about the check
 * (E: a usage error, which ends the command as it would any other) pass through. The value is there when it passed.
 */
export const runCheck = <A, E, R>(
  check: string,
  bound: Duration.DurationInput,
  effect: Effect.Effect<Passed<A>, CheckFailed | CheckSkipped | E, R>
): Effect.Effect<{ readonly result: CheckResult; readonly value: Option.Option<A> }, E, R> =>
  effect.pipe(
    Effect.timeoutFail({ duration: bound, onTimeout: () => failed(`no result within ${seconds(bound)} s`) }),
    Effect.map((ok) => ({ result: { check, status: "ok" as const, detail: ok.text }, value: Option.some(ok.value) })),
    Effect.catchIf(
      (e): e is CheckFailed | CheckSkipped => e instanceof CheckFailed || e instanceof CheckSkipped,
      (e) =>
        Effect.succeed({
          result: { check, status: e._tag === "CheckFailed" ? ("fail" as const) : ("skip" as const), detail: e.reason },
          value: Option.none<A>()
        })
    ),
    Effect.catchAllDefect((defect) =>
      Effect.succeed({
        result: { check, status: "fail" as const, detail: `internal error: ${defect instanceof Error ? defect.message : String(defect)}` },
        value: Option.none<A>()
      })
    )
  )

export interface Ran {
  readonly code: number | null
  readonly signal: string | null
  readonly stdout: string
  readonly stderr: string
}

/** what is kept of a program's output: a version line or a hook's answer is short, a runaway one is not read whole */
const maxOutputChars = 64 * 1024

/**
 * Runs a program to its end with `input` on stdin, killed (SIGKILL) past `timeoutMs` or when the check is interrupted
 * (its time bound), so no process outlives its check.
 */
export const runProgram = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly timeoutMs: number; readonly input?: string; readonly env?: NodeJS.ProcessEnv }
): Effect.Effect<Ran, CheckFailed> =>
  Effect.async<Ran, CheckFailed>((resume) => {
    let done = false
    const finish = (result: Effect.Effect<Ran, CheckFailed>) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(result)
    }
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env: options.env ?? process.env })
    let stdout = ""
    let stderr = ""
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => (stdout = (stdout + chunk).slice(0, maxOutputChars)))
    child.stderr.on("data", (chunk: string) => (stderr = (stderr + chunk).slice(0, maxOutputChars)))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs)
    child.once("error", (e) => finish(Effect.fail(failed(`cannot run ${command}: ${e.message}`))))
    child.once("close", (code, signal) => finish(Effect.succeed({ code, signal, stdout, stderr })))
    // a program that exits without reading its input must not fail the write
    child.stdin.on("error", () => {})
    child.stdin.end(options.input ?? "")
    return Effect.sync(() => {
      clearTimeout(timer)
      child.kill("SIGKILL")
    })
  })

/** the first non-empty line of a program's output, for a reason */
export const firstLine = (text: string): string => text.split("\n").find((l) => l.trim() !== "")?.trim() ?? ""
