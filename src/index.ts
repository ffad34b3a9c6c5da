// codex-harness: the public surface for Effect apps that embed the harness.
export * as AllowAlways from "./approvals/AllowAlways.js"
export * as Approvals from "./approvals/Approvals.js"
export * as HookRelay from "./approvals/HookRelay.js"
export * as AppServerConnection from "./appserver/AppServerConnection.js"
export * as ClientPool from "./appserver/ClientPool.js"
export * as CodexArgs from "./appserver/CodexArgs.js"
export * as CodexBinary from "./appserver/CodexBinary.js"
export * from "./appserver/errors.js"
export * as Transport from "./appserver/Transport.js"
export * as WireRecorder from "./appserver/WireRecorder.js"
export * as Compaction from "./compaction/Compaction.js"
export * as CompactionFence from "./compaction/CompactionFence.js"
export * as Diagnostics from "./diagnostics/Diagnostics.js"
export * as DiagnosticsBundle from "./diagnostics/DiagnosticsBundle.js"
/** S25: sandboxed processes through the app-server (`Processes`, `OutputBuffer`, their errors) */
export * as Processes from "./processes/index.js"
export * as HarnessConfig from "./config/HarnessConfig.js"
export * as CodexHarness from "./harness/CodexHarness.js"
export * as Composition from "./harness/Composition.js"
export * as ThreadSetup from "./threads/ThreadSetup.js"
export * as ThreadOpener from "./threads/ThreadOpener.js"
export { type HarnessSettings, type McpServer, Settings } from "./config/Settings.js"
export {
  type ApprovalDecision,
  ApprovalPromptFailed,
  ApprovalPrompts,
  type ApprovalPromptsService,
  type ApprovalRequest,
  type DiagnosticsApproval,
  type DiagnosticsThread,
  type FileChange
} from "./ports/ApprovalPrompts.js"
export * as Delivery from "./ports/Delivery.js"
export {
  DuplicateToolName,
  DynamicTools,
  InvalidToolName,
  tool,
  type ToolRegistrationError
} from "./ports/DynamicTools.js"
export * as HookPolicy from "./ports/HookPolicy.js"
export * as PluginHooks from "./ports/PluginHooks.js"
export * as ToolCallHooks from "./ports/ToolCallHooks.js"
export * as ToolResultPersistence from "./ports/ToolResultPersistence.js"
export * as ContextEngine from "./ports/ContextEngine.js"
export {
  answered,
  cancelled,
  declined,
  type Question,
  type QuestionKind,
  type QuestionOption,
  type QuestionPrompt,
  QuestionPromptFailed,
  type QuestionReply,
  Questions,
  type QuestionsService
} from "./ports/Questions.js"
export * as Elicitation from "./interaction/Elicitation.js"
export * as QuestionQueue from "./interaction/QuestionQueue.js"
export * as QuestionsExtension from "./interaction/Questions.js"
export * as UrlElicitation from "./interaction/UrlElicitation.js"
export * as UserInput from "./interaction/UserInput.js"
export * from "./session/errors.js"
export * as SessionRuntime from "./session/SessionRuntime.js"
export * as SessionState from "./session/SessionState.js"
export * as TranscriptMirror from "./session/TranscriptMirror.js"
export * as SessionStore from "./session/SessionStore.js"
export * as ArchiveGuard from "./supervision/ArchiveGuard.js"
export * as Branching from "./supervision/Branching.js"
export * as Catalog from "./supervision/Catalog.js"
export * as Discovery from "./supervision/Discovery.js"
export {
  ArchiveBlocked,
  BranchRefused,
  EnumerationFailed,
  SessionProtected,
  ThreadNotFound
} from "./supervision/errors.js"
export * as RemoteCatalogs from "./supervision/RemoteCatalogs.js"
export * as NodeAttempt from "./nodes/NodeAttempt.js"
export * as NodeCatalogs from "./nodes/NodeCatalogs.js"
export * as NodeHeaderFilter from "./nodes/HeaderFilter.js"
export * as NodePairing from "./nodes/NodePairing.js"
export * as NodeRelay from "./nodes/NodeRelay.js"
export { NodeDisconnected, NodePairingError, NodeTurnFailed, NodeUnreachable } from "./nodes/errors.js"
export * as SessionGuard from "./supervision/SessionGuard.js"
export * as Supervision from "./supervision/layer.js"
export * as SupervisionSettings from "./supervision/SupervisionSettings.js"
export * as TurnExtensions from "./turn/TurnExtension.js"
export * as TurnContext from "./turn/TurnContext.js"
export * as EmbedderTools from "./tools/EmbedderTools.js"
export * as HarnessTools from "./tools/HarnessTools.js"
export * as ToolBridge from "./tools/ToolBridge.js"
export * as ToolCatalog from "./tools/ToolCatalog.js"
export * as ToolObservations from "./tools/ToolObservations.js"
export * as Instructions from "./turn/Instructions.js"
export * as SessionWork from "./harness/SessionWork.js"
export * as WorkObserver from "./harness/WorkObserver.js"
export * as LifecycleBus from "./turn/LifecycleBus.js"
export * as TurnEvent from "./turn/TurnEvent.js"
export * as TurnRunner from "./turn/TurnRunner.js"
export * as Notifications from "./appserver/Notifications.js"
export * as Protocol from "../schemas/protocol.js"
export * as JsonRpc from "../schemas/jsonrpc.js"
export * as SessionRecords from "../schemas/session.js"
