// The command line's own check of flags before @effect/cli parses them: every usage error names the flag, and an
// unknown flag is never taken for the prompt.
import { describe, expect, it } from "@effect/vitest"
import { scanFlags } from "../../src/cli/argv.js"
import { helpTree } from "../../src/cli/commands/root.js"
import { commandAt } from "../../src/cli/help.js"

const scan = (...args: Array<string>) => {
  const shape = commandAt(helpTree, args)
  return scanFlags("codex-harness", shape, args.slice(shape.path.length))
}

describe("scanFlags", () => {
  it("an unknown flag is a usage error naming it, whatever follows", () => {
    expect(scan("run", "--frobnicate").error).toBe("unknown option '--frobnicate' for `codex-harness run` (`codex-harness run --help` lists them)")
    expect(scan("run", "--frobnicate", "hi").error).toMatch(/^unknown option '--frobnicate'/)
    expect(scan("run", "-json", "hi").error).toMatch(/long options take two dashes: --json/)
    expect(scan("sessions", "list", "--sandbox", "read-only").error).toMatch(/^unknown option '--sandbox' for `codex-harness sessions list`/)
  })

  it("a value that does not fit names the flag; a forgotten value is not taken from the next flag", () => {
    expect(scan("run", "--timeout", "abc", "hi").error).toBe("--timeout wants a whole number, not 'abc'")
    expect(scan("run", "--sandbox=nope", "hi").error).toBe("--sandbox is one of read-only, workspace-write, danger-full-access, not 'nope'")
    expect(scan("run", "--model", "--json", "hi").error).toBe("--model needs a value")
    expect(scan("run", "hi", "--model").error).toBe("--model needs a value")
    expect(scan("run", "--json=maybe", "hi").error).toBe("--json takes no value")
  })

  it("an unknown command is named with its parent", () => {
    expect(scan("frob").error).toBe("unknown command 'frob' for `codex-harness` (`codex-harness --help` lists them)")
    expect(scan("sessions", "frob").error).toMatch(/^unknown command 'frob' for `codex-harness sessions`/)
  })

  it("flags, their values and positionals are told apart; after -- everything is a positional", () => {
    expect(scan("run", "--model", "gpt", "--json", "--timeout=5", "hi")).toEqual({
      flags: ["--model", "--json", "--timeout"],
      positionals: ["hi"]
    })
    expect(scan("run", "--json", "--", "--frobnicate", "-x")).toEqual({ flags: ["--json"], positionals: ["--frobnicate", "-x"] })
    expect(scan("run", "--log-level", "debug", "hi").error).toBeUndefined()
    expect(scan("run", "--wizard").error).toMatch(/^unknown option '--wizard'/)
  })
})
