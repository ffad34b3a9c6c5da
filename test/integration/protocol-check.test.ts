// Holds schemas/protocol.ts to the JSON schema that the pinned codex binary generates right now, and
// schemas/execServer.ts to what the binary's exec-server answers.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync } from "node:fs"
import { ExecClientMethods, ExecServerNotifications } from "../../schemas/execServer.js"
import { resolve } from "../../src/appserver/CodexBinary.js"
import {
  formatProblem,
  generateSchema,
  harnessContract,
  runCheck,
  scopedTempDir
} from "../../scripts/protocol-check/index.js"

describe("protocol check against the pinned codex binary", () => {
  it.effect("[protocol] our schemas match the binary's generated JSON schema: zero problems", () =>
    Effect.gen(function*() {
      const report = yield* runCheck()
      expect(report.problems.map(formatProblem)).toEqual([])
      expect(report.methods).toBe(Object.keys(harnessContract.clientMethods).length)
      expect(report.notifications).toBe(Object.keys(harnessContract.notifications).length)
      expect(report.itemKinds).toBe(harnessContract.items.length)
      expect(report.serverRequests).toBe(Object.keys(harnessContract.serverRequests).length)
      // the exec-server wire has no generated schema: it is held to what the binary's exec-server answers
      expect(report.execServer).toEqual({
        methods: Object.keys(ExecClientMethods).length,
        notifications: Object.keys(ExecServerNotifications).length
      })
    }))

  it.effect("[protocol] the generation directory is a scoped resource, gone once the scope closes", () =>
    Effect.gen(function*() {
      const codex = yield* resolve().pipe(Effect.provide(NodeFileSystem.layer))
      const dir = yield* Effect.scoped(
        Effect.gen(function*() {
          const dir = yield* scopedTempDir("codex-protocol-check-test-")
          yield* generateSchema(codex, dir)
          expect(existsSync(`${dir}/ClientRequest.json`)).toBe(true)
          return dir
        })
      )
      expect(existsSync(dir)).toBe(false)
    }))

  it.effect("[protocol] a binary that cannot generate the schema fails with a typed error", () =>
    Effect.gen(function*() {
      const failing = { command: process.execPath, prefixArgs: ["-e", "process.exit(3)"] }
      const error = yield* runCheck(failing).pipe(Effect.flip)
      expect(error._tag).toBe("SchemaGenerationFailed")
    }))

  it.effect("[protocol] a generator that hangs is cut off by the timeout", () =>
    Effect.gen(function*() {
      const hang = { command: process.execPath, prefixArgs: ["-e", "setTimeout(() => {}, 30000)"] }
      const error = yield* runCheck(hang, { timeout: "300 millis" }).pipe(Effect.flip)
      expect(error._tag).toBe("SchemaGenerationFailed")
      expect(error.message).toContain("timed out")
    }))

  it.effect("[protocol] a generator that writes nothing fails as an unusable generated schema", () =>
    Effect.gen(function*() {
      const error = yield* runCheck({ command: process.execPath, prefixArgs: ["-e", ""] }).pipe(Effect.flip)
      expect(error._tag).toBe("GeneratedSchemaInvalid")
    }))
})
