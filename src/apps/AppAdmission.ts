// Connected-apps admission (S2-S5). Owns the `plugin/installed` snapshot cache, keyed by (runtime pool key, workspace)
// with a time-to-live and explicit invalidation; reads the details (`plugin/read`) of exactly the configured plugins;
// decides provisional admission; and, once the real thread exists, asks `app/installed` for it once (no forced
// refresh) and holds the thread to what was admitted. A provisional thread that fails the check is cleaned up by a
// finalizer (deleted, or unsubscribed when ephemeral); cleanup that cannot be confirmed retires the connection.
// It never installs, enables or activates a plugin, never scans marketplaces it was not configured with, and never
// forces an inventory refresh.
import { Clock, Context, Deferred, Duration, Effect, FiberId, Layer, Ref, type Scope, Stream } from "effect"
import type { PluginDetail, PluginInstalledResponse } from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { RequestError } from "../appserver/errors.js"
import { Settings } from "../config/Settings.js"
import { AppsInventoryFailed, AppsNotConfirmed } from "./errors.js"
import * as Policy from "./AppsPolicy.js"

export const defaults = {
  snapshotTtl: Duration.minutes(5),
  /** how long the check waits for the thread's `codex_apps` MCP server to be ready before its one app/installed */
  readyTimeout: Duration.seconds(10)
} as const

export interface InventoryKey {
  /** the runtime's pool key (one app-server per CODEX_HOME and provider) */
  readonly poolKey: string
  /** the workspace: repo marketplaces are discovered from it */
  readonly cwd: string
}

/** What was decided before the thread exists: the snapshot, each configured app's decision, the thread config. */
export interface Gate {
  readonly snapshot: PluginInstalledResponse
  readonly decisions: ReadonlyArray<Policy.Decision>
  readonly admitted: ReadonlyArray<string>
  readonly threadConfig: Record<string, unknown>
}

/** Signals a thread's `codex_apps` MCP server reaching ready (or failed): subscribed before the thread is opened. */
export type Readiness = (threadId: string) => Effect.Effect<void>

export interface ConfirmOptions {
  readonly threadId: string
  readonly ephemeral: boolean
  readonly gate: Gate
  readonly readiness?: Readiness | undefined
  /** retires the connection's client: the cleanup of the provisional thread was not confirmed */
  readonly retire: (reason: string) => Effect.Effect<void>
  /** the thread is gone from the connection (forget it as loaded) */
  readonly forget?: Effect.Effect<void> | undefined
}

export interface AppAdmissionService {
  readonly snapshot: (connection: AppServerConnection, key: InventoryKey) => Effect.Effect<PluginInstalledResponse, AppsInventoryFailed>
  readonly invalidate: (key?: InventoryKey) => Effect.Effect<void>
  /** snapshot + exact plugin/read + provisional decisions + the deny-by-default thread config */
  readonly prepare: (connection: AppServerConnection, key: InventoryKey) => Effect.Effect<Gate, AppsInventoryFailed>
  readonly watchReadiness: (connection: AppServerConnection) => Effect.Effect<Readiness, never, Scope.Scope>
  /** one app/installed for the real thread; on any failure the provisional thread is cleaned up */
  readonly confirm: (connection: AppServerConnection, options: ConfirmOptions) => Effect.Effect<void, AppsNotConfirmed>
}

export class AppAdmission extends Context.Tag("codex-harness/AppAdmission")<AppAdmission, AppAdmissionService>() {}

const keyOf = (key: InventoryKey) => `${key.poolKey}\u0000${key.cwd}`
const failed = (step: string) => (error: { readonly message: string }) => new AppsInventoryFailed({ step, reason: error.message })

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const apps: Policy.AppsSettings = settings.apps ?? { plugins: {}, disabledPlugins: [] }
  const ttl = Duration.toMillis(settings.apps?.snapshotTtl ?? defaults.snapshotTtl)
  const readyTimeout = settings.apps?.readyTimeout ?? defaults.readyTimeout
  const cache = yield* Ref.make(new Map<string, { readonly at: number; readonly value: PluginInstalledResponse }>())

  const snapshot = (connection: AppServerConnection, key: InventoryKey) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const hit = (yield* Ref.get(cache)).get(keyOf(key))
      if (hit !== undefined && now - hit.at < ttl) return hit.value
      const value = yield* connection.request("plugin/installed", { cwds: [key.cwd] }).pipe(Effect.mapError(failed("plugin/installed")))
      yield* Ref.update(cache, (m) => new Map(m).set(keyOf(key), { at: now, value }))
      return value
    }).pipe(Effect.withSpan("AppAdmission.snapshot", { attributes: { poolKey: key.poolKey, cwd: key.cwd } }))

  const invalidate = (key?: InventoryKey) =>
    Ref.update(cache, (m) => {
      if (key === undefined) return new Map()
      const next = new Map(m)
      next.delete(keyOf(key))
      return next
    })

  const prepare = (connection: AppServerConnection, key: InventoryKey) =>
    Effect.gen(function* () {
      const inventory = yield* snapshot(connection, key)
      const details = new Map<string, PluginDetail>()
      for (const located of Policy.pluginsToRead(apps, inventory)) {
        const read = yield* connection
          .request("plugin/read", {
            pluginName: located.summary.name,
            ...(located.marketplacePath !== undefined ? { marketplacePath: located.marketplacePath } : {})
          })
          .pipe(Effect.mapError(failed(`plugin/read ${located.summary.id}`)))
        details.set(located.summary.id, read.plugin)
      }
      const decisions = Policy.decide(apps, inventory, details)
      return {
        snapshot: inventory,
        decisions,
        admitted: Policy.admittedApps(decisions),
        threadConfig: Policy.threadConfig(decisions)
      } satisfies Gate
    }).pipe(Effect.withSpan("AppAdmission.prepare"))

  const watchReadiness = (connection: AppServerConnection) =>
    Effect.gen(function* () {
      const signals = new Map<string, Deferred.Deferred<void>>()
      const signal = (threadId: string) =>
        Effect.sync(() => {
          let d = signals.get(threadId)
          if (d === undefined) signals.set(threadId, (d = Deferred.unsafeMake<void>(FiberId.none)))
          return d
        })
      const events = yield* connection.subscribe()
      // read continuously (the subscription is backpressured): only the codex_apps startup status is of interest
      yield* events.pipe(
        Stream.runForEach((n) => {
          const p = n.params as { threadId?: unknown; name?: unknown; status?: unknown } | undefined
          return n.method === "mcpServer/startupStatus/updated" && p?.name === "codex_apps" &&
              (p.status === "ready" || p.status === "failed") && typeof p.threadId === "string"
            ? Effect.flatMap(signal(p.threadId), (d) => Deferred.succeed(d, undefined))
            : Effect.void
        }),
        Effect.forkScoped
      )
      return (threadId: string) => Effect.flatMap(signal(threadId), Deferred.await)
    })

  const cleanup = (connection: AppServerConnection, options: ConfirmOptions) =>
    Effect.gen(function* () {
      const done: Effect.Effect<"unsubscribed" | "deleted", RequestError> = options.ephemeral
        ? Effect.as(connection.request("thread/unsubscribe", { threadId: options.threadId }), "unsubscribed" as const)
        : Effect.as(connection.request("thread/delete", { threadId: options.threadId }), "deleted" as const)
      return yield* done.pipe(
        Effect.tap(() => options.forget ?? Effect.void),
        Effect.catchAll((error) =>
          options.retire(`the provisional thread ${options.threadId} could not be cleaned up: ${error.message}`).pipe(
            Effect.as("retired" as const)
          )
        )
      )
    })

  const confirm = (connection: AppServerConnection, options: ConfirmOptions): Effect.Effect<void, AppsNotConfirmed> =>
    Effect.gen(function* () {
      let settled = false
      // interrupted (or a defect) before the check settled: the provisional thread still goes
      yield* Effect.addFinalizer(() => (settled ? Effect.void : Effect.ignore(cleanup(connection, options))))
      if (options.readiness !== undefined) {
        yield* options.readiness(options.threadId).pipe(Effect.timeout(readyTimeout), Effect.ignore)
      }
      const problems = yield* connection.request("app/installed", { threadId: options.threadId }).pipe(
        Effect.map((r) => Policy.verify(options.gate.admitted, r.apps)),
        Effect.catchAll((error) => Effect.succeed([`app/installed failed: ${error.message}`]))
      )
      if (problems.length === 0) {
        settled = true
        return
      }
      const outcome = yield* cleanup(connection, options)
      settled = true
      return yield* new AppsNotConfirmed({ threadId: options.threadId, problems, cleanup: outcome })
    }).pipe(Effect.scoped, Effect.withSpan("AppAdmission.confirm", { attributes: { threadId: options.threadId } }))

  return { snapshot, invalidate, prepare, watchReadiness, confirm } satisfies AppAdmissionService
})

export const layer: Layer.Layer<AppAdmission, never, Settings> = Layer.effect(AppAdmission, make)
