// S25: the app-server's sandboxed standalone commands (`command/exec` with a client-chosen `processId`, streamed output,
// stdin, a PTY) and their follow-ups. `process/spawn` is deliberately absent: the binary documents it as running
// "without a Codex sandbox on the host", which the harness never does (APP-SERVER-FACTS, issue 17: processes).
import { Schema } from "effect"
import { optionalNullable } from "./common.js"

export const TerminalSize = Schema.Struct({ rows: Schema.Int, cols: Schema.Int })
export type TerminalSize = typeof TerminalSize.Type

/** The sandbox of one command: the thread/turn shape; `workspaceWrite` with the roots it may write. */
export const ExecSandboxPolicy = Schema.Union(
  Schema.Struct({ type: Schema.Literal("readOnly"), networkAccess: Schema.optional(Schema.Boolean) }),
  Schema.Struct({
    type: Schema.Literal("workspaceWrite"),
    writableRoots: Schema.optional(Schema.Array(Schema.String)),
    networkAccess: Schema.optional(Schema.Boolean)
  })
)
export type ExecSandboxPolicy = typeof ExecSandboxPolicy.Type

export const CommandExecParams = Schema.Struct({
  command: Schema.Array(Schema.String),
  processId: optionalNullable(Schema.String),
  cwd: optionalNullable(Schema.String),
  env: optionalNullable(Schema.Record({ key: Schema.String, value: Schema.NullOr(Schema.String) })),
  sandboxPolicy: optionalNullable(ExecSandboxPolicy),
  tty: Schema.optional(Schema.Boolean),
  size: optionalNullable(TerminalSize),
  streamStdin: Schema.optional(Schema.Boolean),
  streamStdoutStderr: Schema.optional(Schema.Boolean),
  disableTimeout: Schema.optional(Schema.Boolean),
  timeoutMs: optionalNullable(Schema.Int),
  disableOutputCap: Schema.optional(Schema.Boolean),
  outputBytesCap: optionalNullable(Schema.Int)
})
export type CommandExecParams = typeof CommandExecParams.Type
/** Sent when the process has exited, after every output delta of the connection; streamed bytes are not repeated here. */
export const CommandExecResponse = Schema.Struct({ exitCode: Schema.Int, stdout: Schema.String, stderr: Schema.String })
export type CommandExecResponse = typeof CommandExecResponse.Type

export const CommandExecWriteParams = Schema.Struct({
  processId: Schema.String,
  deltaBase64: optionalNullable(Schema.String),
  closeStdin: Schema.optional(Schema.Boolean)
})
export const CommandExecResizeParams = Schema.Struct({ processId: Schema.String, size: TerminalSize })
export const CommandExecTerminateParams = Schema.Struct({ processId: Schema.String })
export const CommandExecEmptyResponse = Schema.Struct({})

/** One chunk of a streamed command's output; PTY output comes as `stdout`. */
export const CommandExecOutputDeltaNotification = Schema.Struct({
  processId: Schema.String,
  stream: Schema.Literal("stdout", "stderr"),
  deltaBase64: Schema.String,
  capReached: Schema.Boolean
})
export type CommandExecOutputDeltaNotification = typeof CommandExecOutputDeltaNotification.Type
