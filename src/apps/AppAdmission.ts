// Connected-apps admission (S2-S5). Owns the `plugin/installed` snapshot cache, keyed by (runtime pool key, workspace)
// with a time-to-live and explicit invalidation; reads the details (`plugin/read`) of exactly the configured plugins;
// decides provisional admission; and, once the real thread exists (started, or a bound thread resumed), asks
// `app/installed` for it once (no forced refresh) and holds the thread to what was admitted. A provisional thread that
// fails the check is cleaned up by a finalizer (deleted and confirmed gone by thread/read and thread/list, or
// unsubscribed when ephemeral); a resumed one is the session's committed thread, so it is kept and only unloaded.
// Cleanup that fails or cannot be confirmed retires the connection. `cleanupThread` is that cleanup, for other owners of a
// provisional thread (a supervised branch's canonical thread).
// It never installs, enables or activates a plugin, never scans marketplaces it was not configured with, and never
// forces an inventory refresh.
import { Clock, Context, Deferred, Duration, Effect, Either, FiberId, Layer, Ref, type Scope, Stream } from "effect"
import type { PluginDetail, PluginInstalledResponse } from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import { RpcError } from "../appserver/errors.js"
import { Settings } from "../config/Settings.js"
import { AppsInventoryFailed, AppsNotConfirmed } from "./errors.js"
import * as Policy from "./AppsPolicy.js"
import * as HarnessLog from "../platform/HarnessLog.js"

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
  /** a bound thread resumed (not started): on failure it is kept and unloaded (`unloadResumed`), never deleted */
  readonly resumed?: boolean | undefined
  readonly gate: Gate
  readonly readiness?: Readiness | undefined
  /** retires the connection's client: the cleanup of the provisional thread was not confirmed */
  readonly retire: (reason: string) => Effect.Effect<void>
  /** the thread is gone from the connection (forget it as loaded) */
  readonly forget?: Effect.Effect<void> | undefined
  /** the cleanup to run instead of `cleanupThread` (a caller that owns the thread passes its own, run-once cleanup) */
  readonly cleanup?: Effect.Effect<CleanupOutcome> | undefined
}

/**
 * What became of a thread that failed the check: deleted (and confirmed gone), unsubscribed (ephemeral), unloaded (a
 * resumed thread, kept), or its connection retired.
 */
export type CleanupOutcome = "deleted" | "unsubscribed" | "unloaded" | "retired"

export interface CleanupOptions {
  readonly threadId: string
  readonly ephemeral: boolean
  readonly retire: (reason: string) => Effect.Effect<void>
  readonly forget?: Effect.Effect<void> | undefined
}

/** every source kind: the confirmation must see the thread whatever started it */
const allSourceKinds = ["cli", "vscode", "exec", "appServer", "subAgent", "subAgentReview", "subAgentCompact", "subAgentThreadSpawn",
  "subAgentOther", "unknown"] as const
/** thread/read's answers for a thread that has neither a loaded instance nor a rollout (0.171: "thread not loaded: <id>") */
const goneAnswer = /no rollout|not loaded|thread not found/i

/**
 * Why a just-deleted thread is not confirmed gone, or undefined when it is: two passive reads. `thread/read` must
 * answer that there is no such thread (it answers an unloaded thread from its rollout, so this is the real check), and
 * `thread/list` restricted to the id must not list it (0.171 never lists a thread without a user turn, so this alone
 * would prove nothing for a provisional thread).
 */
const notConfirmedGone = (connection: AppServerConnection, threadId: string): Effect.Effect<string | undefined> =>
  Effect.gen(function* () {
    const read = yield* Effect.either(connection.request("thread/read", { threadId }))
    if (Either.isRight(read)) return `thread/read still answers thread ${threadId}`
    if (!(read.left instanceof RpcError && goneAnswer.test(read.left.rpcMessage))) return `thread/read failed: ${read.left.message}`
    const listed = yield* Effect.either(
      connection.request("thread/list", { includedThreadIds: [threadId], modelProviders: [], sourceKinds: allSourceKinds })
    )
    if (Either.isLeft(listed)) return `thread/list failed: ${listed.left.message}`
    return listed.right.data.some((t) => t.id === threadId) ? `thread/list still lists thread ${threadId}` : undefined
  })

/**
 * Cleans up a provisional thread (S4): a persistent one is deleted and then confirmed gone, an ephemeral one is
 * unsubscribed. A cleanup that fails or cannot be confirmed retires the connection's client (others on it get a typed,
 * retryable ConnectionRetired and the next lease a fresh process). Never fails.
 */
export const cleanupThread = (connection: AppServerConnection, options: CleanupOptions): Effect.Effect<CleanupOutcome> =>
  Effect.gen(function* () {
    const problem = options.ephemeral
      ? yield* connection.request("thread/unsubscribe", { threadId: options.threadId }).pipe(
        Effect.as(undefined),
        Effect.catchAll((error) => Effect.succeed(`thread/unsubscribe failed: ${error.message}`))
      )
      : yield* connection.request("thread/delete", { threadId: options.threadId }).pipe(
        Effect.zipRight(notConfirmedGone(connection, options.threadId)),
        Effect.catchAll((error) => Effect.succeed(`thread/delete failed: ${error.message}`))
      )
    if (problem === undefined) {
      yield* options.forget ?? Effect.void
      return options.ephemeral ? "unsubscribed" as const : "deleted" as const
    }
    const reason = `the provisional thread ${options.threadId} could not be cleaned up: ${problem}`
    yield* HarnessLog.warning(`${reason}; retiring the app-server client`)
    yield* options.retire(reason)
    return "retired" as const
  }).pipe(Effect.withSpan("AppAdmission.cleanupThread", { attributes: { threadId: options.threadId, ephemeral: options.ephemeral } }))

/**
 * What a resumed thread that fails the check gets (S3): it is the session's committed thread, so it is kept, never
 * deleted. This connection unsubscribes from it and forgets it as loaded, so nothing runs on it here and the next open
 * resumes it and checks it again. An unsubscribe that fails retires the connection's client, which unloads it as well.
 * Never fails.
 */
export const unloadResumed = (connection: AppServerConnection, options: Omit<CleanupOptions, "ephemeral">): Effect.Effect<CleanupOutcome> =>
  Effect.gen(function* () {
    const unsubscribed = yield* connection.request("thread/unsubscribe", { threadId: options.threadId }).pipe(Effect.either)
    if (Either.isRight(unsubscribed)) {
      yield* options.forget ?? Effect.void
      return "unloaded" as const
    }
    const reason = `the resumed thread ${options.threadId} could not be unloaded: thread/unsubscribe failed: ${unsubscribed.left.message}`
    yield* HarnessLog.warning(`${reason}; retiring the app-server client`)
    yield* options.retire(reason)
    return "retired" as const
  }).pipe(Effect.withSpan("AppAdmission.unloadResumed", { attributes: { threadId: options.threadId } }))

export interface AppAdmissionService {
  readonly snapshot: (connection: AppServerConnection, key: InventoryKey) => Effect.Effect<PluginInstalledResponse, AppsInventoryFailed>
  readonly invalidate: (key?: InventoryKey) => Effect.Effect<void>
  /** snapshot + exact plugin/read + provisional decisions + the deny-by-default thread config */
  readonly prepare: (connection: AppServerConnection, key: InventoryKey) => Effect.Effect<Gate, AppsInventoryFailed>
  readonly watchReadiness: (connection: AppServerConnection) => Effect.Effect<Readiness, never, Scope.Scope>
  /** one app/installed for the real thread; on any failure a provisional thread is cleaned up, a resumed one unloaded */
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
          if (n._tag !== "McpServerStartupStatus") return Effect.void
          const { name, status, threadId } = n.params
          return name === "codex_apps" && (status === "ready" || status === "failed") && typeof threadId === "string"
            ? Effect.flatMap(signal(threadId), (d) => Deferred.succeed(d, undefined))
            : Effect.void
        }),
        Effect.forkScoped
      )
      return (threadId: string) => Effect.flatMap(signal(threadId), Deferred.await)
    })

  const confirm = (connection: AppServerConnection, options: ConfirmOptions): Effect.Effect<void, AppsNotConfirmed> =>
    Effect.gen(function* () {
      let settled = false
      // interrupted (or a defect) before the check settled: the provisional thread still goes
      const cleanup = options.cleanup ?? (options.resumed === true ? unloadResumed(connection, options) : cleanupThread(connection, options))
      yield* Effect.addFinalizer(() => (settled ? Effect.void : Effect.ignore(cleanup)))
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
      const outcome = yield* cleanup
      settled = true
      return yield* new AppsNotConfirmed({ threadId: options.threadId, problems, cleanup: outcome })
    }).pipe(Effect.scoped, Effect.withSpan("AppAdmission.confirm", { attributes: { threadId: options.threadId } }))

  return { snapshot, invalidate, prepare, watchReadiness, confirm } satisfies AppAdmissionService
})

export const layer: Layer.Layer<AppAdmission, never, Settings> = Layer.effect(AppAdmission, make)
