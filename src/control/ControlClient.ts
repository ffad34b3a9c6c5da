// A client of the control API over WebSocket, for any platform: the CLI gives it Node's WebSocket (`ws`), the Control
// UI the browser's. The token travels as a subprotocol next to `codex-harness.v1` (the one the server picks), the one
// way a browser can send it on a WebSocket; Node uses the same, so there is one way to authenticate.
import { Socket } from "@effect/platform"
import { RpcClient, type RpcClientError, type RpcGroup } from "@effect/rpc"
import { RpcSerialization } from "@effect/rpc"
import { Effect, type Scope } from "effect"
import { ControlRpcs } from "../../schemas/control.js"
import { bearerProtocolPrefix, protocol } from "./ControlWire.js"

export { bearerProtocolPrefix, protocol } from "./ControlWire.js"

export interface Target {
  /** ws://HOST:PORT/rpc, wss://…, or ws+unix:PATH:/rpc */
  readonly url: string
  readonly token: string
}

export type Client = RpcClient.RpcClient<RpcGroup.Rpcs<typeof ControlRpcs>, RpcClientError.RpcClientError>

/** A client for the scope; the connection opens on first use and closes with the scope. */
export const make = (target: Target): Effect.Effect<Client, never, Scope.Scope | Socket.WebSocketConstructor> =>
  Effect.gen(function* () {
    const socket = yield* Socket.makeWebSocket(target.url, {
      protocols: [protocol, `${bearerProtocolPrefix}${target.token}`],
      openTimeout: "10 seconds"
    })
    const transport = yield* RpcClient.makeProtocolSocket({ retryTransientErrors: false }).pipe(
      Effect.provideService(Socket.Socket, socket),
      Effect.provide(RpcSerialization.layerNdjson)
    )
    return yield* RpcClient.make(ControlRpcs).pipe(Effect.provideService(RpcClient.Protocol, transport))
  })
