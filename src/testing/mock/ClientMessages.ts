// What the client wrote to a mock app-server peer, parsed the way the real server reads its stdin: requests,
// notifications, replies to server requests, and lines it would reject. Pure; parsing must never throw on a bad line,
// because a malformed line is something tests send on purpose.
import { Schema } from "effect"
import type { RequestId } from "../../../schemas/jsonrpc.js"

export interface ClientRequest {
  readonly _tag: "Request"
  /** the spawn number of the peer that received it (1-based) */
  readonly peer: number
  readonly id: RequestId
  readonly method: string
  readonly params: unknown
}
export interface ClientNotification {
  readonly _tag: "Notification"
  readonly peer: number
  readonly method: string
  readonly params: unknown
}
/** The client's answer to a server request. */
export interface ClientResponse {
  readonly _tag: "Response"
  readonly peer: number
  readonly id: RequestId
  readonly result?: unknown
  readonly error?: RpcFailure
}
/** A line the real server would reject without a reply. */
export interface InvalidLine {
  readonly _tag: "Invalid"
  readonly peer: number
  readonly line: string
}
export type ClientMessage = ClientRequest | ClientNotification | ClientResponse | InvalidLine

/** A JSON-RPC error object: what a handler fails with to answer with an error. */
export interface RpcFailure {
  readonly code: number
  readonly message: string
  readonly data?: unknown
}

/** What `request` yields: the client's reply to a server request, with the id exactly as the client echoed it. */
export type ClientReply =
  | { readonly _tag: "Result"; readonly id: RequestId; readonly result: unknown }
  | { readonly _tag: "Error"; readonly id: RequestId; readonly error: RpcFailure }

/** The peer died (exit, crash, or its spawn Scope closed) while a server request waited for the client's reply. */
export class MockPeerExited extends Schema.TaggedError<MockPeerExited>()("MockPeerExited", { peer: Schema.Number }) {
  override get message() {
    return `mock app-server #${this.peer} exited before the client replied`
  }
}

export const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isRequestId = (u: unknown): u is RequestId => typeof u === "string" || (typeof u === "number" && Number.isInteger(u))

/** a map key for a request id that keeps `1` and `"1"` apart, as JSON-RPC does */
export const idKey = (id: RequestId) => `${typeof id}:${id}`

export const asRpcFailure = (u: unknown): RpcFailure | undefined =>
  isRecord(u) && typeof u.code === "number" && typeof u.message === "string"
    ? u.data === undefined
      ? { code: u.code, message: u.message }
      : { code: u.code, message: u.message, data: u.data }
    : undefined

/** the error the real server answers a request it refuses with */
export const invalidRequest = (message: string): RpcFailure => ({ code: -32600, message })

export const parseClientLine = (peer: number, line: string): ClientMessage => {
  let json: unknown
  try {
    json = JSON.parse(line)
  } catch {
    return { _tag: "Invalid", peer, line }
  }
  if (!isRecord(json)) return { _tag: "Invalid", peer, line }
  if (typeof json.method === "string") {
    if (!("id" in json)) return { _tag: "Notification", peer, method: json.method, params: json.params }
    return isRequestId(json.id)
      ? { _tag: "Request", peer, id: json.id, method: json.method, params: json.params }
      : { _tag: "Invalid", peer, line }
  }
  if (isRequestId(json.id)) {
    const error = asRpcFailure(json.error)
    if (error !== undefined) return { _tag: "Response", peer, id: json.id, error }
    if ("result" in json) return { _tag: "Response", peer, id: json.id, result: json.result }
  }
  return { _tag: "Invalid", peer, line }
}

/** the `occurrence`-th message (1-based) that matches, if that many arrived */
export const findNth = (
  messages: ReadonlyArray<ClientMessage>,
  predicate: (m: ClientMessage) => boolean,
  occurrence: number
): ClientMessage | undefined => {
  let seen = 0
  for (const message of messages) {
    if (predicate(message) && ++seen >= occurrence) return message
  }
  return undefined
}

/** A refinement for `awaitMessage`: a request of this method. */
export const isRequest = (method: string) => (m: ClientMessage): m is ClientRequest => m._tag === "Request" && m.method === method

/** A refinement for `awaitMessage`: a notification of this method. */
export const isNotification =
  (method: string) =>
  (m: ClientMessage): m is ClientNotification =>
    m._tag === "Notification" && m.method === method

/** A refinement for `awaitMessage`: the client's reply to the server request with exactly this id. */
export const isResponse =
  (id: RequestId) =>
  (m: ClientMessage): m is ClientResponse =>
    m._tag === "Response" && m.id === id
