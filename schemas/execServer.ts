// The subset of the exec-server protocol (`codex exec-server`, 0.171) that the harness reads or sends: the messages a
// paired node's relay polices (S26) and the cleanup client's requests. The wire is JSON-RPC like the app-server's, one
// message per WebSocket text frame. The binary generates no schema for this wire (`generate-json-schema` covers the
// app-server only), so these are held instead to what a real exec-server sends and answers: `npm run protocol:check`
// talks to the pinned binary's `codex exec-server --listen stdio` and decodes every answer with these schemas, and the
// integration test test/integration/nodes.test.ts asserts that no frame of a real attempt failed to decode.
// Decoding keeps unknown fields, so a newer exec-server that adds fields never breaks us.
import { Schema } from "effect"
import { optionalNullable } from "./protocol/common.js"

/** `initialize` opens a node session, or (with `resumeSessionId`) takes over one whose connection closed. */
export const ExecInitializeParams = Schema.Struct({
  clientName: Schema.String,
  resumeSessionId: optionalNullable(Schema.String)
})
export type ExecInitializeParams = typeof ExecInitializeParams.Type
export const ExecInitializeResponse = Schema.Struct({ sessionId: Schema.String })

/** A process the node starts for the app-server; the relay only tracks its id (to end it if the link is lost). */
export const ProcessStartParams = Schema.Struct({
  processId: Schema.String,
  argv: Schema.optional(Schema.Array(Schema.String))
})
export const ProcessStartResponse = Schema.Struct({ processId: Schema.String })

export const ProcessTerminateParams = Schema.Struct({ processId: Schema.String })
/** `running: false` when the process had already ended */
export const ProcessTerminateResponse = Schema.Struct({ running: Schema.Boolean })

export const HttpHeader = Schema.Struct({ name: Schema.String, value: Schema.String })
/** HTTP the node makes on the app-server's behalf; its headers are what the relay's header filter reads. */
export const HttpRequestParams = Schema.Struct({
  method: Schema.String,
  url: Schema.String,
  headers: Schema.optional(Schema.Array(HttpHeader)),
  requestId: Schema.String
})
export const HttpRequestResponse = Schema.Struct({ status: Schema.Int })

export const ProcessExitedNotification = Schema.Struct({
  processId: Schema.String,
  exitCode: optionalNullable(Schema.Int)
})
export const ProcessClosedNotification = Schema.Struct({ processId: Schema.String })

const method = <P extends Schema.Schema.AnyNoContext, R extends Schema.Schema.AnyNoContext>(params: P, result: R) => ({
  params,
  result
})

/** Requests to the exec-server, by method: what the app-server sends through the relay and what the cleanup sends. */
export const ExecClientMethods = {
  initialize: method(ExecInitializeParams, ExecInitializeResponse),
  "process/start": method(ProcessStartParams, ProcessStartResponse),
  "process/terminate": method(ProcessTerminateParams, ProcessTerminateResponse),
  "http/request": method(HttpRequestParams, HttpRequestResponse)
} as const
export type ExecClientMethod = keyof typeof ExecClientMethods
export type ExecParams<M extends ExecClientMethod> = (typeof ExecClientMethods)[M]["params"]["Type"]
export type ExecResult<M extends ExecClientMethod> = (typeof ExecClientMethods)[M]["result"]["Type"]

/** Notifications from the exec-server the relay reads (a process it tracks has ended). */
export const ExecServerNotifications = {
  "process/exited": ProcessExitedNotification,
  "process/closed": ProcessClosedNotification
} as const
export type ExecServerNotificationMethod = keyof typeof ExecServerNotifications
