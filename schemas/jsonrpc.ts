// The JSON-RPC envelope the app-server speaks: one JSON object per line, no "jsonrpc" field required.
// Ids are strings or integers and the two never alias ("200" and 200 are different requests).
import { Schema } from "effect"

export const RequestId = Schema.Union(Schema.String, Schema.Int)
export type RequestId = typeof RequestId.Type

export const RpcErrorObject = Schema.Struct({
  code: Schema.Int,
  message: Schema.String,
  data: Schema.optional(Schema.Unknown)
})
export type RpcErrorObject = typeof RpcErrorObject.Type

export const RequestMessage = Schema.Struct({
  id: RequestId,
  method: Schema.String,
  params: Schema.optional(Schema.Unknown)
})
export type RequestMessage = typeof RequestMessage.Type

export const NotificationMessage = Schema.Struct({
  method: Schema.String,
  params: Schema.optional(Schema.Unknown)
})
export type NotificationMessage = typeof NotificationMessage.Type

export const SuccessMessage = Schema.Struct({
  id: RequestId,
  result: Schema.Unknown
})
export type SuccessMessage = typeof SuccessMessage.Type

export const ErrorMessage = Schema.Struct({
  id: Schema.NullOr(RequestId),
  error: RpcErrorObject
})
export type ErrorMessage = typeof ErrorMessage.Type

/** Any message a peer may send; classification is by which keys are present. */
export const IncomingMessage = Schema.Union(RequestMessage, NotificationMessage, SuccessMessage, ErrorMessage)
export type IncomingMessage = typeof IncomingMessage.Type

/** JSON-RPC error codes the harness itself uses when it answers a server request. */
export const ErrorCodes = {
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603
} as const
