import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, liveContext } from "../support/harness.js"

describe("a turn on the real app-server", () => {
  it.scopedLive("[S39] runs a turn end to end and mirrors prompt and reply into the session file", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("hello from the scripted model")] })
      const context = yield* liveContext(f.settings)
      const harness = yield* Effect.provide(CodexHarness, context)
      const outcome = yield* harness.runTurn({ sessionId: "s1", prompt: "say hello" })
      expect(outcome.status).toBe("completed")
      expect(outcome.finalText).toBe("hello from the scripted model")
      const requests = yield* f.model.requests
      expect(requests.length).toBe(1)
      expect(requests[0]!.body).toContain("say hello")
      const lines = fs
        .readFileSync(path.join(f.stateDir, "sessions", "s1.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
      expect(lines.map((l) => l._tag)).toEqual(["user", "binding", "assistant", "turn"])
      expect(lines[0].text).toBe("say hello")
      expect(lines[2].text).toBe("hello from the scripted model")
    })
  )
})
