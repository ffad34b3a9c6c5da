// Tool-result persistence on the real app-server (S40): a dynamic tool call the harness runs is recorded as a `tool`
// record of the harness's own session file, as the ToolResultPersistence hook lets it, while the model gets the result
// as the tool returned it; a later redaction through the store rewrites that record and leaves Codex's rollout file
// (its native record of the thread, under CODEX_HOME/sessions) byte-identical.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schema, Scope } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { DynamicTools, tool } from "../../src/ports/DynamicTools.js"
import { ToolResultPersistence } from "../../src/ports/ToolResultPersistence.js"
import * as FileSessionStore from "../../src/session/FileSessionStore.js"
import { parseLines, SessionStore } from "../../src/session/SessionStore.js"
import * as TranscriptMirror from "../../src/session/TranscriptMirror.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { filesUnder, fixture, functionCallOutput, leftBehind } from "../support/harness.js"

const sha = (file: string) => crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex")

describe("tool-result persistence on the real app-server", () => {
  it.scopedLive("[S40] a redaction rewrites the harness's tool record; Codex's rollout file stays byte-identical", () =>
    Effect.gen(function* () {
      const secret = tool({
        name: "lookup_secret",
        description: "A secret for a city.",
        input: Schema.Struct({ city: Schema.String }),
        handler: (args) => Effect.succeed(`token sk-live-12345 for ${args.city}`)
      })
      // the hook masks the key in what the harness records; the model still gets the whole result
      const masking = Layer.succeed(ToolResultPersistence, {
        persist: ({ result }) => Effect.succeed(result.text.replace(/sk-[\w-]+/g, "sk-***"))
      })
      const f = yield* fixture({
        replies: [
          reply.steps({ type: "function_call", name: "lookup_secret", namespace: "openclaw", arguments: { city: "Paris" }, callId: "call_secret" }),
          reply.text("got it")
        ]
      })
      const harnessScope = yield* Scope.make()
      const context = yield* Layer.build(
        Live.layer(f.settings).pipe(
          Layer.provideMerge(RecordingDelivery.layer),
          Layer.provide(DynamicTools.layer([secret])),
          Layer.provide(masking)
        )
      ).pipe(Scope.extend(harnessScope))
      const result = yield* Context.get(context, CodexHarness).runTurn({ sessionId: "keys", prompt: "the Paris secret please" })
      expect(result).toMatchObject({ status: "completed", finalText: "got it" })
      expect(functionCallOutput((yield* f.model.requests).map((r) => r.body), "call_secret")).toBe("token sk-live-12345 for Paris")
      // the app-server gone, Codex has written all it will of its rollout
      yield* Scope.close(harnessScope, Exit.void)
      expect(yield* leftBehind(f.stateDir)).toEqual([])

      const sessionFile = path.join(f.stateDir, "sessions", "keys.jsonl")
      const before = fs.readFileSync(sessionFile, "utf8")
      const recorded = parseLines(before).records.filter((r) => r._tag === "tool")
      expect(recorded).toEqual([
        expect.objectContaining({
          threadId: result.threadId,
          turnId: result.turnId,
          callId: "call_secret",
          name: "lookup_secret",
          success: true,
          text: "token sk-*** for Paris"
        })
      ])
      const rollouts = filesUnder(path.join(f.stateDir, "codex-home", "sessions")).filter((p) => /rollout-.*\.jsonl$/.test(p))
      expect(rollouts.length).toBeGreaterThan(0)
      // Codex's native record of the call has the raw result: it is Codex's, never the harness's to rewrite
      expect(rollouts.some((p) => fs.readFileSync(p, "utf8").includes("sk-live-12345"))).toBe(true)
      const hashes = rollouts.map(sha)

      // an operator's redaction, through the store, in a process that holds nothing of the session any more
      const store = yield* FileSessionStore.fileStore(f.stateDir).pipe(Effect.provide(NodeFileSystem.layer))
      const mirror = yield* TranscriptMirror.make.pipe(Effect.provideService(SessionStore, store))
      expect(yield* mirror.redact("keys", { callId: "call_secret" })).toBe(1)

      expect(rollouts.map(sha)).toEqual(hashes)
      const after = fs.readFileSync(sessionFile, "utf8")
      expect(after).not.toBe(before)
      expect(parseLines(after).records.filter((r) => r._tag === "tool")).toEqual([
        expect.objectContaining({ callId: "call_secret", text: "[redacted]", redacted: true })
      ])
      // every other record of the session is as it was
      const others = (body: string) => body.split("\n").filter((l) => !l.includes('"_tag":"tool"'))
      expect(others(after)).toEqual(others(before))
    }))
})
