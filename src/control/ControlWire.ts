// The control API's wire, spoken without Effect: for the two clients whose size is their cost, the Control UI (a page
// that loads one script) and the CLI's `run --connect` / `chat --connect` (a process per turn, src/cli/thin/). Both
// used @effect/rpc's RpcClient (ControlClient.ts), which brought Effect's runtime, Schema and the socket layer: 640 KB
// of the page's script, and most of a connect process's start-up. No library speaks @effect/rpc's protocol without
// @effect/rpc, so this is the protocol by hand, as its 0.76.2 socket server reads and writes it (RpcServer
// makeSocketProtocol with RpcSerialization.layerNdjson, checked in its source):
//
//   client -> server   {"_tag":"Request","id":"7","tag":"StartTurn","payload":{...},"headers":[]}   a call, by a fresh id
//                      {"_tag":"Ack","requestId":"7"}          a stream's chunk was taken: the server sends the next
//                      {"_tag":"Interrupt","requestId":"7"}    stop that call (a stream the client no longer follows)
//                      {"_tag":"Ping"}                         answered {"_tag":"Pong"}
//   server -> client   {"_tag":"Chunk","requestId":"7","values":[...]}       a stream's items (one Ack each chunk)
//                      {"_tag":"Exit","requestId":"7","exit":{"_tag":"Success","value":...}}   or "Failure" + cause
//                      {"_tag":"Defect","defect":...}                         the connection's own failure
//
// each one JSON object per line (ndjson) in WebSocket text frames. The server decodes every payload with its Schema;
// what comes back is used as the schemas' encoded form, which for ControlRpcs is the type itself (plain JSON: no
// dates, no transformations), so the types are ControlRpcs' own (type-only imports: nothing of them is loaded). The
// serve is the client's own, reached with its token; still, whoever prints a field of it treats it as text.
//
// The connection opens on first use and again on the first use after it was lost (a call made while it is down fails
// with `Lost`, as the RpcClient's did); each call in flight when it is lost ends with `Lost`. A ping every 10 s finds a
// connection whose peer went silent. Nothing here keeps a Node process alive by itself: the timers are unref'd.
import type { Rpc, RpcGroup } from "@effect/rpc"
import type { ControlFailure, ControlRpcs } from "../../schemas/control.js"

type Rpcs = RpcGroup.Rpcs<typeof ControlRpcs>
export type Tag = Rpc.Tag<Rpcs>
type RpcOf<T extends Tag> = Extract<Rpcs, { readonly _tag: T }>
export type PayloadOf<T extends Tag> = Rpc.PayloadConstructor<RpcOf<T>>
/** a stream's items */
export type ItemOf<T extends Tag> = Rpc.SuccessChunk<RpcOf<T>>
/** a call's answer */
export type SuccessOf<T extends Tag> = Rpc.SuccessExit<RpcOf<T>>
export type StreamTag = { readonly [T in Tag]: [ItemOf<T>] extends [never] ? never : T }[Tag]
export type CallTag = Exclude<Tag, StreamTag>
/** the payload argument, left out where the call takes none */
type PayloadArgs<T extends Tag> = [PayloadOf<T>] extends [void] ? [] : [payload: PayloadOf<T>]

/** the subprotocol the server picks, and the one that carries the token (a browser can send nothing else) */
export const protocol = "codex-harness.v1"
export const bearerProtocolPrefix = "codex-harness.bearer."

/** How a call failed: the API's own refusal, the connection (never opened, or lost), or the server's defect. */
export type WireFailure =
  | { readonly _tag: "ControlFailure"; readonly code: ControlFailure["code"]; readonly message: string }
  /**
   * `closeCode`: the WebSocket's close code when it closed (1009: a message was past the server's bound); `httpStatus`:
   * the status of an HTTP call the server refused (401: the token; 413: past its bound)
   */
  | { readonly _tag: "Lost"; readonly message: string; readonly closeCode?: number; readonly httpStatus?: number }
  | { readonly _tag: "Defect"; readonly message: string }
  | { readonly _tag: "Interrupted"; readonly message: string }

export type Result<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly failure: WireFailure }

/** What of a WebSocket the wire uses: the browser's own and Node's `ws` both have it. */
export interface SocketLike {
  readonly readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  addEventListener(type: "open" | "message" | "close" | "error", listener: (event: never) => void): void
}

/** opens a WebSocket to `url` offering `protocols` */
export type OpenSocket = (url: string, protocols: Array<string>) => SocketLike

export interface StreamHandlers<A> {
  readonly item: (item: A) => void
  /** the stream ended: undefined when it completed, else why not. Not called after the caller cancelled it. */
  readonly end: (failure: WireFailure | undefined) => void
}

export interface Wire {
  readonly call: <T extends CallTag>(tag: T, ...payload: PayloadArgs<T>) => Promise<Result<SuccessOf<T>>>
  /** follows a stream call; returns its cancel, which asks the server to stop it */
  readonly stream: <T extends StreamTag>(tag: T, payload: PayloadOf<T>, handlers: StreamHandlers<ItemOf<T>>) => () => void
  /** closes the connection; calls in flight end with `Lost` */
  readonly close: () => void
}

export interface WireOptions {
  /** ws://HOST:PORT/rpc, wss://..., or (Node's `ws`) ws+unix:PATH:/rpc */
  readonly url: string
  readonly token: string
  readonly open: OpenSocket
  readonly openTimeoutMs?: number
}

const openSocket = 1
/** the longest line the wire takes from the server, as RpcSerialization's ndjson parser bounds it */
export const maxLineChars = 16 * 1024 * 1024
const pingEveryMs = 10_000

interface Pending {
  readonly chunk: ((values: ReadonlyArray<unknown>) => void) | undefined
  readonly exit: (exit: { readonly _tag: string; readonly value?: unknown; readonly cause?: unknown }) => void
  readonly lost: (failure: WireFailure) => void
}

const unrefd = <T>(timer: T): T => {
  ;(timer as { unref?: () => void }).unref?.()
  return timer
}

/** the text of an encoded defect (Schema.Defect: a string, or an error's name, message and stack) */
const defectText = (defect: unknown): string => {
  if (typeof defect === "string") return defect
  if (typeof defect === "object" && defect !== null && typeof (defect as { message?: unknown }).message === "string") {
    return (defect as { message: string }).message
  }
  try {
    return JSON.stringify(defect) ?? "failed"
  } catch {
    return "failed"
  }
}

/** what an encoded Cause says first: a Fail (the API's ControlFailure), a Die, an Interrupt */
export const failureOfCause = (cause: unknown): WireFailure => {
  const c = (typeof cause === "object" && cause !== null ? cause : {}) as Record<string, unknown>
  switch (c["_tag"]) {
    case "Fail": {
      const e = (typeof c["error"] === "object" && c["error"] !== null ? c["error"] : {}) as Record<string, unknown>
      if (e["_tag"] === "ControlFailure" && typeof e["code"] === "string" && typeof e["message"] === "string") {
        return { _tag: "ControlFailure", code: e["code"] as ControlFailure["code"], message: e["message"] }
      }
      return { _tag: "Defect", message: defectText(c["error"]) }
    }
    case "Die":
      return { _tag: "Defect", message: defectText(c["defect"]) }
    case "Interrupt":
      return { _tag: "Interrupted", message: "interrupted" }
    case "Sequential":
    case "Parallel": {
      const left = failureOfCause(c["left"])
      return left._tag === "Defect" && left.message === "failed" ? failureOfCause(c["right"]) : left
    }
    default:
      return { _tag: "Defect", message: "failed" }
  }
}

/** the one line a failure reads as, for a page or a terminal */
export const failureText = (failure: WireFailure): string =>
  failure._tag === "ControlFailure" ? `${failure.code}: ${failure.message}` : failure.message

export const make = (options: WireOptions): Wire => {
  const pending = new Map<string, Pending>()
  let nextId = 0
  let socket: SocketLike | undefined
  let opening: Promise<Result<SocketLike>> | undefined
  let closed = false

  const lose = (from: SocketLike, failure: WireFailure) => {
    if (socket !== from) return
    socket = undefined
    const ended = [...pending.values()]
    pending.clear()
    for (const p of ended) p.lost(failure)
  }

  const receive = (message: Record<string, unknown>) => {
    switch (message["_tag"]) {
      case "Chunk": {
        const id = String(message["requestId"])
        const p = pending.get(id)
        if (p?.chunk === undefined || !Array.isArray(message["values"])) return
        p.chunk(message["values"])
        // taken: the server sends the stream's next chunk only after this
        if (pending.has(id)) socket?.send(`${JSON.stringify({ _tag: "Ack", requestId: id })}\n`)
        return
      }
      case "Exit": {
        const id = String(message["requestId"])
        const p = pending.get(id)
        if (p === undefined) return
        pending.delete(id)
        const exit = message["exit"]
        p.exit(typeof exit === "object" && exit !== null ? (exit as { _tag: string }) : { _tag: "Failure" })
        return
      }
      case "Defect": {
        const failure: WireFailure = { _tag: "Defect", message: defectText(message["defect"]) }
        const ended = [...pending.values()]
        pending.clear()
        for (const p of ended) p.lost(failure)
        return
      }
      default:
        // Pong, and anything newer: any message shows the peer is there
        return
    }
  }

  const connect = (): Promise<Result<SocketLike>> =>
    new Promise((resolve) => {
      let opened = false
      let settled = false
      let buffer = ""
      let answered = true
      const ws = options.open(options.url, [protocol, `${bearerProtocolPrefix}${options.token}`])
      const settle = (result: Result<SocketLike>) => {
        if (settled) return
        settled = true
        clearTimeout(openTimer)
        resolve(result)
      }
      const openTimer = unrefd(setTimeout(() => {
        settle({ ok: false, failure: { _tag: "Lost", message: `no connection within ${(options.openTimeoutMs ?? 10_000) / 1000} s` } })
        ws.close()
      }, options.openTimeoutMs ?? 10_000))
      const pinger = unrefd(setInterval(() => {
        if (!opened || socket !== ws) return
        // the previous ping was never answered, nor anything else heard since: the peer is gone
        if (!answered) {
          lose(ws, { _tag: "Lost", message: "the connection to serve was lost (no answer to a ping)" })
          ws.close()
          return
        }
        answered = false
        ws.send(`${JSON.stringify({ _tag: "Ping" })}\n`)
      }, pingEveryMs))
      let lastError = ""
      ws.addEventListener("open", () => {
        // too late (the open timed out), or the wire was closed meanwhile
        if (settled || closed) return ws.close()
        opened = true
        socket = ws
        settle({ ok: true, value: ws })
      })
      ws.addEventListener("error", (event: { readonly message?: string; readonly error?: { readonly message?: string } }) => {
        lastError = event.error?.message ?? event.message ?? lastError
      })
      ws.addEventListener("close", (event: { readonly code?: number; readonly reason?: string }) => {
        clearInterval(pinger)
        const why = lastError !== "" ? lastError : event.reason !== undefined && event.reason !== "" ? event.reason : undefined
        const failure: WireFailure = {
          _tag: "Lost",
          message: opened ? "the connection to serve was lost" : why ?? "the connection was refused",
          ...(event.code !== undefined ? { closeCode: event.code } : {})
        }
        if (!opened) settle({ ok: false, failure })
        lose(ws, failure)
      })
      ws.addEventListener("message", (event: { readonly data: unknown }) => {
        answered = true
        buffer += typeof event.data === "string" ? event.data : String(event.data)
        for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
          const line = buffer.slice(0, nl)
          buffer = buffer.slice(nl + 1)
          if (line.trim() === "") continue
          let parsed: unknown
          try {
            parsed = JSON.parse(line)
          } catch {
            lose(ws, { _tag: "Lost", message: "serve sent a line that is not JSON" })
            ws.close()
            return
          }
          if (typeof parsed === "object" && parsed !== null) receive(parsed as Record<string, unknown>)
        }
        if (buffer.length > maxLineChars) {
          lose(ws, { _tag: "Lost", message: `serve sent a line over ${maxLineChars} characters` })
          ws.close()
        }
      })
    })

  const ready = (): Promise<Result<SocketLike>> => {
    if (closed) return Promise.resolve({ ok: false, failure: { _tag: "Lost", message: "the connection was closed" } })
    if (socket !== undefined && socket.readyState === openSocket) return Promise.resolve({ ok: true, value: socket })
    opening ??= connect().finally(() => {
      opening = undefined
    })
    return opening
  }

  /** sends one request once the connection is open; `handler` gets its answer */
  const request = (tag: Tag, payload: unknown, handler: Pending): { readonly cancel: () => void } => {
    const id = String(nextId++)
    let cancelled = false
    void ready().then((open) => {
      if (cancelled) return
      if (!open.ok) return handler.lost(open.failure)
      pending.set(id, handler)
      open.value.send(`${JSON.stringify({ _tag: "Request", id, tag, payload, headers: [] })}\n`)
    })
    return {
      cancel: () => {
        cancelled = true
        if (pending.delete(id)) socket?.send(`${JSON.stringify({ _tag: "Interrupt", requestId: id })}\n`)
      }
    }
  }

  return {
    call: (tag, ...payload) =>
      new Promise((resolve) => {
        request(tag, payload[0], {
          chunk: undefined,
          exit: (exit) =>
            resolve(exit._tag === "Success" ? { ok: true, value: exit.value as never } : { ok: false, failure: failureOfCause(exit.cause) }),
          lost: (failure) => resolve({ ok: false, failure })
        })
      }),
    stream: (tag, payload, handlers) => {
      let done = false
      const finish = (failure: WireFailure | undefined) => {
        if (done) return
        done = true
        handlers.end(failure)
      }
      const { cancel } = request(tag, payload, {
        chunk: (values) => {
          for (const value of values) if (!done) handlers.item(value as never)
        },
        exit: (exit) => finish(exit._tag === "Success" ? undefined : failureOfCause(exit.cause)),
        lost: finish
      })
      return () => {
        done = true
        cancel()
      }
    },
    close: () => {
      closed = true
      const open = socket
      if (open !== undefined) {
        lose(open, { _tag: "Lost", message: "the connection was closed" })
        open.close()
      }
    }
  }
}
