// Shared app-server clients keyed by name, handed out as refcounted leases (RcMap): the first lease spawns and
// initializes, the last release starts an idle time-to-live, and `retire` fails the current leaseholders with a typed,
// retryable error so the next lease gets a fresh process. It never hands out a client whose process has ended.
import { Context, Duration, Effect, Layer, Option, RcMap, Scope } from "effect"
import * as Connection from "./AppServerConnection.js"
import type { CodexBinaryNotFound } from "./CodexBinary.js"
import type { AppServerUnreachable, RequestError, SpawnFailed } from "./errors.js"
import { Transport, type TransportHandle, type TransportOptions } from "./Transport.js"

export interface ClientSpec extends TransportOptions, Connection.ConnectionOptions {}

export type LeaseError = SpawnFailed | CodexBinaryNotFound | AppServerUnreachable | RequestError

export interface ClientPoolOptions {
  /** how long an unleased client stays alive for the next lease */
  readonly idleTimeToLive?: Duration.DurationInput | undefined
}

export const defaults = { idleTimeToLive: Duration.minutes(2) } as const

export interface ClientPoolService {
  /** A lease on the shared client for `key`, spawned from `spec` when there is none; released with the Scope. */
  readonly lease: (
    key: string,
    spec: ClientSpec
  ) => Effect.Effect<Connection.AppServerConnection, LeaseError, Scope.Scope>
  /** Fails everything on the current client for `key` with ConnectionRetired; the next lease spawns afresh. */
  readonly retire: (key: string, reason: string) => Effect.Effect<void>
  readonly keys: Effect.Effect<ReadonlyArray<string>>
  /**
   * Closes the input of every app-server process this pool started, failing nothing: each exits by itself soon after.
   * For a one-shot command whose work is done (`run` after its turn): the processes' exits then overlap the rest of the
   * teardown instead of following it. A request made after this fails once its process has exited. Connections to
   * app-servers this process did not start (WebSocket) are left to the teardown.
   */
  readonly windDown: Effect.Effect<void>
}

export class ClientPool extends Context.Tag("codex-harness/ClientPool")<ClientPool, ClientPoolService>() {}

export const make = (options: ClientPoolOptions = {}): Effect.Effect<ClientPoolService, never, Scope.Scope | Transport> =>
  Effect.gen(function* () {
    const transport = yield* Transport
    // the spec a key was last leased with; RcMap lookups only see the key
    const specs = new Map<string, ClientSpec>()
    // the handles of the processes alive under this pool (windDown), while their clients are
    const processes = new Set<TransportHandle>()
    const clients = yield* RcMap.make({
      lookup: (key: string) =>
        Effect.gen(function* () {
          const spec = specs.get(key)!
          const handle = yield* transport.spawn(spec)
          if (handle.pid !== undefined) {
            processes.add(handle)
            yield* Effect.addFinalizer(() => Effect.sync(() => processes.delete(handle)))
          }
          return yield* Connection.make(handle, spec)
        }),
      idleTimeToLive: options.idleTimeToLive ?? defaults.idleTimeToLive
    })

    const getLive = (key: string) =>
      RcMap.get(clients, key).pipe(
        // a failed spawn must not be cached: the next lease tries again
        Effect.tapError(() => RcMap.invalidate(clients, key))
      )

    const lease = (key: string, spec: ClientSpec) =>
      Effect.gen(function* () {
        specs.set(key, spec)
        const first = yield* getLive(key)
        if (Option.isNone(yield* first.terminationCause)) return first
        // the process died since it was cached: drop it and spawn a fresh one
        yield* RcMap.invalidate(clients, key)
        return yield* getLive(key)
      })

    const retire = (key: string, reason: string) =>
      Effect.gen(function* () {
        if (!(yield* RcMap.has(clients, key))) return
        yield* Effect.scoped(
          Effect.gen(function* () {
            const current = yield* RcMap.get(clients, key)
            yield* current.retire(reason)
            yield* RcMap.invalidate(clients, key)
          })
        ).pipe(Effect.ignore)
      })

    const windDown = Effect.suspend(() => Effect.forEach([...processes], (handle) => handle.endInput, { discard: true }))

    return { lease, retire, keys: RcMap.keys(clients), windDown }
  })

export const layer = (options: ClientPoolOptions = {}): Layer.Layer<ClientPool, never, Transport> =>
  Layer.scoped(ClientPool, make(options))
