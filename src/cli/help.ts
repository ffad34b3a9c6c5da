// The command line's help pages, written here instead of printed by @effect/cli: its pages put every flag of every
// subcommand on one usage line (up to 450 columns), repeat "A user-defined piece of text." under each option, and colour
// the text even when it goes to a pipe. These pages are plain text wrapped at 80 columns, made from the same command
// tree (names, flags, descriptions) through @effect/cli's own HelpDoc, so a flag added there shows up here.
//
// They depend on nothing but the tree, so the build writes every page to dist/bundle/help.json and the package's
// command prints `--help` from that file without loading the CLI (bin/codex-harness.js); helpPages is what both use.
import { CliConfig, Command, type HelpDoc } from "@effect/cli"
import { blocks, spanText } from "./helpDocText.js"

const width = 80
const termColumn = 28

export interface Entry {
  readonly term: string
  readonly text: string
}

/** What the command line checks of an option before @effect/cli parses it (argv.ts). */
export interface OptionSpec {
  readonly names: ReadonlyArray<string>
  readonly kind: "boolean" | "integer" | "text" | "choice"
  readonly choices: ReadonlyArray<string>
}

/** `--sandbox read-only | workspace-write`, `(-m, --model text)`, `--json`: names and the kind of value */
const specOf = (rawTerm: string): OptionSpec | undefined => {
  const match = /^((?:-{1,2}[\w-]+)(?:, -{1,2}[\w-]+)*)(?: (.*))?$/.exec(rawTerm.replace(/^\((.*)\)$/, "$1"))
  if (match === null) return undefined
  const names = match[1]!.split(", ")
  const value = match[2]
  if (value === undefined) return { names, kind: "boolean", choices: [] }
  if (value.includes(" | ")) return { names, kind: "choice", choices: value.split(" | ") }
  return { names, kind: value === "integer" ? "integer" : "text", choices: [] }
}

interface Page {
  readonly path: ReadonlyArray<string>
  readonly description: string
  readonly args: ReadonlyArray<Entry>
  readonly options: ReadonlyArray<Entry>
  readonly commands: ReadonlyArray<Entry>
}

const paragraphs = (doc: HelpDoc.HelpDoc): ReadonlyArray<string> =>
  blocks(doc).flatMap((block) => (block._tag === "Paragraph" ? [spanText(block.value)] : []))

/** the sentences @effect/cli adds to every option, which say nothing its term does not */
const boilerplate = /^(A user-defined piece of text\.|A true or false value\.|An integer\.|A floating point number\.|This setting is optional\.)$/

/** an option's term and description: `--sandbox read-only | ...` becomes `--sandbox <mode>` and "one of: ..." */
const optionEntry = (rawTerm: string, doc: HelpDoc.HelpDoc): Entry => {
  const texts = paragraphs(doc).filter((p) => !boilerplate.test(p))
  const choices = texts.find((p) => p.startsWith("One of the following: "))
  const described = texts.filter((p) => p !== choices).join(" ")
  let term = rawTerm.replace(/^\((.*)\)$/, "$1")
  if (choices !== undefined) term = term.replace(/ [^ ]+( \| [^ ]+)+$/, " <choice>")
  else term = term.replace(/ (text|integer)$/, (_, type: string) => ` <${type}>`)
  const oneOf = choices === undefined ? "" : ` (one of: ${choices.slice("One of the following: ".length)})`
  return { term, text: described + oneOf }
}

/** @effect/cli's own options, which it adds to every command; the pages list the ones that work everywhere once */
const builtIn = /^(--completions|--log-level|-h, --help|--wizard|--version)\b/

const sections = (doc: HelpDoc.HelpDoc) => {
  const found = new Map<string, Array<HelpDoc.HelpDoc>>()
  let current = ""
  for (const block of blocks(doc)) {
    if (block._tag === "Header") found.set((current = spanText(block.value)), [])
    else found.get(current)?.push(block)
  }
  const definitions = (name: string) =>
    (found.get(name) ?? []).flatMap((block) => (block._tag === "DescriptionList" ? block.definitions : []))
  return {
    description: (found.get("DESCRIPTION") ?? []).flatMap((b) => (b._tag === "Paragraph" ? [spanText(b.value)] : [])).join(" "),
    args: definitions("ARGUMENTS").map(([term, text]) => ({
      term: spanText(term).replace(/^<(.*)>$/, "$1"),
      text: paragraphs(text).filter((p) => !boilerplate.test(p)).join(" ")
    })),
    options: definitions("OPTIONS")
      .map(([term, text]) => optionEntry(spanText(term), text))
      .filter((option) => !builtIn.test(option.term)),
    specs: definitions("OPTIONS").flatMap(([term]) => {
      const spec = specOf(spanText(term))
      return spec === undefined || builtIn.test(spec.names.join(", ")) ? [] : [spec]
    })
  }
}

/** A command and its subcommands, in the order they are listed. */
export interface HelpTree {
  readonly command: Command.Command<any, any, any, any>
  readonly children: ReadonlyArray<HelpTree>
}

const nameOf = (tree: HelpTree) => [...Command.getNames(tree.command)][0] ?? ""

const pagesOf = (tree: HelpTree, path: ReadonlyArray<string>): Array<Page> => {
  const { args, description, options } = sections(Command.getHelp(tree.command, CliConfig.defaultConfig))
  const childPages = tree.children.flatMap((child) => pagesOf(child, [...path, nameOf(child)]))
  const commands = tree.children.map((child) => ({
    term: nameOf(child),
    text: childPages.find((p) => p.path.length === path.length + 1 && p.path[path.length] === nameOf(child))?.description ?? ""
  }))
  return [{ path, description, args, options, commands }, ...childPages]
}

/** The command `words` name (the longest leading run of command names), its options and subcommands. */
export const commandAt = (tree: HelpTree, words: ReadonlyArray<string>) => {
  let node = tree
  const path: Array<string> = []
  for (const word of words) {
    const child = node.children.find((c) => nameOf(c) === word)
    if (child === undefined) break
    node = child
    path.push(word)
  }
  const { args, specs } = sections(Command.getHelp(node.command, CliConfig.defaultConfig))
  return { path, options: specs, args: args.length, subcommands: node.children.map(nameOf) }
}

/** text wrapped at `width`, every line after the first indented by `indent` */
export const wrap = (text: string, indent: number, firstWidth = width - indent): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  let room = firstWidth
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line !== "" && line.length + 1 + word.length > room) {
      lines.push(line)
      line = word
      room = width - indent
    } else line = line === "" ? word : `${line} ${word}`
  }
  if (line !== "") lines.push(line)
  return lines.map((l, i) => (i === 0 ? l : " ".repeat(indent) + l))
}

const entryLines = (entries: ReadonlyArray<Entry>): Array<string> =>
  entries.flatMap(({ term, text }) => {
    const head = `  ${term}`
    if (text === "") return [head]
    if (head.length + 2 <= termColumn) {
      const [first = "", ...rest] = wrap(text, termColumn)
      return [head.padEnd(termColumn) + first, ...rest]
    }
    return [head, ...wrap(text, termColumn).map((l, i) => (i === 0 ? " ".repeat(termColumn) + l : l))]
  })

const helpOption: Entry = { term: "-h, --help", text: "print this help" }
const rootOptions: ReadonlyArray<Entry> = [
  helpOption,
  { term: "--version", text: "print the version" },
  { term: "--log-level <choice>", text: "the least level of log lines printed on stderr (one of: all, trace, debug, info, warning, error, fatal, none)" }
]

const renderPage = (page: Page, name: string, version: string, examples: ReadonlyArray<string>): string => {
  const command = [name, ...page.path].join(" ")
  const isRoot = page.path.length === 0
  const usage = [
    command,
    ...(page.commands.length > 0 ? ["<command>"] : []),
    ...(page.options.length > 0 || isRoot ? ["[options]"] : []),
    ...page.args.map((a) => a.term)
  ].join(" ")
  const out: Array<string> = [
    ...wrap(isRoot ? `${name} ${version}: ${page.description}` : `${command}: ${page.description}`, 2),
    "",
    ...wrap(`Usage: ${usage}`, 7)
  ]
  const section = (title: string, entries: ReadonlyArray<Entry>) => {
    if (entries.length > 0) out.push("", `${title}:`, ...entryLines(entries))
  }
  section("Commands", page.commands)
  section("Arguments", page.args)
  section("Options", [...page.options, ...(isRoot ? rootOptions : [helpOption])])
  if (examples.length > 0) out.push("", "Examples:", ...examples.flatMap((e) => wrap(`$ ${e}`, 6, width - 2).map((l, i) => (i === 0 ? `  ${l}` : l))))
  if (page.commands.length > 0) out.push("", ...wrap(`\`${command} <command> --help\` describes a command.`, 0))
  return out.join("\n") + "\n"
}

/**
 * Every help page of the tree, keyed by its command path joined with spaces ("" for the root, "sessions list").
 * `examples` has the same keys.
 */
export const helpPages = (
  tree: HelpTree,
  version: string,
  examples: Readonly<Record<string, ReadonlyArray<string>>>
): Record<string, string> => {
  const name = nameOf(tree)
  const pages = pagesOf(tree, [])
  return Object.fromEntries(pages.map((page) => [page.path.join(" "), renderPage(page, name, version, examples[page.path.join(" ")] ?? [])]))
}
