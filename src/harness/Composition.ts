// The harness as one composition of Layers, shared by the Live layer (the real app-server over stdio, a file-backed
// session store) and the Test layer (the in-memory MockAppServer, a memory store): only the transport, the store and
// the Delivery port differ, so service tests run the production services in the production extension order.
import { Layer } from "effect"
import * as AppAdmission from "../apps/AppAdmission.js"
import * as HookRelay from "../approvals/HookRelay.js"
import * as ClientPool from "../appserver/ClientPool.js"
import * as Compaction from "../compaction/Compaction.js"
import * as CompactionFence from "../compaction/CompactionFence.js"
import { type HarnessSettings, Settings } from "../config/Settings.js"
import * as HarnessLog from "../platform/HarnessLog.js"
import * as SessionRuntime from "../session/SessionRuntime.js"
import * as TranscriptMirror from "../session/TranscriptMirror.js"
import * as LifecycleBus from "../turn/LifecycleBus.js"
import * as LoadedThreads from "../turn/LoadedThreads.js"
import * as CodexHarness from "./CodexHarness.js"
import * as DefaultExtensions from "./defaultExtensions.js"
import * as Harness from "./Harness.js"
import type { ApprovalPrompts } from "../ports/ApprovalPrompts.js"
import type { ContextEngine } from "../ports/ContextEngine.js"
import type { Delivery } from "../ports/Delivery.js"
import type { DynamicTools } from "../ports/DynamicTools.js"
import type { HookPolicy } from "../ports/HookPolicy.js"
import type { PluginHooks } from "../ports/PluginHooks.js"
import type { Questions } from "../ports/Questions.js"
import type { ToolCallHooks } from "../ports/ToolCallHooks.js"
import type { ToolResultPersistence } from "../ports/ToolResultPersistence.js"
import type { EmbedderExtensions } from "../turn/TurnExtension.js"
import * as SessionWork from "./SessionWork.js"
import * as ThreadOpener from "../threads/ThreadOpener.js"
import * as ThreadSetup from "../threads/ThreadSetup.js"

/** The port the embedder must provide: how replies reach people. */
export type RequiredPorts = Delivery

/**
 * The ports an embedder may provide (each a `Context.Reference` with a declining default): who answers approvals and
 * questions, its dynamic tools and the plugin/middleware hooks around their calls, lifecycle observers, native-hook
 * decisions, extra turn extensions and what of a dynamic tool's result the transcript keeps.
 */
export type OptionalPorts =
  | ApprovalPrompts
  | Questions
  | DynamicTools
  | ToolCallHooks
  | PluginHooks
  | HookPolicy
  | EmbedderExtensions
  | ToolResultPersistence
  | ContextEngine

/**
 * Every harness service for these settings. It needs a `Transport` (how app-servers are reached), a `SessionStore`
 * (where session records live) and the `Delivery` port; the optional ports (ApprovalPrompts, Questions, DynamicTools,
 * ToolCallHooks, PluginHooks, HookPolicy, EmbedderExtensions, ToolResultPersistence, ContextEngine) are read when provided and decline or do nothing otherwise.
 */
export const layer = (settings: HarnessSettings, pool: ClientPool.ClientPoolOptions = { idleTimeToLive: settings.idleTimeToLive }) => {
  const base = Layer.mergeAll(
    Layer.succeed(Settings, settings),
    LoadedThreads.layer,
    LifecycleBus.layer,
    CompactionFence.layer,
    HookRelay.reportsLayer
  )
  const apps = AppAdmission.layer.pipe(Layer.provide(Layer.succeed(Settings, settings)))
  // SessionRuntime writes the detach of a binding whose remote connection ended (S37)
  const session = SessionRuntime.layer.pipe(Layer.provideMerge(TranscriptMirror.layer))
  // the session work registry runs every turn and manual compaction of a session: the front door of every front end
  const front = SessionWork.layer({ mode: settings.queueMode, quietWindow: settings.quietWindow })
  const harness = Harness.layer.pipe(
    Layer.provideMerge(front),
    Layer.provideMerge(Compaction.layer({ timeout: settings.compactionTimeout, interruptGrace: settings.interruptGrace })),
    Layer.provideMerge(CodexHarness.layer),
    Layer.provideMerge(ThreadOpener.layer),
    Layer.provideMerge(ThreadSetup.layer),
    Layer.provideMerge(DefaultExtensions.layer),
    Layer.provideMerge(session),
    Layer.provideMerge(ClientPool.layer(pool)),
    Layer.provideMerge(apps),
    Layer.provideMerge(base)
  )
  // what the services log while they are built, and the fibers they start then, is under the harness's span and level
  return Layer.locallyEffect(harness, HarnessLog.within(settings.logLevel))
}
