// The control API on the network: one HTTP server (or HTTPS, or a Unix socket) with
//   GET  /          the Control UI's page (public: it holds no secret; it asks for the token or reads it from the URL's
//                   fragment, which browsers never send)
//   GET  /ui.js     its script
//   GET  /rpc       the API over WebSocket (one RPC message per frame, ndjson)
//   POST /rpc       the API over HTTP (a streamed ndjson response), for clients without WebSocket
//   GET  /healthz   200 while the process serves (no token; says nothing but "ok")
// Every /rpc call needs the bearer token: `Authorization: Bearer TOKEN`, or, from a browser (which cannot set headers
// on a WebSocket), the subprotocol `codex-harness.bearer.TOKEN` next to `codex-harness.v1` (the one the server picks).
// A WebSocket whose Origin is another site is refused before the token is looked at, and so is a Host that is not the
// one served (DNS rebinding).
import { HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { HttpApp } from "@effect/platform"
import { RpcSerialization, RpcServer } from "@effect/rpc"
import { Effect, Layer, Option, type Scope } from "effect"
import * as crypto from "node:crypto"
import { Defaults as ConfigDefaults } from "../../schemas/config.js"
import { ControlRpcs } from "../../schemas/control.js"

import { bearerProtocolPrefix } from "./ControlClient.js"

export interface UiAssets {
  readonly html: string
  readonly script: string
}

export interface ControlAppOptions {
  readonly token: string
  readonly ui: UiAssets | undefined
  /** host names (with port) a request may address; empty: any (a Unix socket) */
  readonly hosts: ReadonlyArray<string>
  /** counts open WebSocket clients, for Health */
  readonly onClient: (delta: 1 | -1) => void
  /** the largest request body `POST /rpc` reads; default `defaultMaxRequestBytes` */
  readonly maxRequestBytes?: number | undefined
  /**
   * a span for each control call (`Control.StartTurn`, ...); false when no tracer exports them (serve without
   * --otlp), where they were work on every call for nobody
   */
  readonly tracing: boolean
}

/**
 * 4 MiB by default (schemas/config.ts `serve.maxRequestBytes`). Without a bound the body was read whole into one string:
 * 256 MiB took a serve to 652 MB and 512 MiB ended it (`RangeError: Invalid string length`); @effect/platform-node's own
 * 10 MiB default does not reach a handler served with `HttpServer.serveEffect`. WebSocket messages get the same bound
 * (WebSocketFrameBound).
 */
export const defaultMaxRequestBytes: number = ConfigDefaults.serve.maxRequestBytes

const sameToken = (given: string, token: string) => {
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  return a.length === b.length && crypto.timingSafeEqual(a, b)
}

/** the token a request presents, from its Authorization header or its WebSocket subprotocols */
export const presentedToken = (headers: Readonly<Record<string, string | undefined>>): string | undefined => {
  const auth = headers["authorization"]
  if (auth !== undefined && /^bearer /i.test(auth)) return auth.slice(7).trim()
  const offered = headers["sec-websocket-protocol"]
  if (offered === undefined) return undefined
  return offered.split(",").map((p) => p.trim()).find((p) => p.startsWith(bearerProtocolPrefix))?.slice(bearerProtocolPrefix.length)
}

const pageHeaders = {
  "content-security-policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
}

const originHost = (origin: string): string | undefined => {
  try {
    return new URL(origin).host.toLowerCase()
  } catch {
    return undefined
  }
}

const refuse = (status: number, text: string) => HttpServerResponse.text(`${text}\n`, { status, headers: { "cache-control": "no-store" } })

/** a refusal that also ends the connection: the body the client may still send is never read */
const refuseAndClose = (status: number, text: string) =>
  HttpServerResponse.text(`${text}\n`, { status, headers: { "cache-control": "no-store", connection: "close" } })

/** The server's one HttpApp; the RPC handlers come from the context. */
export const makeApp = (options: ControlAppOptions) =>
  Effect.gen(function* () {
    const rpcOptions = { spanPrefix: "Control", disableTracing: !options.tracing }
    const overWebSocket = yield* RpcServer.toHttpAppWebsocket(ControlRpcs, rpcOptions)
    const maxRequestBytes = options.maxRequestBytes ?? defaultMaxRequestBytes
    const tooLarge = () => refuseAndClose(413, `the request body is larger than ${maxRequestBytes} bytes`)
    // a body is read only when its Content-Length is within the bound (Node's parser reads no more than that); the
    // read's own bound is the second line
    const overHttp = (yield* RpcServer.toHttpApp(ControlRpcs, rpcOptions)).pipe(
      HttpIncomingMessage.withMaxBodySize(Option.some(maxRequestBytes))
    )
    const app: HttpApp.Default<never, Scope.Scope> = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const url = new URL(request.url, "http://localhost")
      const host = request.headers["host"]
      if (options.hosts.length > 0 && (host === undefined || !options.hosts.includes(host.toLowerCase()))) {
        return refuse(421, "unknown host")
      }
      switch (url.pathname) {
        case "/healthz":
          return HttpServerResponse.text("ok\n")
        case "/":
        case "/index.html":
          return options.ui === undefined
            ? refuse(404, "the Control UI is not built (npm run build)")
            : HttpServerResponse.text(options.ui.html, { contentType: "text/html; charset=utf-8", headers: pageHeaders })
        case "/ui.js":
          return options.ui === undefined
            ? refuse(404, "the Control UI is not built (npm run build)")
            : HttpServerResponse.text(options.ui.script, { contentType: "text/javascript; charset=utf-8", headers: pageHeaders })
        case "/rpc": {
          const upgrade = (request.headers["upgrade"] ?? "").toLowerCase() === "websocket"
          const origin = request.headers["origin"]
          if (upgrade && origin !== undefined && originHost(origin) !== host?.toLowerCase()) {
            return refuse(403, "cross-origin WebSocket refused")
          }
          const given = presentedToken(request.headers)
          if (given === undefined || !sameToken(given, options.token)) {
            return refuse(401, "a valid bearer token is required (see serve.token in the state dir)")
          }
          if (upgrade) {
            options.onClient(1)
            return yield* overWebSocket.pipe(Effect.ensuring(Effect.sync(() => options.onClient(-1))))
          }
          if (request.method !== "POST") return refuse(405, "POST or a WebSocket upgrade")
          // refused before a byte of the body is read: a body of unknown size (chunked) would only be found too large
          // once read past the bound, when the platform drops the connection and the client never hears why
          const length = request.headers["content-length"]
          if (length === undefined) return refuseAndClose(411, `POST /rpc needs a Content-Length of at most ${maxRequestBytes} bytes`)
          if (!/^\d+$/.test(length) || Number(length) > maxRequestBytes) return tooLarge()
          return yield* overHttp
        }
        default:
          return refuse(404, "not found")
      }
    })
    return app
  })

/** the serialization both transports speak */
export const serialization: Layer.Layer<RpcSerialization.RpcSerialization> = RpcSerialization.layerNdjson
