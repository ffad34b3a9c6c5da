// Checks a command line before @effect/cli parses it, so every usage error names the flag and nothing the user did not
// mean reaches a model. @effect/cli takes an unknown `--frobnicate` as the PROMPT argument (and `run --frobnicate hi`
// then complains about 'hi'), and its value errors ("'abc' is not a integer") do not say which flag they are about.
import type { OptionSpec } from "./help.js"

/** @effect/cli's own options, valid everywhere (`--wizard` is not: it waits for a terminal that a pipe never gives) */
const builtIns: ReadonlyArray<OptionSpec> = [
  { names: ["-h", "--help"], kind: "boolean", choices: [] },
  { names: ["--version"], kind: "boolean", choices: [] },
  { names: ["--log-level"], kind: "choice", choices: ["all", "trace", "debug", "info", "warning", "error", "fatal", "none"] },
  { names: ["--completions"], kind: "choice", choices: ["sh", "bash", "fish", "zsh"] }
]

export interface CommandShape {
  /** the command's words after the program's name ("sessions list") */
  readonly path: ReadonlyArray<string>
  readonly options: ReadonlyArray<OptionSpec>
  readonly subcommands: ReadonlyArray<string>
}

export interface Scanned {
  /** the one-line usage error, if the flags are wrong */
  readonly error?: string
  /** the flags given, by the name they were given with */
  readonly flags: ReadonlyArray<string>
  /** the words that are neither flags nor their values */
  readonly positionals: ReadonlyArray<string>
}

/**
 * The flags and arguments of `args` (the words after the command's path), with a one-line usage error when a flag is
 * unknown or its value does not fit. `--` ends the flags: what follows is arguments, however it starts.
 */
export const scanFlags = (program: string, shape: CommandShape, args: ReadonlyArray<string>): Scanned => {
  const flags: Array<string> = []
  const positionals: Array<string> = []
  const error = firstError(program, shape, args, flags, positionals)
  return error === undefined ? { flags, positionals } : { error, flags, positionals }
}

const firstError = (
  program: string,
  shape: CommandShape,
  args: ReadonlyArray<string>,
  flags: Array<string>,
  positionals: Array<string>
): string | undefined => {
  const command = [program, ...shape.path].join(" ")
  const see = `\`${command} --help\` lists them`
  const known = [...shape.options, ...builtIns]
  for (let i = 0; i < args.length; i++) {
    const word = args[i]!
    if (word === "--") {
      positionals.push(...args.slice(i + 1))
      return undefined
    }
    if (!word.startsWith("-") || word === "-") {
      if (shape.subcommands.length > 0 && i === 0) return `unknown command '${word}' for \`${command}\` (${see})`
      positionals.push(word)
      continue
    }
    const equals = word.indexOf("=")
    const name = word.startsWith("--") && equals > 0 ? word.slice(0, equals) : word
    const spec = known.find((o) => o.names.includes(name))
    flags.push(name)
    if (spec === undefined) {
      const hint = /^-[^-]{2,}$/.test(word) ? ` (long options take two dashes: -${word})` : ""
      return `unknown option '${name}' for \`${command}\`${hint} (${see})`
    }
    if (spec.kind === "boolean") {
      if (equals > 0 && !["true", "false"].includes(word.slice(equals + 1))) return `${name} takes no value`
      continue
    }
    let value: string | undefined
    if (equals > 0) value = word.slice(equals + 1)
    else {
      value = args[i + 1]
      i++
    }
    // `--model --json`: the flag's value was forgotten, and the next flag is not it
    if (value === undefined || (equals < 0 && known.some((o) => o.names.includes(value!)))) return `${name} needs a value`
    if (spec.kind === "integer" && !/^-?\d+$/.test(value)) return `${name} wants a whole number, not '${value}'`
    if (spec.kind === "choice" && !spec.choices.includes(value)) {
      return `${name} is one of ${spec.choices.join(", ")}, not '${value}'`
    }
  }
  return undefined
}
