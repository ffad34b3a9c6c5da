// Shared test wiring: a temporary state dir, a ScriptedModel, and the live harness layer pointed at it.
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Live from "../../layers/Live.js"
import type { ClientPoolOptions } from "../../src/appserver/ClientPool.js"
import type { HarnessSettings } from "../../src/harness/CodexHarness.js"
import * as ScriptedModel from "../../src/testing/ScriptedModel.js"

/** A temporary directory removed by the scope's finalizer. */
export const tempDir = (prefix = "codex-harness-test-") =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

/** true while a process with this pid exists */
export const isAlive = (pid: number | undefined): boolean => {
  if (pid === undefined) return false
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** true while any process of this process group exists */
export const groupAlive = (pgid: number | undefined): boolean => {
  if (pgid === undefined) return false
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

export interface Fixture {
  readonly model: ScriptedModel.ScriptedModel
  readonly stateDir: string
  readonly workDir: string
  readonly settings: HarnessSettings
}

export const fixture = (options: ScriptedModel.ScriptedModelOptions = {}, overrides: Partial<HarnessSettings> = {}) =>
  Effect.gen(function* () {
    const model = yield* ScriptedModel.make(options)
    const stateDir = yield* tempDir("codex-harness-state-")
    const workDir = yield* tempDir("codex-harness-work-")
    const settings: HarnessSettings = {
      stateDir,
      cwd: workDir,
      providerUrl: model.url,
      model: "mock-model",
      approvalPolicy: "never",
      sandbox: "read-only",
      ...overrides
    }
    return { model, stateDir, workDir, settings } satisfies Fixture
  })

/** Builds the live harness layer into the current scope. */
export const liveContext = (settings: HarnessSettings, pool: ClientPoolOptions = {}) => Layer.build(Live.layer(settings, pool))
