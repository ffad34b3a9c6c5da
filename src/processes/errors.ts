// The ways a sandboxed process (S25) is refused or not found: each is one line for the CLI and chat.
import { Schema } from "effect"

/** `appServer.experimental.sandboxExecServer` is off (the default). */
export class SandboxExecDisabled extends Schema.TaggedError<SandboxExecDisabled>()("SandboxExecDisabled", {}) {
  override get message() {
    return 'sandboxed processes are off: set "appServer": {"experimental": {"sandboxExecServer": true}} in the config file to turn them on'
  }
}

/**
 * The app-server's sandbox cannot take the process: its local environment is not ready (a failed environment
 * registration), or the sandbox mode is danger-full-access (no sandbox). Nothing ran, and nothing runs on the host instead.
 */
export class SandboxUnavailable extends Schema.TaggedError<SandboxUnavailable>()("SandboxUnavailable", { reason: Schema.String }) {
  override get message() {
    return `no sandbox to run the command in: ${this.reason}; nothing was run on the host instead`
  }
}

/** The app-server refused the command (`command/exec` answered an error). Nothing runs on the host instead. */
export class SandboxRefused extends Schema.TaggedError<SandboxRefused>()("SandboxRefused", {
  id: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the app-server refused process ${this.id}: ${this.reason}; nothing was run on the host instead`
  }
}

export class ProcessNotFound extends Schema.TaggedError<ProcessNotFound>()("ProcessNotFound", { id: Schema.String }) {
  override get message() {
    return `no process ${this.id} (/ps lists them)`
  }
}

export class ProcessNotRunning extends Schema.TaggedError<ProcessNotRunning>()("ProcessNotRunning", {
  id: Schema.String,
  status: Schema.String
}) {
  override get message() {
    return `process ${this.id} is not running (${this.status})`
  }
}

export class TooManyProcesses extends Schema.TaggedError<TooManyProcesses>()("TooManyProcesses", { max: Schema.Int }) {
  override get message() {
    return `at most ${this.max} sandboxed processes run at once; kill one first`
  }
}

export type SpawnError = SandboxExecDisabled | SandboxUnavailable | TooManyProcesses
