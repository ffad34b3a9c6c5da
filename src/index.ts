// codex-harness: the public surface for Effect apps that embed the harness. One style: every module is a namespace
// (`Harness.Harness`, `Delivery.Delivery`, `Errors.InvalidSettings`), and what it holds is exactly what src/api/ names.
// The layers are `codex-harness/layers/Live` and `codex-harness/layers/Test`, the test doubles `codex-harness/testing`.
// The stability rule (README, Embedding): a change to any of these names or their types shows in etc/*.api.md.
export * as ApprovalPrompts from "./api/ApprovalPrompts.js"
export * as ContextEngine from "./api/ContextEngine.js"
export * as Delivery from "./api/Delivery.js"
export * as DynamicTools from "./api/DynamicTools.js"
export * as Errors from "./api/Errors.js"
export * as Harness from "./api/Harness.js"
export * as HookPolicy from "./api/HookPolicy.js"
export * as HookRelayConfig from "./api/HookRelayConfig.js"
export * as PluginHooks from "./api/PluginHooks.js"
export * as Protocol from "./api/Protocol.js"
export * as Questions from "./api/Questions.js"
export * as Settings from "./api/Settings.js"
export * as ToolCallHooks from "./api/ToolCallHooks.js"
export * as ToolResultPersistence from "./api/ToolResultPersistence.js"
export * as TurnContext from "./api/TurnContext.js"
export * as WireRecorder from "./api/WireRecorder.js"
