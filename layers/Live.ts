// `codex-harness/layers/Live`: the harness for an app: the real `codex app-server` (the pinned @openai/codex binary,
// started per runtime as turns need it) and a file-backed session store under the state dir. It needs the Delivery
// port and reads the optional ones when provided; it gives the Harness service. Building it checks the setup first
// and fails with a typed error naming the cause (see Errors.StartupError). Build it once per app (a ManagedRuntime,
// or the app's main layer): the app-servers and the hook relay live as long as it does.
import type { ConfigError, Layer } from "effect"
import type { ApprovalPrompts } from "../src/api/ApprovalPrompts.js"
import type { ContextEngine } from "../src/api/ContextEngine.js"
import type { Delivery } from "../src/api/Delivery.js"
import type { DynamicTools } from "../src/api/DynamicTools.js"
import type { StartupError } from "../src/api/Errors.js"
import type { Harness } from "../src/api/Harness.js"
import type { HookPolicy } from "../src/api/HookPolicy.js"
import type { HookRelayConfig } from "../src/api/HookRelayConfig.js"
import type { PluginHooks } from "../src/api/PluginHooks.js"
import type { Questions } from "../src/api/Questions.js"
import type { HarnessSettings } from "../src/api/Settings.js"
import type { ToolCallHooks } from "../src/api/ToolCallHooks.js"
import type { ToolResultPersistence } from "../src/api/ToolResultPersistence.js"
import type { TurnContexts } from "../src/api/TurnContext.js"
import * as Internal from "./internal/Live.js"

/** The port an app must provide: where replies go. */
export type RequiredPorts = Delivery
/** The ports an app may provide, each a `Context.Reference` with a declining default (see the README's table). */
export type OptionalPorts =
  | ApprovalPrompts
  | Questions
  | DynamicTools
  | ToolCallHooks
  | PluginHooks
  | HookPolicy
  | ToolResultPersistence
  | ContextEngine
  | TurnContexts
  | HookRelayConfig

export interface LiveOptions {
  /**
   * false: the codex binary must exist but is not run with `--version` while the layer is built (about 40 ms saved; a
   * wrong binary then fails the first turn instead). Default true.
   */
  readonly probeCodex?: boolean | undefined
}

/**
 * The harness over the real app-server, for these settings.
 *
 * @example
 * ```ts
 * import { Console, Effect, Layer, ManagedRuntime } from "effect"
 * import { Delivery, Harness } from "codex-harness"
 * import * as Live from "codex-harness/layers/Live"
 *
 * const ToConsole = Layer.succeed(Delivery.Delivery, { deliver: (reply) => Console.log(reply.text ?? "") })
 * const runtime = ManagedRuntime.make(
 *   Live.layer({ stateDir: "/var/lib/bot", cwd: "/srv/workspace", approvalPolicy: "never", sandbox: "read-only" })
 *     .pipe(Layer.provide(ToConsole))
 * )
 * const main = Effect.flatMap(Harness.Harness, (harness) => harness.runTurn({ sessionId: "s1", prompt: "hello" }))
 * ```
 */
export const layer = (
  settings: HarnessSettings,
  options: LiveOptions = {}
): Layer.Layer<Harness, StartupError | ConfigError.ConfigError, RequiredPorts> =>
  Internal.layer(settings, undefined, options)
