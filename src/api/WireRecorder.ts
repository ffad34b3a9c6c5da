// Public: record a session's app-server traffic to a file (secrets masked, directories as placeholders), to replay it
// later on the MockAppServer (`codex-harness/testing`). Provide `layer(file)` under the Live layer.
export { layer, type RecorderOptions, WireRecorder, WireRecordingFailed, type WireRecorderService } from "../appserver/WireRecorder.js"
/** what a recorder wraps: one app-server's line transport (the recorder sees every line in both directions) */
export type { TransportHandle, TransportOptions } from "../appserver/Transport.js"
export type { FramedLine } from "../appserver/LineFramer.js"
