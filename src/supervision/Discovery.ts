// The discovery connection (S14): one pooled app-server client under the supervision CODEX_HOME (by default the user's
// own), separate from the harness's agent-scoped client. Every call leases it for the call only; an idle time-to-live
// keeps the process for the next poll, so polling never spawns a process per poll. It offers listing and metadata
// reads (passive: no resume, no subscription, no approval answered) and the archive mutation; nothing else.
import { Context, Duration, Effect, Layer, type Scope } from "effect"
import type { AppServerConnection, Params, Result } from "../appserver/AppServerConnection.js"
import * as ClientPool from "../appserver/ClientPool.js"
import type { Transport } from "../appserver/Transport.js"
import { Settings } from "../config/Settings.js"
import type { SupervisionDisabled } from "./errors.js"
import { supervisionClientSpec } from "./SupervisionSettings.js"

/** The methods the discovery client may call: reads that neither load, resume nor subscribe to a thread. */
export type PassiveMethod = "thread/list" | "thread/read" | "thread/turns/list"

export type DiscoveryError = ClientPool.LeaseError | SupervisionDisabled

export const defaults = {
  /** how long the idle discovery client is kept for the next poll */
  idleTimeToLive: Duration.minutes(2)
} as const

/** The discovery client's key in its own pool. */
export const discoveryKey = "supervision:discovery"

export interface DiscoveryService {
  readonly read: <M extends PassiveMethod>(method: M, params: Params<M>) => Effect.Effect<Result<M>, DiscoveryError>
  /** `thread/archive`, the one mutation supervision makes through discovery (after ArchiveGuard's checks) */
  readonly archive: (threadId: string) => Effect.Effect<void, DiscoveryError>
  /** the pid of the current discovery client, if one is running (for diagnostics and tests) */
  readonly pid: Effect.Effect<number | undefined, DiscoveryError>
}

export class Discovery extends Context.Tag("codex-harness/supervision/Discovery")<Discovery, DiscoveryService>() {}

export const make: Effect.Effect<DiscoveryService, never, Settings | Transport | Scope.Scope> = Effect.gen(
  function* () {
    const settings = yield* Settings
    // its own pool: its own idle time-to-live, and retiring it never touches the harness's clients
    const pool = yield* ClientPool.make({ idleTimeToLive: settings.supervision?.idleTimeToLive ?? defaults.idleTimeToLive })
    const withClient = <A, E>(f: (c: AppServerConnection) => Effect.Effect<A, E>) =>
      Effect.flatMap(supervisionClientSpec(settings.supervision), (spec) =>
        Effect.scoped(Effect.flatMap(pool.lease(discoveryKey, spec), f))
      )
    return {
      read: (method, params) =>
        withClient((c) => c.request(method, params)).pipe(Effect.withSpan("Discovery.read", { attributes: { method } })),
      archive: (threadId) =>
        withClient((c) => c.request("thread/archive", { threadId })).pipe(
          Effect.asVoid,
          Effect.withSpan("Discovery.archive", { attributes: { threadId } })
        ),
      pid: withClient((c) => Effect.succeed(c.pid))
    } satisfies DiscoveryService
  }
)

export const layer: Layer.Layer<Discovery, never, Settings | Transport> = Layer.scoped(Discovery, make)
