// Which help page a command line asks for. No imports: bin/codex-harness.js loads this alone to print `--help` from the
// pages the build wrote (dist/bundle/help.json), before anything else of the CLI is loaded.

export type HelpRequest =
  | { readonly _tag: "Page"; readonly text: string }
  /** `nosuch --help`: a word where a command of `parent` was expected */
  | { readonly _tag: "UnknownCommand"; readonly word: string; readonly parent: string }

/**
 * The help page `args` (the words after the command's name) asks for, if it asks for one: `-h` or `--help` before any
 * `--`, for the longest leading run of words that names a command (so `run --model x --help` is run's page). Undefined
 * when there is no help flag (asksForHelp, which needs no pages). Pages are keyed by command path ("" for the root, "sessions list").
 */
export const asksForHelp = (args: ReadonlyArray<string>): boolean => {
  const end = args.indexOf("--")
  const flags = end < 0 ? args : args.slice(0, end)
  return flags.includes("--help") || flags.includes("-h")
}

export const requestedPage = (args: ReadonlyArray<string>, pages: Readonly<Record<string, string>>): HelpRequest | undefined => {
  if (!asksForHelp(args)) return undefined
  const end = args.indexOf("--")
  const flags = end < 0 ? args : args.slice(0, end)
  let key = ""
  for (const word of flags) {
    if (word.startsWith("-")) break
    const next = key === "" ? word : `${key} ${word}`
    if (pages[next] === undefined) {
      // a page with subcommands wants one of them here; a leaf's next word is an argument (`threads show ID --help`)
      const hasCommands = Object.keys(pages).some((k) => k.startsWith(key === "" ? "" : `${key} `) && k !== key)
      if (hasCommands) return { _tag: "UnknownCommand", word, parent: key }
      break
    }
    key = next
  }
  const text = pages[key]
  return text === undefined ? undefined : { _tag: "Page", text }
}

/** the one line for an unknown command, and the exit code of a usage error */
export const unknownCommandLine = (name: string, request: { readonly word: string; readonly parent: string }) => {
  const parent = request.parent === "" ? name : `${name} ${request.parent}`
  return `${name}: unknown command '${request.word}' (\`${parent} --help\` lists the commands)`
}
