// The test composition: the production composition (`Composition.layer`) over the in-memory MockAppServer (no process,
// no network, TestClock-safe), with an in-memory session store and a recording Delivery. The mock's control handle
// (`MockAppServer`) and `Transport` stay visible.
import { NodeFileSystem } from "@effect/platform-node"
import { Layer } from "effect"
import type { ClientPoolOptions } from "../../src/appserver/ClientPool.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import * as Composition from "../../src/harness/Composition.js"
import * as SessionStore from "../../src/session/SessionStore.js"
import { layer as mockLayer, type MockScript } from "../../src/testing/MockAppServer.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"

/** Settings that never reach a disk or a provider: the memory store ignores stateDir, the mock ignores the rest. */
export const settings: HarnessSettings = {
  stateDir: "/mock/state",
  cwd: "/mock/workspace",
  approvalPolicy: "never",
  sandbox: "read-only",
  // the mock needs no CODEX_HOME of the user's; a fixed one keeps runtimes independent of the environment
  codexHome: "/mock/codex-home"
}

export interface TestLayerOptions {
  readonly settings?: Partial<HarnessSettings> | undefined
  readonly pool?: ClientPoolOptions | undefined
  readonly script?: MockScript | undefined
}

export const layer = (options: TestLayerOptions = {}) => {
  const effective: HarnessSettings = { ...settings, ...options.settings }
  return Composition.layer(effective, options.pool ?? { idleTimeToLive: effective.idleTimeToLive }).pipe(
    Layer.provideMerge(SessionStore.memoryLayer),
    Layer.provideMerge(mockLayer(options.script)),
    Layer.provideMerge(RecordingDelivery.layer),
    // the workspace files and the hook relay's socket directory are real: a missing workspace simply reads as empty
    Layer.provideMerge(NodeFileSystem.layer)
  )
}
