// The production composition: the real `codex app-server` over stdio and a file-backed session store under the state
// dir. The embedder supplies Delivery, and may supply the optional ports (ApprovalPrompts, Questions, DynamicTools,
// ToolCallHooks, PluginHooks, HookPolicy, EmbedderExtensions); the CLI uses its terminal ones.
// the module itself, not the package index, which would load undici (500 KB) into the CLI bundle (scripts/bundle.mjs)
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Layer } from "effect"
import type { ClientPoolOptions } from "../src/appserver/ClientPool.js"
import { NodeTransportLive } from "../src/appserver/Transport.js"
import type { HarnessSettings } from "../src/config/Settings.js"
import * as Composition from "../src/harness/Composition.js"
import * as FileSessionStore from "../src/session/FileSessionStore.js"

export type { OptionalPorts } from "../src/harness/Composition.js"

export const layer = (settings: HarnessSettings, pool?: ClientPoolOptions) =>
  Composition.layer(settings, pool).pipe(
    Layer.provideMerge(FileSessionStore.fileLayer(settings.stateDir)),
    Layer.provideMerge(NodeTransportLive),
    Layer.provideMerge(NodeFileSystem.layer)
  )
