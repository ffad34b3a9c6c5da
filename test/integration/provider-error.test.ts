// A provider's HTTP 500, on the real binary: Codex reports only its canned "high demand" text and the error kind
// `internalServerError` (the body never reaches the app-server's client), so the one line a failed `run` ends with
// names the status; a pure check covers the kinds and details the line is built from.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { reply } from "../../src/testing/ScriptedModel.js"
import * as TurnErrorText from "../../src/turn/TurnErrorText.js"
import { runBin } from "../support/cli.js"
import { fixture } from "../support/harness.js"

describe("a provider's failure in the turn's error line", () => {
  it.scopedLive("run on a provider's 500 exits 1 with one line naming the status", () =>
    Effect.gen(function* () {
      // every request fails, retries included
      const f = yield* fixture({ fallback: reply.httpError(500, JSON.stringify({ error: { message: "upstream exploded" } })) })
      const common = ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir, "--session", "p500"]
      const ran = yield* runBin(["run", ...common, "hi"])
      expect(ran.code).toBe(1)
      const lines = ran.stderr.trim().split("\n")
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^codex-harness: .*the model provider answered HTTP 500: /)
      // the record of what the binary passes on: the body is not in it (if a later Codex passes it, this fails first)
      expect(ran.stderr).not.toContain("upstream exploded")
      expect((yield* f.model.requests).length).toBeGreaterThan(0)
    })
  )

  it("describes a status carried in codexErrorInfo, and details that differ from the message", () => {
    expect(TurnErrorText.describe({ message: "boom", codexErrorInfo: { httpConnectionFailed: { httpStatusCode: 502 } } })).toBe(
      "the model provider answered HTTP 502: boom"
    )
    expect(TurnErrorText.describe({ message: "boom", codexErrorInfo: "other", additionalDetails: "why" })).toBe("boom (why)")
    expect(TurnErrorText.describe({ message: "boom", codexErrorInfo: null, additionalDetails: "boom" })).toBe("boom")
  })
})
