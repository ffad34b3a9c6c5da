// Which app-server a supervision connection talks to, and how a session's binding picks its connection (S14, S15).
// Pure apart from reading $CODEX_HOME and the home directory. It never spawns anything.
import { type Duration, Effect } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import type { SessionRecord } from "../../schemas/session.js"
import * as CodexArgs from "../appserver/CodexArgs.js"
import type { ClientSpec } from "../appserver/ClientPool.js"
import { SupervisedBindingDrift, SupervisionDisabled } from "./errors.js"

export interface SupervisionSettings {
  /** supervision is opt-in for embedders: without `enabled` every supervision call fails closed */
  readonly enabled: boolean
  /** CODEX_HOME of the supervision app-server; default: the user's own ($CODEX_HOME, else ~/.codex) */
  readonly codexHome?: string | undefined
  /** a Responses API server for that app-server; default: its own configuration and login */
  readonly providerUrl?: string | undefined
  /** with `providerUrl`: the model that app-server is configured with */
  readonly model?: string | undefined
  /** how long the idle discovery client is kept for the next poll (default 2 minutes) */
  readonly idleTimeToLive?: Duration.DurationInput | undefined
  readonly codexBin?: string | undefined
  readonly requestTimeout?: Duration.DurationInput | undefined
  /** what a refusal says when `enabled` is false (how to turn it on, in the embedder's words) */
  readonly disabledReason?: string | undefined
}

type Binding = Extract<SessionRecord, { readonly _tag: "binding" }>

/** The user's own CODEX_HOME, as the codex CLI resolves it. */
export const userCodexHome = (): string => {
  const fromEnv = process.env.CODEX_HOME
  return fromEnv !== undefined && fromEnv !== "" ? path.resolve(fromEnv) : path.join(os.homedir(), ".codex")
}

/** The CODEX_HOME supervision uses, or SupervisionDisabled. */
export const supervisionHome = (
  settings: SupervisionSettings | undefined
): Effect.Effect<string, SupervisionDisabled> =>
  settings?.enabled === true
    ? Effect.succeed(path.resolve(settings.codexHome ?? userCodexHome()))
    : Effect.fail(
      new SupervisionDisabled({ reason: settings?.disabledReason ?? "set supervision.enabled to use native thread supervision" })
    )

/** The client spec of a supervision connection (discovery and private branch connections alike). */
export const supervisionClientSpec = (
  settings: SupervisionSettings | undefined
): Effect.Effect<ClientSpec, SupervisionDisabled> =>
  Effect.map(supervisionHome(settings), (codexHome) => ({
    codexBin: settings?.codexBin,
    // explicit even for the user's own home, so a recorded binding can be compared with it
    codexHome,
    args: settings?.providerUrl !== undefined ? CodexArgs.providerArgs(settings.providerUrl, settings.model) : [],
    env: settings?.providerUrl !== undefined ? CodexArgs.providerEnv() : undefined,
    requestTimeout: settings?.requestTimeout
  }))

/** The pool key of a supervised chat's private connection. */
export const supervisedPoolKey = (sessionId: string): string => `supervision:${sessionId}`

export interface ConnectionRoute {
  readonly key: string
  readonly spec: ClientSpec
  readonly supervised: boolean
}

/**
 * Where a session's next turn runs: the harness's own client, or, for a supervised binding, its private supervision
 * connection. Disabled supervision or any mismatch between the binding and that connection fails closed (S15).
 */
export const connectionFor = (
  supervision: SupervisionSettings | undefined,
  sessionId: string,
  binding: Binding | undefined,
  ordinary: ClientSpec
): Effect.Effect<ConnectionRoute, SupervisionDisabled | SupervisedBindingDrift> =>
  Effect.gen(function* () {
    if (binding?.connection === undefined) return { key: "default", spec: ordinary, supervised: false }
    const drift = (reason: string) => new SupervisedBindingDrift({ sessionId, reason })
    if (binding.locked !== true) return yield* drift("the binding is not model-locked")
    if (binding.connection !== supervisedPoolKey(sessionId)) {
      return yield* drift(`it names connection ${binding.connection}, not this session's`)
    }
    const spec = yield* supervisionClientSpec(supervision)
    if (binding.codexHome !== spec.codexHome) {
      return yield* drift(`it was made under CODEX_HOME ${binding.codexHome ?? "(unknown)"}, supervision now uses ${spec.codexHome}`)
    }
    return { key: binding.connection, spec, supervised: true }
  })
