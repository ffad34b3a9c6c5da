// The control API over HTTP for the CLI's --connect client: every call one `POST /rpc` whose ndjson response streams
// its answer (@effect/rpc's HTTP protocol: the request line, then the server's Chunk lines and its Exit; no acks: the
// response's flow control is TCP's). The same Wire as ControlWire's WebSocket (the Control UI's), so run.ts and chat.ts
// do not know which they drive; HTTP here because Node's own `http` is all it needs: `ws` (with `https`, `tls` and
// `zlib`, which it loads at once) cost a process per turn a third of its start-up. `https` is loaded only for a wss://
// serve. A call in flight when its connection fails ends with `Lost`; cancelling a stream closes its request, which the
// serve takes as the call's interruption (the turn it started goes on: only the Interrupt call stops it).
import * as http from "node:http"
import type * as Https from "node:https"
import {
  type CallTag,
  failureOfCause,
  type ItemOf,
  maxLineChars,
  type PayloadOf,
  type Result,
  type StreamHandlers,
  type StreamTag,
  type SuccessOf,
  type Tag,
  type Wire,
  type WireFailure
} from "../../control/ControlWire.js"

/** how long a call waits for its connection to open */
const connectTimeoutMs = 10_000

/** the smallest request bound a serve takes (`--max-request-bytes`, schemas/config.ts maxRequestBytesRange.min) */
export const smallestBound = 64 * 1024

interface Endpoint {
  readonly secure: boolean
  readonly options: http.RequestOptions
}

/** where POST /rpc goes for a control URL: ws://HOST:PORT/rpc, wss://..., or ws+unix:PATH:/rpc */
export const endpointOf = (url: string): Endpoint => {
  if (url.startsWith("ws+unix:")) {
    const rest = url.slice("ws+unix:".length)
    const at = rest.lastIndexOf(":/")
    return { secure: false, options: { socketPath: rest.slice(0, at), path: rest.slice(at + 1) } }
  }
  const parsed = new URL(url)
  return {
    secure: parsed.protocol === "wss:",
    options: { host: parsed.hostname.replace(/^\[|\]$/g, ""), port: parsed.port, path: `${parsed.pathname}${parsed.search}` }
  }
}

interface Handler {
  readonly item: ((value: unknown) => void) | undefined
  readonly exit: (exit: { readonly _tag: string; readonly value?: unknown; readonly cause?: unknown }) => void
  readonly lost: (failure: WireFailure) => void
}

const lost = (message: string, httpStatus?: number): WireFailure =>
  ({ _tag: "Lost", message, ...(httpStatus !== undefined ? { httpStatus } : {}) })

export const make = (target: { readonly url: string; readonly token: string }): Wire => {
  const endpoint = endpointOf(target.url)
  // keep-alive: a run's Interrupt (Ctrl-C) reuses the connection; idle sockets never hold the process (Node unrefs them)
  let agent: http.Agent | undefined
  let https: typeof Https | undefined
  let nextId = 0
  const open = new Set<http.ClientRequest>()
  let closed = false

  const moduleFor = async (): Promise<{ readonly request: typeof http.request; readonly agent: http.Agent }> => {
    if (endpoint.secure) https ??= await import("node:https")
    agent ??= endpoint.secure ? new https!.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true })
    return { request: endpoint.secure ? https!.request : http.request, agent }
  }

  /** one POST /rpc; `handler` gets its items, its exit or why it was lost, exactly once at the end */
  const post = (tag: Tag, payload: unknown, handler: Handler): { readonly cancel: () => void } => {
    const id = String(nextId++)
    let done = false
    let request: http.ClientRequest | undefined
    let cancelled = false
    const finish = (end: () => void) => {
      if (done) return
      done = true
      if (request !== undefined) open.delete(request)
      end()
    }
    if (closed) {
      queueMicrotask(() => finish(() => handler.lost(lost("the connection was closed"))))
      return { cancel: () => {} }
    }
    const body = `${JSON.stringify({ _tag: "Request", id, tag, payload, headers: [] })}\n`
    void moduleFor().then(({ agent, request: send }) => {
      if (cancelled) return
      const req = send({
        ...endpoint.options,
        agent,
        method: "POST",
        headers: {
          authorization: `Bearer ${target.token}`,
          "content-type": "application/ndjson",
          "content-length": Buffer.byteLength(body)
        }
      })
      request = req
      open.add(req)
      const connectTimer = setTimeout(() => {
        finish(() => handler.lost(lost(`no connection within ${connectTimeoutMs / 1000} s`)))
        req.destroy()
      }, connectTimeoutMs)
      connectTimer.unref()
      req.once("socket", (socket) => {
        if (!socket.connecting) return clearTimeout(connectTimer)
        socket.once("connect", () => clearTimeout(connectTimer))
      })
      req.once("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(connectTimer)
        // the serve answers a body past its bound with 413 and closes at once, before it reads any of it: a body larger
        // than the socket takes in one go then meets the close (EPIPE, ECONNRESET) before its answer can be read
        const cutOff = (error.code === "EPIPE" || error.code === "ECONNRESET") && Buffer.byteLength(body) > smallestBound
        finish(() => handler.lost(cutOff ? lost(`the serve closed the connection while the request was sent (${error.message})`, 413) : lost(error.message)))
      })
      req.once("response", (response) => {
        clearTimeout(connectTimer)
        const status = response.statusCode ?? 0
        if (status !== 200) {
          response.resume()
          return finish(() => handler.lost(lost(`HTTP ${status}`, status)))
        }
        response.setEncoding("utf8")
        let buffer = ""
        response.on("data", (text: string) => {
          buffer += text
          for (let nl = buffer.indexOf("\n"); nl >= 0 && !done; nl = buffer.indexOf("\n")) {
            const line = buffer.slice(0, nl)
            buffer = buffer.slice(nl + 1)
            if (line.trim() !== "") receive(line)
          }
          if (buffer.length > maxLineChars) {
            finish(() => handler.lost(lost(`serve sent a line over ${maxLineChars} characters`)))
            req.destroy()
          }
        })
        response.once("end", () => finish(() => handler.lost(lost("the connection to serve was lost"))))
        response.once("error", () => finish(() => handler.lost(lost("the connection to serve was lost"))))
      })
      const receive = (line: string) => {
        let message: Record<string, unknown>
        try {
          const parsed: unknown = JSON.parse(line)
          if (typeof parsed !== "object" || parsed === null) return
          message = parsed as Record<string, unknown>
        } catch {
          finish(() => handler.lost(lost("serve sent a line that is not JSON")))
          req.destroy()
          return
        }
        switch (message["_tag"]) {
          case "Chunk":
            if (Array.isArray(message["values"]) && handler.item !== undefined) for (const value of message["values"]) if (!done) handler.item(value)
            return
          case "Exit": {
            const exit = message["exit"]
            finish(() => handler.exit(typeof exit === "object" && exit !== null ? (exit as { _tag: string }) : { _tag: "Failure" }))
            return
          }
          case "Defect":
            finish(() => handler.exit({ _tag: "Failure", cause: { _tag: "Die", defect: message["defect"] } }))
            return
          default:
            return
        }
      }
      req.end(body)
    })
    return {
      cancel: () => {
        cancelled = true
        done = true
        if (request !== undefined) {
          open.delete(request)
          request.destroy()
        }
      }
    }
  }

  const call = <T extends CallTag>(tag: T, ...payload: Array<unknown>): Promise<Result<SuccessOf<T>>> =>
    new Promise((resolve) => {
      post(tag, payload[0], {
        item: undefined,
        exit: (exit) =>
          resolve(exit._tag === "Success" ? { ok: true, value: exit.value as SuccessOf<T> } : { ok: false, failure: failureOfCause(exit.cause) }),
        lost: (failure) => resolve({ ok: false, failure })
      })
    })

  const stream = <T extends StreamTag>(tag: T, payload: PayloadOf<T>, handlers: StreamHandlers<ItemOf<T>>): (() => void) =>
    post(tag, payload, {
      item: (value) => handlers.item(value as ItemOf<T>),
      exit: (exit) => handlers.end(exit._tag === "Success" ? undefined : failureOfCause(exit.cause)),
      lost: (failure) => handlers.end(failure)
    }).cancel

  return {
    call: call as Wire["call"],
    stream,
    close: () => {
      closed = true
      for (const req of open) req.destroy()
      open.clear()
      agent?.destroy()
    }
  }
}
