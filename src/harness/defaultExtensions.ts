// The turn extensions the production composition installs, each only when the embedder supplies what it needs:
// embedder tools (DynamicTools), native tool observations (PluginHooks), the native hook relay (always: S20), questions
// (always: with the Questions port when provided, else every question is declined), approvals (ApprovalPrompts).
// Approvals go last:
// later routes win, so MCP tool approvals are classified before any other elicitation handling (S29).
import { Duration, Effect, Layer, Option } from "effect"
import * as Approvals from "../approvals/Approvals.js"
import * as HookRelay from "../approvals/HookRelay.js"
import * as Questions from "../interaction/Questions.js"
import { ApprovalPrompts } from "../ports/ApprovalPrompts.js"
import * as EmbedderTools from "../tools/EmbedderTools.js"
import * as ToolObservations from "../tools/ToolObservations.js"
import { Settings } from "./CodexHarness.js"
import { TurnExtensions } from "./TurnExtensions.js"

export const layer: Layer.Layer<TurnExtensions, never, Settings> = Layer.scoped(
  TurnExtensions,
  Effect.gen(function* () {
    const settings = yield* Settings
    const tools = yield* EmbedderTools.fromOptionalPort()
    const observations = yield* ToolObservations.make()
    const prompts = yield* Effect.serviceOption(ApprovalPrompts)
    const reports = yield* HookRelay.makeReports()
    // a relay that cannot start is a startup failure, never silently unenforced hooks
    const hookRelay = yield* HookRelay.makeExtension(
      settings.nativeHookEvents !== undefined ? { events: settings.nativeHookEvents } : {}
    ).pipe(Effect.provideService(HookRelay.HookReports, reports), Effect.orDie)
    const approvals = Option.isNone(prompts)
      ? []
      : [
        yield* Approvals.makeExtension({
          allowAlways: {
            window: settings.allowAlwaysWindow ?? Duration.minutes(30),
            maxEntries: settings.allowAlwaysMaxEntries ?? 512
          }
        }).pipe(Effect.provideService(ApprovalPrompts, prompts.value), Effect.provideService(HookRelay.HookReports, reports))
      ]
    const questions = yield* Questions.makeExtension(
      settings.questionTimeout !== undefined ? { promptTimeout: settings.questionTimeout } : {}
    )
    return [tools, observations, hookRelay, questions, ...approvals]
  })
)
