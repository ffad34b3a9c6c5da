// What the --connect entry takes itself (src/cli/remote/args.ts) and what it leaves to the CLI, and that its `--json`
// filter names exactly the `--json` stream's events (schemas/events.ts).
import { describe, expect, it } from "@effect/vitest"
import { HarnessEvent } from "../../schemas/events.js"
import { parse } from "../../src/cli/remote/args.js"
import { harnessEventTypes } from "../../src/cli/remote/show.js"
import { maxServePromptChars } from "../../src/cli/remote/prompt.js"
import { maxPromptChars } from "../../schemas/control.js"

const url = "ws://127.0.0.1:4780/rpc"

describe("the --connect entry's command lines", () => {
  it("takes run and chat with --connect and the flags that mean something through a serve", () => {
    expect(parse(["run", "--connect", url, "hello"])).toMatchObject({ command: "run", connect: url, prompt: "hello", approvals: "deny", json: false, last: false })
    expect(parse(["run", "hello", `--connect=${url}`, "--session=s1", "-m", "gpt", "--json", "--approvals", "ask", "--turn-kind", "toolDisabled", "-o", "out.txt"]))
      .toMatchObject({ command: "run", connect: url, prompt: "hello", session: "s1", model: "gpt", json: true, approvals: "ask", turnKind: "toolDisabled", outputLastMessage: "out.txt" })
    // `--` ends the flags: what follows is the prompt, however it starts
    expect(parse(["run", "--connect", url, "--", "--json"])).toMatchObject({ prompt: "--json", json: false })
    expect(parse(["run", "--connect", url, "-"])).toMatchObject({ prompt: "-" })
    expect(parse(["run", "--connect", url])).toMatchObject({ prompt: undefined })
    expect(parse(["chat", "--connect", url, "--last", "--state-dir", "/tmp/s"])).toMatchObject({ command: "chat", connect: url, last: true, stateDir: "/tmp/s" })
  })

  it("leaves to the CLI what it cannot be sure of: other commands and flags, runtime flags, bad or missing values, a second PROMPT", () => {
    const cases: ReadonlyArray<ReadonlyArray<string>> = [
      ["run", "hello"],
      ["sessions", "list", "--connect", url],
      ["run", "--connect", url, "--provider-url", "http://x", "hi"],
      ["run", "--log-level", "debug", "--connect", url, "hi"],
      ["run", "--connect", url, "--approvals", "maybe", "hi"],
      ["chat", "--connect", url, "--approvals", "ask"],
      ["run", "--connect", url, "--turn-kind", "nope", "hi"],
      ["run", "--connect", url, "--model", "--json", "hi"],
      ["run", "--connect", url, "--json=true", "hi"],
      ["run", "--connect", url, "--session", "a", "--session", "b", "hi"],
      ["run", "--connect", url, "one", "two"],
      ["chat", "--connect", url, "stray"],
      ["run", "--connect"],
      ["run", "--connect", url, "--help"],
      ["run", "--connect", url, "-o"]
    ]
    for (const args of cases) expect({ args, parsed: parse(args) }).toEqual({ args, parsed: undefined })
  })

  it("its bound on a prompt is the control API's", () => {
    expect(maxServePromptChars).toBe(maxPromptChars)
  })

  it("its --json filter names exactly the --json stream's event types", () => {
    const types = HarnessEvent.members.flatMap((m) => [...(m.fields.type as unknown as { literals: ReadonlyArray<string> }).literals])
    expect([...harnessEventTypes].sort()).toEqual([...new Set(types)].sort())
  })
})
