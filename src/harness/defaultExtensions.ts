// The turn extensions of the production composition, in the order they are installed: the harness's reply tools
// (message, heartbeat_respond), the embedder's dynamic tools, native tool observations, the native hook relay (S20),
// questions (S30-S34), approvals (S27-S29), then the embedder's own extensions. The optional ports they read
// (DynamicTools, PluginHooks, HookPolicy, Questions, ApprovalPrompts) decline or do nothing when not provided.
import type { FileSystem } from "@effect/platform"
import { Effect, Layer } from "effect"
import * as Approvals from "../approvals/Approvals.js"
import * as HookRelay from "../approvals/HookRelay.js"
import type { HookRelayServerError } from "../approvals/HookRelayServer.js"
import * as PermissionMemory from "../approvals/PermissionMemory.js"
import { Settings } from "../config/Settings.js"
import * as Questions from "../interaction/Questions.js"
import type { Delivery } from "../ports/Delivery.js"
import type { TranscriptMirror } from "../session/TranscriptMirror.js"
import * as EmbedderTools from "../tools/EmbedderTools.js"
import * as ReplyTools from "../tools/ReplyTools.js"
import * as ToolObservations from "../tools/ToolObservations.js"
import { LifecycleBus } from "../turn/LifecycleBus.js"
import * as ToolUseLedger from "../turn/ToolUseLedger.js"
import { EmbedderExtensions, TurnExtensions } from "../turn/TurnExtension.js"

export const layer: Layer.Layer<
  TurnExtensions,
  HookRelayServerError,
  Settings | Delivery | TranscriptMirror | HookRelay.HookReports | LifecycleBus | FileSystem.FileSystem
> = Layer.scoped(
  TurnExtensions,
  Effect.gen(function* () {
    const settings = yield* Settings
    const replyTools = yield* ReplyTools.make
    const tools = yield* EmbedderTools.fromPort()
    // S23: the PostToolUse relay reports the tool uses it relays; item/completed reports the rest, each once
    const bus = yield* LifecycleBus
    const ledger = ToolUseLedger.make()
    const observations = yield* ToolObservations.make({ ledger })
    // a relay that cannot start fails the layer's build with its typed error: never silently unenforced hooks
    const relayOptions = yield* HookRelay.HookRelayConfig
    const hookRelay = yield* HookRelay.makeExtension({
      ...relayOptions,
      ...(settings.nativeHookEvents !== undefined ? { events: settings.nativeHookEvents } : {})
    }, bus.observed ? { ledger, observe: bus.observe } : undefined)
    const questions = yield* Questions.makeExtension(
      settings.questionTimeout !== undefined ? { promptTimeout: settings.questionTimeout } : {}
    )
    // the same allow-always bounds as the PermissionRequest hook path (S28)
    const approvals = yield* Approvals.makeExtension({ allowAlways: PermissionMemory.allowAlwaysOptionsOf(settings) })
    const embedder = yield* EmbedderExtensions
    return [replyTools, tools, observations, hookRelay, questions, approvals, ...embedder]
  })
)
