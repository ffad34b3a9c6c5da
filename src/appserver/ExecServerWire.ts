// The one decoder (and encoder) of the exec-server wire (S26): a frame from either peer of a node link becomes a tagged
// value, with the params of every method the harness reads decoded by schemas/execServer.ts (unknown fields kept), or an
// ExecWireError. Above src/appserver nothing parses an exec-server frame or matches its method names; the relay and
// the cleanup client switch on `_tag`. It never decides what to do with a frame: that is the relay's policy.
import { Either, Schema } from "effect"
import type { ParseOptions } from "effect/SchemaAST"
import {
  type ExecClientMethod,
  ExecClientMethods,
  type ExecParams,
  type ExecResult,
  ExecServerNotifications
} from "../../schemas/execServer.js"
import { RequestId, RpcErrorObject } from "../../schemas/jsonrpc.js"
import { ExecWireError } from "./errors.js"

export type { ExecClientMethod, ExecParams, ExecResult } from "../../schemas/execServer.js"

/** The JSON object a frame carried, as sent (the relay passes frames on byte for byte and filters headers on it). */
export type RawMessage = Readonly<Record<string, unknown>>

/** A frame the app-server (the exec-server's client) sent towards the node. */
export type FromAppServer =
  | { readonly _tag: "Initialize"; readonly id: RequestId; readonly params: ExecParams<"initialize">; readonly raw: RawMessage }
  | { readonly _tag: "ProcessStart"; readonly id: RequestId; readonly params: ExecParams<"process/start">; readonly raw: RawMessage }
  | { readonly _tag: "ProcessTerminate"; readonly id: RequestId; readonly params: ExecParams<"process/terminate">; readonly raw: RawMessage }
  | { readonly _tag: "HttpRequest"; readonly id: RequestId; readonly params: ExecParams<"http/request">; readonly raw: RawMessage }
  /** a request the harness does not read (fs/*, environment/*, process/read, ...): passed on as it is */
  | { readonly _tag: "OtherRequest"; readonly id: RequestId; readonly method: string; readonly raw: RawMessage }
  | { readonly _tag: "Notification"; readonly method: string; readonly raw: RawMessage }
  | { readonly _tag: "Response"; readonly id: RequestId | null; readonly raw: RawMessage }

export type ExecError = typeof RpcErrorObject.Type

/** A frame the node's exec-server sent. */
export type FromNode =
  | {
    readonly _tag: "Response"
    readonly id: RequestId | null
    /** `error` set: a JSON-RPC error; otherwise `result` (not decoded here: only the requester knows its method) */
    readonly result: unknown
    readonly error: ExecError | undefined
    readonly raw: RawMessage
  }
  | { readonly _tag: "ProcessExited"; readonly params: typeof ExecServerNotifications["process/exited"]["Type"]; readonly raw: RawMessage }
  | { readonly _tag: "ProcessClosed"; readonly params: typeof ExecServerNotifications["process/closed"]["Type"]; readonly raw: RawMessage }
  | { readonly _tag: "OtherNotification"; readonly method: string; readonly raw: RawMessage }
  | { readonly _tag: "Request"; readonly id: RequestId; readonly method: string; readonly raw: RawMessage }

const preserve: ParseOptions = { onExcessProperty: "preserve", errors: "first" }
/** A parse error's tree on one line: `{ readonly sessionId: string }: ["sessionId"]: is missing` */
const oneLine = (s: string) =>
  s.split("\n").map((l) => l.replace(/^[\s└├│─]+/, "")).filter((l) => l !== "").join(": ")
const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isRequestId = (u: unknown): u is RequestId => typeof u === "string" || (typeof u === "number" && Number.isInteger(u))

// compiled once: every frame of a node link passes through here
const paramsDecoders = {
  initialize: Schema.decodeUnknownEither(ExecClientMethods.initialize.params, preserve),
  "process/start": Schema.decodeUnknownEither(ExecClientMethods["process/start"].params, preserve),
  "process/terminate": Schema.decodeUnknownEither(ExecClientMethods["process/terminate"].params, preserve),
  "http/request": Schema.decodeUnknownEither(ExecClientMethods["http/request"].params, preserve)
} as const
const resultDecoders = new Map<string, (u: unknown) => Either.Either<unknown, { readonly message: string }>>(
  Object.entries(ExecClientMethods).map(([m, c]) => [m, Schema.decodeUnknownEither(c.result as Schema.Schema<unknown>, preserve)])
)
const exitedDecoder = Schema.decodeUnknownEither(ExecServerNotifications["process/exited"], preserve)
const closedDecoder = Schema.decodeUnknownEither(ExecServerNotifications["process/closed"], preserve)
const errorDecoder = Schema.decodeUnknownEither(RpcErrorObject, preserve)

/** The JSON object of a text frame, or why it is not one. */
const parseObject = (from: "app-server" | "node", text: string): Either.Either<RawMessage, ExecWireError> => {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return Either.left(new ExecWireError({ from, kind: "notJson", detail: "not JSON" }))
  }
  return isRecord(parsed) ? Either.right(parsed) : Either.left(new ExecWireError({ from, kind: "notJson", detail: "not a JSON object" }))
}

const requestOf = (tag: FromAppServer["_tag"], method: keyof typeof paramsDecoders, id: RequestId, raw: RawMessage) => {
  const decoded = (paramsDecoders[method] as (u: unknown) => Either.Either<unknown, { readonly message: string }>)(raw.params)
  return Either.isLeft(decoded)
    ? Either.left(new ExecWireError({ from: "app-server", kind: "params", method, id, detail: oneLine(decoded.left.message) }))
    : Either.right({ _tag: tag, id, params: decoded.right, raw } as FromAppServer)
}

/** Decodes one text frame the app-server sent towards the node. */
export const decodeFromAppServer = (text: string): Either.Either<FromAppServer, ExecWireError> =>
  Either.flatMap(parseObject("app-server", text), (raw): Either.Either<FromAppServer, ExecWireError> => {
    const method = raw.method
    if (typeof method !== "string") {
      if ("id" in raw && ("result" in raw || "error" in raw)) {
        return Either.right({ _tag: "Response", id: isRequestId(raw.id) ? raw.id : null, raw })
      }
      return Either.left(new ExecWireError({ from: "app-server", kind: "notMessage", detail: "neither request, response nor notification" }))
    }
    if (!("id" in raw)) return Either.right({ _tag: "Notification", method, raw })
    const id = raw.id
    if (!isRequestId(id)) return Either.left(new ExecWireError({ from: "app-server", method, kind: "notMessage", detail: "a request with an invalid id" }))
    switch (method) {
      case "initialize":
        return requestOf("Initialize", method, id, raw)
      case "process/start":
        return requestOf("ProcessStart", method, id, raw)
      case "process/terminate":
        return requestOf("ProcessTerminate", method, id, raw)
      case "http/request":
        return requestOf("HttpRequest", method, id, raw)
      default:
        return Either.right({ _tag: "OtherRequest", id, method, raw })
    }
  })

/** Decodes one text frame the node's exec-server sent. */
export const decodeFromNode = (text: string): Either.Either<FromNode, ExecWireError> =>
  Either.flatMap(parseObject("node", text), (raw): Either.Either<FromNode, ExecWireError> => {
    const method = raw.method
    if (typeof method === "string") {
      if ("id" in raw) {
        return isRequestId(raw.id)
          ? Either.right({ _tag: "Request", id: raw.id, method, raw })
          : Either.left(new ExecWireError({ from: "node", method, kind: "notMessage", detail: "a request with an invalid id" }))
      }
      const notification = <T extends "ProcessExited" | "ProcessClosed">(
        tag: T,
        decoded: Either.Either<unknown, { readonly message: string }>
      ) =>
        Either.match(decoded, {
          onLeft: (e) => Either.left(new ExecWireError({ from: "node", kind: "params", method, detail: oneLine(e.message) })),
          onRight: (params) => Either.right({ _tag: tag, params, raw } as FromNode)
        })
      switch (method) {
        case "process/exited":
          return notification("ProcessExited", exitedDecoder(raw.params))
        case "process/closed":
          return notification("ProcessClosed", closedDecoder(raw.params))
        default:
          return Either.right({ _tag: "OtherNotification", method, raw })
      }
    }
    if (!("id" in raw) || !("result" in raw || "error" in raw)) {
      return Either.left(new ExecWireError({ from: "node", kind: "notMessage", detail: "neither request, response nor notification" }))
    }
    const id = isRequestId(raw.id) ? raw.id : null
    if (raw.error === undefined || raw.error === null) return Either.right({ _tag: "Response", id, result: raw.result, error: undefined, raw })
    return Either.match(errorDecoder(raw.error), {
      onLeft: (e) => Either.left(new ExecWireError({ from: "node", kind: "notMessage", detail: `a malformed error: ${oneLine(e.message)}` })),
      onRight: (error) => Either.right({ _tag: "Response", id, result: undefined, error, raw })
    })
  })

/** Decodes the result of a request the harness made (or watched the app-server make) by its method. */
export const decodeResult = <M extends ExecClientMethod>(method: M, result: unknown): Either.Either<ExecResult<M>, ExecWireError> =>
  Either.mapLeft(
    resultDecoders.get(method)!(result) as Either.Either<ExecResult<M>, { readonly message: string }>,
    (e) => new ExecWireError({ from: "node", kind: "result", method, detail: oneLine(e.message) })
  )

/** A request frame, typed by method. */
export const encodeRequest = <M extends ExecClientMethod>(id: number, method: M, params: ExecParams<M>): string =>
  JSON.stringify({ id, method, params })

/** The `initialized` notification that completes an exec-server handshake. */
export const initialized: string = JSON.stringify({ method: "initialized", params: {} })

/** A JSON-RPC error answer the relay gives in the node's place (a refusal). */
export const encodeError = (id: RequestId, code: number, message: string): string => JSON.stringify({ id, error: { code, message } })
