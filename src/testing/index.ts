// `codex-harness/testing`: test doubles for users' own tests. ScriptedModel stands in for the model (a real Responses
// API server on 127.0.0.1, for integration tests with the real app-server); MockAppServer stands in for the app-server
// (an in-memory JSON-RPC peer, for service tests of everything above the wire).
export * as MockAppServer from "./MockAppServer.js"
export * as RecordingDelivery from "./RecordingDelivery.js"
export * as ScriptedModel from "./ScriptedModel.js"
