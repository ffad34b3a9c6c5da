// A bench's command-line flags, read with Node's own `util.parseArgs` in strict mode: an unknown flag, a stray argument
// or a count that is not a whole number above 0 is one line and exit 2, never a bench run on a silent default.
import { parseArgs } from "node:util"

export interface BenchArgs {
  /** a `--name N` count, `fallback` when absent */
  readonly count: (name: string, fallback: number) => number
  /** whether a `--name` switch was given */
  readonly has: (name: string) => boolean
}

/** `counts` take a value (`--turns 25` or `--turns=25`); `switches` take none */
export const benchArgs = (bench: string, usage: string, spec: { readonly counts?: ReadonlyArray<string>; readonly switches?: ReadonlyArray<string> }): BenchArgs => {
  const fail = (line: string): never => {
    console.error(`${bench}: ${line}\n${usage}`)
    process.exit(2)
  }
  const options = Object.fromEntries([
    ...(spec.counts ?? []).map((name) => [name, { type: "string" as const }]),
    ...(spec.switches ?? []).map((name) => [name, { type: "boolean" as const }])
  ])
  let values: Record<string, string | boolean | undefined> = {}
  try {
    values = parseArgs({ args: process.argv.slice(2), options, strict: true, allowPositionals: false }).values as typeof values
  } catch (error) {
    fail(error instanceof Error ? (error.message.split("\n")[0] ?? "bad arguments") : "bad arguments")
  }
  return {
    count: (name, fallback) => {
      const raw = values[name]
      if (raw === undefined) return fallback
      const value = Number(raw)
      return Number.isInteger(value) && value >= 1 ? value : fail(`--${name} takes a whole number above 0, got ${JSON.stringify(raw)}`)
    },
    has: (name) => values[name] === true
  }
}
