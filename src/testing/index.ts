// `codex-harness/testing`: test doubles for an app's own tests. ScriptedModel stands in for the model (a real Responses
// API server on 127.0.0.1, for integration tests with the real app-server); MockAppServer is the control handle of the
// in-memory app-server that `codex-harness/layers/Test` runs on; RecordingDelivery records replies.
export * as MockAppServer from "./public/MockAppServer.js"
export * as RecordingDelivery from "./public/RecordingDelivery.js"
export * as ScriptedModel from "./public/ScriptedModel.js"
