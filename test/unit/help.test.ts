// The help pages: plain text that reads at 80 columns, every option and argument described, an example per command;
// the copy the build renders for the fast `--help` is the same text; which page a command line asks for.
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { examples, helpTree } from "../../src/cli/commands/root.js"
import { helpPages } from "../../src/cli/help.js"
import { requestedPage } from "../../src/cli/helpRequest.js"
import { packageVersion } from "../../src/cli/version.js"

const pages = helpPages(helpTree, packageVersion(), examples)

/** the option and argument lines of a page: "  --flag <text>   description" and its continuation lines */
const entriesOf = (page: string, section: string) => {
  const lines = page.split("\n")
  const start = lines.indexOf(`${section}:`)
  if (start < 0) return []
  const body = lines.slice(start + 1, lines.indexOf("", start))
  return body.filter((l) => /^ {2}\S/.test(l)).map((l, i, heads) => {
    const next = heads[i + 1]
    const from = body.indexOf(l)
    const to = next === undefined ? body.length : body.indexOf(next)
    return body.slice(from, to).join(" ").replace(/\s+/g, " ").trim()
  })
}

describe("help pages", () => {
  it("there is a page per command, each plain text within 80 columns with an example", () => {
    expect(Object.keys(pages).sort()).toEqual(Object.keys(examples).sort())
    for (const [key, page] of Object.entries(pages)) {
      expect(page, key).not.toMatch(/\u001b/)
      for (const line of page.split("\n")) expect(line.length, `${key}: ${line}`).toBeLessThanOrEqual(80)
      expect(page, key).toMatch(new RegExp(`^Usage: codex-harness${key === "" ? "" : ` ${key}`}\\b`, "m"))
      expect(page, key).toContain("Examples:\n  $ codex-harness")
      expect(page, key).not.toContain("A user-defined piece of text")
    }
  })

  it("every option and argument has a description, and @effect/cli's own options are listed once", () => {
    for (const [key, page] of Object.entries(pages)) {
      for (const section of ["Options", "Arguments"]) {
        for (const entry of entriesOf(page, section)) {
          // a term, then at least two words of description
          expect(entry, `${key}: ${entry}`).toMatch(/^\S+(, \S+)?( <\w+>)?\s+\S+ \S+/)
        }
      }
      expect(page.match(/-h, --help/g)?.length, key).toBe(1)
      expect(page, key).not.toContain("--wizard")
    }
    expect(pages[""]).toContain("--version")
    expect(pages["run"]).toMatch(/--sandbox <choice> +Codex sandbox \(default: read-only\) \(one of:\s+read-only,/)
  })

  it("a parent lists its commands in their declared order, each with its description", () => {
    expect(entriesOf(pages["sessions"]!, "Commands").map((e) => e.split(" ")[0])).toEqual(["list", "show", "delete", "repair", "redact"])
    expect(entriesOf(pages[""]!, "Commands")[0]).toBe("run run one turn and print the final assistant reply")
  })

  it("the page a command line asks for: the longest run of command words before the help flag", () => {
    const page = (args: ReadonlyArray<string>) => {
      const request = requestedPage(args, pages)
      return request?._tag === "Page" ? request.text : request
    }
    expect(page(["--help"])).toBe(pages[""])
    expect(page(["run", "--model", "x", "--help"])).toBe(pages["run"])
    expect(page(["threads", "show", "THREAD", "-h"])).toBe(pages["threads show"])
    expect(page(["sessions", "list", "--help"])).toBe(pages["sessions list"])
    expect(page(["run", "hi"])).toBeUndefined()
    // after `--` it is a prompt, not a flag
    expect(page(["run", "--", "--help"])).toBeUndefined()
    expect(requestedPage(["nosuch", "--help"], pages)).toEqual({ _tag: "UnknownCommand", word: "nosuch", parent: "" })
    expect(requestedPage(["sessions", "nope", "-h"], pages)).toEqual({ _tag: "UnknownCommand", word: "nope", parent: "sessions" })
  })

  it("the pages the build wrote for the fast --help are these pages (npm test builds first)", () => {
    const built = JSON.parse(fs.readFileSync(path.resolve("dist/bundle/help.json"), "utf8")) as { version: string; pages: unknown }
    expect(built).toEqual({ version: packageVersion(), pages })
  })
})
