// The production composition: the real `codex app-server` over stdio and a file-backed session store under the state
// dir. The embedder supplies Delivery, and may supply the optional ports (ApprovalPrompts, Questions, DynamicTools,
// ToolCallHooks, PluginHooks, HookPolicy, EmbedderExtensions); the CLI uses its terminal ones.
// Building it checks what a running harness needs first (src/harness/Startup.ts) and fails with a typed error naming
// the cause: settings that do not decode, a missing workspace, an unusable state dir or temp dir, a missing or wrong
// codex binary, a hook relay that cannot listen.
// the module itself, not the package index, which would load undici (500 KB) into the CLI bundle (scripts/bundle.mjs)
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Effect, Layer } from "effect"
import { HookRelayConfig } from "../../src/approvals/HookRelay.js"
import type { ClientPoolOptions } from "../../src/appserver/ClientPool.js"
import { NodeTransportLive } from "../../src/appserver/Transport.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import * as Composition from "../../src/harness/Composition.js"
import * as Startup from "../../src/harness/Startup.js"
import * as FileSessionStore from "../../src/session/FileSessionStore.js"

export type { OptionalPorts } from "../../src/harness/Composition.js"

export interface LiveOptions {
  /** false: the codex binary must exist but is not run with `--version` while the layer is built (the CLI's choice,
   * for its start-up time; a wrong binary then fails the first turn instead). Default true */
  readonly probeCodex?: boolean | undefined
}

export const layer = (settings: HarnessSettings, pool?: ClientPoolOptions, options: LiveOptions = {}) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const relay = yield* HookRelayConfig
      const checked = yield* Startup.check(settings, { socketParentDir: relay.socketParentDir, probeCodex: options.probeCodex })
      return Composition.layer(checked, pool)
    })
  ).pipe(
    Layer.provideMerge(FileSessionStore.fileLayer(settings.stateDir)),
    Layer.provideMerge(NodeTransportLive),
    Layer.provideMerge(NodeFileSystem.layer)
  )
