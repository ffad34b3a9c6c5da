// Typed failures of the app-server room. Each carries a one-line human `message` so the CLI can print it as is.
import { Schema } from "effect"

export class SpawnFailed extends Schema.TaggedError<SpawnFailed>()("SpawnFailed", {
  command: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not start the codex app-server (${this.command}): ${this.reason}`
  }
}

/**
 * The app-server process ended (on its own, killed, or its stdout closed), or the WebSocket to a remote one closed
 * (`url` and `closeCode` set; no exit code or stderr from a process the harness does not own); every pending request
 * fails with this. Retryable on a fresh client.
 */
export class AppServerExited extends Schema.TaggedError<AppServerExited>()("AppServerExited", {
  exitCode: Schema.NullOr(Schema.Number),
  signal: Schema.NullOr(Schema.String),
  stderrTail: Schema.String,
  url: Schema.optional(Schema.String),
  closeCode: Schema.optional(Schema.Number),
  closeReason: Schema.optional(Schema.String)
}) {
  readonly retryable = true
  override get message() {
    if (this.url !== undefined) {
      const why = this.closeReason !== undefined && this.closeReason !== "" ? `: ${this.closeReason}` : ""
      return `the connection to the codex app-server at ${this.url} closed (WebSocket code ${this.closeCode ?? "none"}${why})`
    }
    const how = this.signal !== null ? `killed by ${this.signal}` : `exited with code ${this.exitCode ?? "unknown"}`
    const tail = causeLine(this.stderrTail)
    return `the codex app-server ${how}${tail === "" ? "" : `: ${tail}`}`
  }
}

/** A remote app-server (`--app-server URL`) could not be reached, or refused the connection. */
export class AppServerUnreachable extends Schema.TaggedError<AppServerUnreachable>()("AppServerUnreachable", {
  url: Schema.String,
  reason: Schema.String
}) {
  readonly retryable = true
  override get message() {
    return `could not connect to the codex app-server at ${this.url}: ${this.reason}`
  }
}

/** The pool retired the client (for instance after an unconfirmed interrupt): retryable on a fresh client. */
export class ConnectionRetired extends Schema.TaggedError<ConnectionRetired>()("ConnectionRetired", {
  reason: Schema.String
}) {
  readonly retryable = true
  override get message() {
    return `the app-server client was retired (${this.reason}); retry on a fresh client`
  }
}

export class RequestTimedOut extends Schema.TaggedError<RequestTimedOut>()("RequestTimedOut", {
  method: Schema.String,
  timeoutMs: Schema.Number
}) {
  override get message() {
    return `the app-server did not answer ${this.method} within ${this.timeoutMs} ms`
  }
}

/** The app-server answered a request with a JSON-RPC error. */
export class RpcError extends Schema.TaggedError<RpcError>()("RpcError", {
  method: Schema.String,
  code: Schema.Number,
  rpcMessage: Schema.String,
  data: Schema.optional(Schema.Unknown)
}) {
  override get message() {
    return `${this.method} failed (${this.code}): ${this.rpcMessage}`
  }
}

/** A message from the app-server did not have the shape our schemas rely on. */
export class ProtocolDecodeError extends Schema.TaggedError<ProtocolDecodeError>()("ProtocolDecodeError", {
  method: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `unexpected ${this.method} payload from the app-server: ${this.detail}`
  }
}

export type ConnectionClosed = AppServerExited | ConnectionRetired
export type RequestError = ConnectionClosed | RequestTimedOut | RpcError | ProtocolDecodeError

/**
 * What the app-server prints on stderr at every start on an ordinary machine (0.171.0, no bubblewrap installed, a
 * temporary CODEX_HOME): warnings, never the reason it ended. Quoting one as the crash's cause sends the reader after
 * bubblewrap when the real cause was said elsewhere (or not at all).
 */
const knownWarnings: ReadonlyArray<RegExp> = [
  /Codex could not find bubblewrap on PATH/,
  /^WARNING: proceeding, even though we could not create PATH aliases/
]

// tracing colours its level and target; the line is matched and shown without them
const ansi = /\x1b\[[0-9;]*m/g

/** The last stderr line that may say why the app-server ended: colours removed, known start-up warnings skipped. */
export const causeLine = (text: string): string => {
  const lines = text.replace(ansi, "").split("\n").map((l) => l.trim())
  const telling = lines.filter((l) => l !== "" && !knownWarnings.some((w) => w.test(l)))
  return telling[telling.length - 1] ?? ""
}

export const lastLine = (text: string): string => {
  const lines = text.trim().split("\n")
  return (lines[lines.length - 1] ?? "").trim()
}

/**
 * A frame on an exec-server link (a paired node, S26) that is not the JSON-RPC our schemas/execServer.ts relies on:
 * not JSON, not a message, or params/result of a method the harness reads that do not decode. `from` says which peer
 * sent it. A value, never a throw: the relay refuses or passes on, and the cleanup client fails with it.
 */
export class ExecWireError extends Schema.TaggedError<ExecWireError>()("ExecWireError", {
  from: Schema.Literal("app-server", "node"),
  /** notJson: not a JSON object at all; notMessage: no request, response or notification; params, result: did not decode */
  kind: Schema.Literal("notJson", "notMessage", "params", "result"),
  method: Schema.optional(Schema.String),
  /** the request's id, when the frame was a request: what a refusal answers */
  id: Schema.optional(Schema.Union(Schema.String, Schema.Number)),
  detail: Schema.String
}) {
  override get message() {
    return `unexpected ${this.method ?? "frame"} from the ${this.from === "node" ? "node's exec-server" : "app-server"}: ${this.detail}`
  }
}

/** A node's exec-server answered a request with a JSON-RPC error. */
export class ExecRpcError extends Schema.TaggedError<ExecRpcError>()("ExecRpcError", {
  method: Schema.String,
  code: Schema.Number,
  rpcMessage: Schema.String
}) {
  override get message() {
    return `${this.method} on the node failed (${this.code}): ${this.rpcMessage}`
  }
}

/** A node's exec-server could not be reached, closed the link, or did not answer in time. */
export class ExecServerUnavailable extends Schema.TaggedError<ExecServerUnavailable>()("ExecServerUnavailable", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the exec-server at ${this.url}: ${this.reason}`
  }
}
