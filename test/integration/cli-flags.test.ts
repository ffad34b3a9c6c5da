// Each command accepts only the flags its implementation reads: one that would be silently ignored there is a usage
// error (exit 2, one line naming it) through the compiled bin, said before anything starts.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runBin } from "../support/cli.js"

const refused = (args: ReadonlyArray<string>, flag: string) =>
  Effect.gen(function* () {
    const ran = yield* runBin(args)
    expect(ran.code).toBe(2)
    expect(ran.stdout).toBe("")
    const lines = ran.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(flag)
  })

describe("flags valid only where they apply", () => {
  it.live("demo --json is refused", () => refused(["demo", "--json"], "--json"))
  it.live("demo --provider-url is refused", () => refused(["demo", "--provider-url", "http://127.0.0.1:1/v1"], "--provider-url"))
  it.live("threads list --sandbox is refused", () => refused(["threads", "list", "--sandbox", "read-only"], "--sandbox"))
  it.live("threads show --approvals is refused", () => refused(["threads", "show", "--approvals", "allow", "x"], "--approvals"))
  it.live("compact --model is refused", () => refused(["compact", "--model", "m", "--session", "s"], "--model"))
  it.live("doctor --sandbox is refused", () => refused(["doctor", "--sandbox", "read-only"], "--sandbox"))
})
