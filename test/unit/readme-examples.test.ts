// Every codex-harness command line in the README's `sh` examples, and every example on a help page, is one the CLI
// accepts: a real command, flags it knows with values that fit (src/cli/argv.ts, the check the CLI runs before
// parsing). A flag renamed or removed without its examples fails here.
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { scanFlags } from "../../src/cli/argv.js"
import { examples, helpTree } from "../../src/cli/commands/root.js"
import { commandAt } from "../../src/cli/help.js"

/** a shell command line's words: quotes removed, a `#` comment and redirections dropped; enough for the examples */
const words = (line: string): Array<string> => {
  const out: Array<string> = []
  let word: string | undefined
  let quote: string | undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (quote !== undefined) {
      if (c === quote) quote = undefined
      else word = (word ?? "") + c
    } else if (c === "'" || c === '"') {
      quote = c
      word ??= ""
    } else if (c === " " || c === "\t") {
      if (word !== undefined) out.push(word)
      word = undefined
    } else if (c === "#" && word === undefined) break
    else word = (word ?? "") + c
  }
  if (word !== undefined) out.push(word)
  const redirect = out.findIndex((w) => w === ">" || w === ">>" || w === "<" || w === "|")
  return redirect < 0 ? out : out.slice(0, redirect)
}

/** the codex-harness invocations of a shell line (after `npx`, after a pipe), as argument lists */
const invocations = (line: string): Array<Array<string>> =>
  line.split(/\|(?!\|)/).flatMap((part) => {
    const w = words(part.trim())
    const at = w.indexOf("codex-harness")
    return at < 0 || (at > 0 && w[at - 1] !== "npx") ? [] : [w.slice(at + 1)]
  })

const check = (args: ReadonlyArray<string>) => {
  const shape = commandAt(helpTree, args)
  const scanned = scanFlags("codex-harness", shape, args.slice(shape.path.length))
  return { error: scanned.error, needsSubcommand: shape.subcommands.length > 0 && scanned.positionals.length === 0 && !scanned.flags.includes("--help") }
}

describe("documented command lines", () => {
  it("every codex-harness line of the README's sh examples is accepted", () => {
    const readme = fs.readFileSync(path.resolve("README.md"), "utf8")
    const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)
    const lines = blocks.flatMap((b) => b.split("\n")).filter((l) => /(^|\s|\|)(npx )?codex-harness\s/.test(l))
    expect(lines.length).toBeGreaterThan(3)
    for (const line of lines) {
      for (const args of invocations(line)) expect({ line, ...check(args) }).toEqual({ line, error: undefined, needsSubcommand: false })
    }
  })

  it("every example on a help page is accepted", () => {
    for (const [page, lines] of Object.entries(examples)) {
      for (const line of lines) {
        for (const args of invocations(line)) expect({ page, line, ...check(args) }).toEqual({ page, line, error: undefined, needsSubcommand: false })
      }
    }
  })
})
