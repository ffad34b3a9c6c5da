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
export type { ExitInfo, TransportOptions } from "../../appserver/Transport.js"
