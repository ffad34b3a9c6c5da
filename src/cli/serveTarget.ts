// Whether a serve takes a command (`--connect URL`, else the one running for the state dir), decided without loading
// the control API's client: `run` asks this first, and a turn in this process needs nothing of connect.ts.
import { Effect, Option } from "effect"
import type * as ControlClient from "../control/ControlClient.js"
import { ServeFileUnusable } from "../control/ServeFileReads.js"
import { ServeFilesError } from "../control/ServeFilesError.js"
import { UsageError } from "./errors.js"
import * as Remote from "./remote/target.js"
import { RemoteUsageError } from "./remote/usage.js"

export interface ConnectOptions {
  readonly connect: Option.Option<string>
  readonly stateDir: Option.Option<string>
}

/** The serve to use: `--connect`, else (when `find`) the state dir's running one; none: run locally (remote/target.ts). */
export const target = (
  options: ConnectOptions,
  find: boolean
): Effect.Effect<Option.Option<ControlClient.Target>, UsageError | ServeFilesError> =>
  Effect.try({
    try: () => {
      const stateDir = Option.getOrUndefined(options.stateDir)
      if (Option.isSome(options.connect)) return Option.some(Remote.connectTarget(options.connect.value, stateDir))
      return find ? Option.fromNullable(Remote.foundTarget(stateDir)) : Option.none()
    },
    catch: (e) =>
      e instanceof RemoteUsageError
        ? new UsageError({ line: e.line })
        : e instanceof ServeFileUnusable
        ? new ServeFilesError({ path: e.path, reason: e.reason })
        : new ServeFilesError({ path: Option.getOrElse(options.stateDir, () => "state dir"), reason: String(e) })
  })

/** the flags that choose a runtime: a serve runs with its own, so a command that gives one runs locally */
const runtimeFlags = [
  ["cwd", "cwd"],
  ["codexHome", "codex-home"],
  ["userCodexHome", "user-codex-home"],
  ["providerUrl", "provider-url"],
  ["providerKeyEnv", "provider-key-env"],
  ["approvalPolicy", "approval-policy"],
  ["sandbox", "sandbox"],
  ["config", "config"],
  ["codexBin", "codex-bin"],
  ["appServer", "app-server"],
  ["supervisionHome", "supervision-home"],
  ["timeout", "timeout"],
  // the serve's app-servers are its own: only a turn in this process can be recorded
  ["record", "record"]
] as const

/** the runtime flags `options` gives, as typed (`--provider-url`, ...) */
export const runtimeFlagsGiven = (options: object): ReadonlyArray<string> =>
  runtimeFlags
    .filter(([key]) => {
      const value = (options as Record<string, unknown>)[key]
      return value === true || (Option.isOption(value) && Option.isSome(value))
    })
    .map(([, flag]) => `--${flag}`)
