// An in-memory `codex app-server` for tests: a `Transport` whose spawns are scripted JSON-RPC peers, so the connection,
// the pool, the turn runner and the harness run against it unchanged. Each peer answers requests from handlers (defaults
// shaped like the real 0.171 messages), can notify, send server requests and raw lines, and can exit or crash. It records
// every message the client sent; in replay mode (`script.replay`) it plays a wire recording instead and checks what the
// client sends against it. It never touches a real process and never reads the clock for waiting: TestClock-safe.
// This is the public module; the mock lives in ./mock/, and only what is re-exported here is promised to users' tests.
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
} from "./mock/ClientMessages.js"
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
} from "./mock/Script.js"
export { layer, MockAppServer } from "./mock/Server.js"
export { ReplayMismatch, type ReplayScript } from "./mock/Replay.js"
/** a wire recording to replay (`script.replay`), read and checked */
export { read as readRecording, type Recording, RecordingUnreadable } from "../appserver/WireRecording.js"
