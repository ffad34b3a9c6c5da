// `codex-harness/layers/Test`: the same harness composition as layers/Live over the in-memory MockAppServer (no
// process, no network, TestClock-safe) and an in-memory session store, for an app's own tests. Like Live it needs the
// app's Delivery (so the app's own Delivery is what is tested; `RecordingDelivery` from codex-harness/testing records
// replies for a test that only reads them), and it gives Harness and the mock's control handle, MockAppServer.
import { type ConfigError, Effect, Layer } from "effect"
import type { Delivery } from "../src/api/Delivery.js"
import type { HookRelayServerError, InvalidSettings } from "../src/api/Errors.js"
import type { Harness } from "../src/api/Harness.js"
import type { HarnessSettings } from "../src/api/Settings.js"
import * as Composition from "../src/harness/Composition.js"
import * as Startup from "../src/harness/Startup.js"
import * as SessionStore from "../src/session/SessionStore.js"
import { MockAppServer, type MockScript } from "../src/testing/public/MockAppServer.js"
import * as MockServer from "../src/testing/MockAppServer.js"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { settings as mockSettings } from "./internal/Test.js"

/** Settings that never reach a disk or a provider: the memory store ignores stateDir, the mock ignores the rest. */
export const settings: HarnessSettings = mockSettings

export interface TestLayerOptions {
  /** over `settings` */
  readonly settings?: Partial<HarnessSettings> | undefined
  /** how the mock app-server answers (handlers by method, the reply text, turns that hang) */
  readonly script?: MockScript | undefined
}

/**
 * The harness over MockAppServer, for tests.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Delivery, Harness } from "codex-harness"
 * import * as Test from "codex-harness/layers/Test"
 *
 * const sent: Array<string> = []
 * const MyDelivery = Layer.succeed(Delivery.Delivery, { deliver: (reply) => Effect.sync(() => void sent.push(reply.text ?? "")) })
 * const check = Effect.gen(function* () {
 *   yield* (yield* Harness.Harness).runTurn({ sessionId: "t1", prompt: "hi" })
 *   return sent // ["mock reply"]
 * }).pipe(Effect.provide(Test.layer({ script: { replyText: "mock reply" } }).pipe(Layer.provide(MyDelivery))), Effect.scoped)
 * ```
 */
export const layer = (
  options: TestLayerOptions = {}
): Layer.Layer<Harness | MockAppServer, InvalidSettings | HookRelayServerError | ConfigError.ConfigError, Delivery> => {
  const effective: HarnessSettings = { ...settings, ...options.settings }
  return Layer.unwrapEffect(
    Effect.map(Startup.decodeSettings(effective), (checked) => Composition.layer(checked, { idleTimeToLive: checked.idleTimeToLive }))
  ).pipe(
    Layer.provideMerge(SessionStore.memoryLayer),
    Layer.provideMerge(MockServer.layer(options.script)),
    // the workspace files and the hook relay's socket directory are real: a missing workspace simply reads as empty
    Layer.provideMerge(NodeFileSystem.layer)
  )
}
