// What the harness logs goes to the app's logger under the `codex-harness` log span, routine steps at Debug, and only
// at or above `HarnessSettings.logLevel` when the app sets one; a hook relay that cannot start fails the layer's build
// with its typed error (it was a defect: Effect.orDie).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, List, Logger, LogLevel } from "effect"
import * as path from "node:path"
import * as Test from "../../layers/internal/Test.js"
import { HookRelayConfig } from "../../src/approvals/HookRelay.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { ApprovalPrompts } from "../../src/ports/ApprovalPrompts.js"
import { duringTurn, MockAppServer } from "../../src/testing/MockAppServer.js"
import { tempDir } from "../support/harness.js"

interface Line {
  readonly level: string
  readonly text: string
  readonly spans: ReadonlyArray<string>
}

/** a logger that keeps every line it is given, with its level and log spans */
const capturing = () => {
  const lines: Array<Line> = []
  const logger = Logger.make<unknown, void>(({ logLevel, message, spans }) => {
    const text = (Array.isArray(message) ? message : [message]).map(String).join(" ")
    lines.push({ level: logLevel.label, text, spans: List.toArray(spans).map((s) => s.label) })
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

/** a turn in which Codex asks to run a command, which the app's port declines (the harness logs its decision) */
const turnWithApproval = (settings: Partial<HarnessSettings>, appLevel: LogLevel.LogLevel) =>
  Effect.gen(function* () {
    const log = capturing()
    const harness = Test.layer({ script: { turns: "hang" }, settings }).pipe(
      Layer.provide(Layer.succeed(ApprovalPrompts, { ask: () => Effect.succeed("deny") }))
    )
    yield* Effect.gen(function* () {
      const mock = yield* MockAppServer
      yield* mock.setHandler("turn/start", duringTurn((ids, ctx) =>
        ctx.request("item/commandExecution/requestApproval", {
          kind: "command", ...ids, itemId: "call_1", startedAtMs: 0, environmentId: "local",
          command: "/bin/bash -lc 'rm -rf build'", cwd: "/mock/workspace", commandActions: [], availableDecisions: ["accept", "cancel"]
        }).pipe(Effect.zipRight(ctx.finishTurn(ids.threadId, { status: "completed", text: "ok" })))))
      const result = yield* (yield* CodexHarness).runTurn({ sessionId: "s1", prompt: "clean up" })
      expect(result.status).toBe("completed")
    }).pipe(Effect.provide(harness), Effect.provide(log.layer), Logger.withMinimumLogLevel(appLevel))
    return log.lines.filter((line) => line.text.includes("approval:"))
  })

describe("the harness's logging", () => {
  it.scoped("a routine step is logged at Debug under the codex-harness span", () =>
    Effect.gen(function* () {
      const lines = yield* turnWithApproval({}, LogLevel.Debug)
      expect(lines).toEqual([expect.objectContaining({ level: "DEBUG", spans: ["codex-harness"], text: expect.stringContaining("declined command") })])
    }))

  it.scoped("at the app's default level (Info) no routine harness line reaches the app's logger", () =>
    Effect.gen(function* () {
      expect(yield* turnWithApproval({}, LogLevel.Info)).toEqual([])
    }))

  it.scoped("settings.logLevel holds the harness's own lines back even when the app logs at Debug", () =>
    Effect.gen(function* () {
      expect(yield* turnWithApproval({ logLevel: "Warning" }, LogLevel.Debug)).toEqual([])
    }))

  it.scoped("a hook relay that cannot listen fails the build with HookRelayServerError, not a defect", () =>
    Effect.gen(function* () {
      const root = yield* tempDir()
      const error = yield* Layer.build(
        Test.layer().pipe(Layer.provide(Layer.succeed(HookRelayConfig, { socketParentDir: path.join(root, "missing") })))
      ).pipe(Effect.flip)
      expect(error._tag).toBe("HookRelayServerError")
    }))
})
