// Which app-server a supervision connection talks to (S14, S15). The rules live with the session runtimes (a
// supervised chat's runtime is recorded with its binding); this is supervision's view of them, for the discovery
// connection. It never spawns anything.
import { Effect } from "effect"
import type { ClientSpec } from "../appserver/ClientPool.js"
import type { SupervisionSettings } from "../config/Settings.js"
import type { SupervisionDisabled } from "../session/errors.js"
import * as Runtimes from "../session/Runtimes.js"
import { providerKeyConfig, userCodexHomeConfig } from "../session/SessionRuntime.js"

export type { SupervisionSettings } from "../config/Settings.js"
export { supervisedPoolKey, supervisedRuntime } from "../session/Runtimes.js"

/** The CODEX_HOME supervision uses (by default the user's own, from $CODEX_HOME), or SupervisionDisabled. */
export const supervisionHome = (settings: SupervisionSettings | undefined): Effect.Effect<string, SupervisionDisabled> =>
  Effect.flatMap(Effect.orDie(userCodexHomeConfig), (userHome) => Runtimes.supervisionHome(settings, userHome))

/** The client spec of a supervision connection (discovery and private branch connections alike). */
export const supervisionClientSpec = (settings: SupervisionSettings | undefined): Effect.Effect<ClientSpec, SupervisionDisabled> =>
  Effect.flatMap(Effect.orDie(Effect.all([userCodexHomeConfig, providerKeyConfig(settings?.providerKeyEnv)])), ([userHome, key]) =>
    Runtimes.supervisionClientSpec(settings, userHome, key))
