// The test composition: the harness over the in-memory MockAppServer (no process, no network, TestClock-safe) with an
// in-memory session store and a recording Delivery. Mirrors `Live.ts`; the mock's control handle (`MockAppServer`) and `Transport` stay visible.
import { Layer } from "effect"
import * as ClientPool from "../src/appserver/ClientPool.js"
import * as Compaction from "../src/compaction/Compaction.js"
import * as CompactionFence from "../src/compaction/CompactionFence.js"
import * as CodexHarness from "../src/harness/CodexHarness.js"
import * as SessionStore from "../src/session/SessionStore.js"
import * as SteeringQueue from "../src/turn/SteeringQueue.js"
import { MockAppServer, type MockScript } from "../src/testing/MockAppServer.js"
import * as RecordingDelivery from "../src/testing/RecordingDelivery.js"

/** Settings that never reach a disk or a provider: the memory store ignores stateDir, the mock ignores the rest. */
export const settings: CodexHarness.HarnessSettings = {
  stateDir: "/mock/state",
  cwd: "/mock/workspace",
  approvalPolicy: "never",
  sandbox: "read-only"
}

export interface TestLayerOptions {
  readonly settings?: Partial<CodexHarness.HarnessSettings> | undefined
  readonly pool?: ClientPool.ClientPoolOptions | undefined
  readonly script?: MockScript | undefined
}

export const layer = (options: TestLayerOptions = {}) => {
  const effective: CodexHarness.HarnessSettings = { ...settings, ...options.settings }
  return Layer.mergeAll(
    Compaction.layer({ timeout: effective.compactionTimeout, interruptGrace: effective.interruptGrace }),
    SteeringQueue.layer({ mode: effective.queueMode, quietWindow: effective.quietWindow })
  ).pipe(
    Layer.provideMerge(CodexHarness.layer),
    Layer.provideMerge(CompactionFence.layer),
    Layer.provideMerge(ClientPool.layer(options.pool)),
    Layer.provideMerge(SessionStore.memoryLayer),
    Layer.provideMerge(Layer.succeed(CodexHarness.Settings, effective)),
    Layer.provideMerge(MockAppServer.layer(options.script)),
    Layer.provideMerge(RecordingDelivery.layer)
  )
}
