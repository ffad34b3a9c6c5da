// The largest WebSocket message a serve accepts on /rpc. @effect/platform-node 0.108 upgrades WebSocket requests with
// a `ws` WebSocketServer it builds itself with `ws`'s defaults (100 MiB messages) and exposes neither that server nor
// its upgrade handler, so the bound cannot be passed to it. What can be done is what this module does: for the length
// of a Scope, `ws`'s WebSocketServer lowers its `maxPayload` to the bound when it upgrades a request (the option is
// read per upgrade). A message past it closes that socket with 1009 ("Message too big") while it is being read, before
// it is held whole; the serve and its other clients go on. Process-wide on purpose and only used by `serve`, which is a
// process of its own; the harness's WebSocket clients (to app-servers) are not servers and are not affected.
import { Effect, type Scope } from "effect"
// @ts-expect-error `ws` (the WebSocket @effect/platform-node itself uses on Node 20) ships no type declarations
import { WebSocketServer } from "ws"

interface UpgradingServer {
  readonly options: { maxPayload: number }
  handleUpgrade(...args: Array<unknown>): unknown
}

const prototype = (WebSocketServer as { prototype: UpgradingServer }).prototype

/** Bounds every WebSocket message a server in this process reads to `maxBytes`, until the scope closes. */
export const bound = (maxBytes: number): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const original = prototype.handleUpgrade
      prototype.handleUpgrade = function (this: UpgradingServer, ...args: Array<unknown>) {
        if (this.options.maxPayload === 0 || this.options.maxPayload > maxBytes) this.options.maxPayload = maxBytes
        return original.apply(this, args)
      }
      return original
    }),
    (original) =>
      Effect.sync(() => {
        prototype.handleUpgrade = original
      })
  ).pipe(Effect.asVoid)
