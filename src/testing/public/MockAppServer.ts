// Public (codex-harness/testing): the mock app-server's control handle and script shapes, as layers/Test gives them.
export {
  type ClientMessage,
  type ClientNotification,
  type ClientReply,
  type ClientRequest,
  type ClientResponse,
  type InvalidLine,
  isNotification,
  isRequest,
  isResponse,
  MockPeerExited,
  parseClientLine,
  type RpcFailure
} from "../mock/ClientMessages.js"
export {
  type AwaitMessage,
  duringTurn,
  type FinishTurnOptions,
  type Handler,
  type HandlerError,
  type MockAppServerService,
  type MockPeer,
  type MockScript,
  type RequestContext,
  type TurnMode,
  type TurnStartInput
} from "../mock/Script.js"
export { MockAppServer } from "../mock/Server.js"
// replay mode (`script.replay`): a wire recording (`codex-harness run --record FILE`, or the WireRecorder layer) played
// back, what the harness sends checked against it
export { ReplayMismatch, type ReplayScript } from "../mock/Replay.js"
export {
  type Entry as RecordingEntry,
  type Header as RecordingHeader,
  read as readRecording,
  type Recording,
  RecordingUnreadable,
  type Roots
} from "../../appserver/WireRecording.js"
export type { ExitInfo, TransportOptions } from "../../appserver/Transport.js"
