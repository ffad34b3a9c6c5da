// The production composition: the real `codex app-server` over stdio, a file-backed session store under the state dir.
// The embedder supplies the ports it owns (Delivery; optionally ApprovalPrompts, DynamicTools, PluginHooks); the CLI uses
// its terminal ones.
import { Layer } from "effect"
import * as ClientPool from "../src/appserver/ClientPool.js"
import * as Compaction from "../src/compaction/Compaction.js"
import * as CompactionFence from "../src/compaction/CompactionFence.js"
import { NodeTransportLive } from "../src/appserver/Transport.js"
import * as CodexHarness from "../src/harness/CodexHarness.js"
import * as DefaultExtensions from "../src/harness/defaultExtensions.js"
import * as SessionStore from "../src/session/SessionStore.js"
import * as SteeringQueue from "../src/turn/SteeringQueue.js"

export const layer = (
  settings: CodexHarness.HarnessSettings,
  pool: ClientPool.ClientPoolOptions = { idleTimeToLive: settings.idleTimeToLive }
) =>
  Layer.mergeAll(
    Compaction.layer({ timeout: settings.compactionTimeout, interruptGrace: settings.interruptGrace }),
    SteeringQueue.layer({ mode: settings.queueMode, quietWindow: settings.quietWindow })
  ).pipe(
    Layer.provideMerge(CodexHarness.layer),
    // approvals, embedder tools and tool observations, when the embedder provides their ports
    Layer.provide(DefaultExtensions.layer),
    Layer.provideMerge(CompactionFence.layer),
    Layer.provideMerge(ClientPool.layer(pool)),
    Layer.provideMerge(SessionStore.fileLayer(settings.stateDir)),
    Layer.provideMerge(Layer.succeed(CodexHarness.Settings, settings)),
    Layer.provide(NodeTransportLive)
  )
