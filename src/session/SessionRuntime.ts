// Where a session's work runs, and the one way to its connection (S12, S13, S15). A session's runtime (its app-server
// transport, CODEX_HOME, provider, pool key and model lock) is recorded with its binding; every operation on the
// session (turn, steer, compaction, branch, interrupt) leases its connection through `lease` from that record, never
// from the flags of the call. Settings that disagree with the record are either followed-around (left unset: the
// record wins, with a one-line notice) or refused (set to something else: one line naming the difference). A
// supervised (locked) session runs only on its private connection under the supervision home; any drift fails closed.
// A remote runtime (a WebSocket to an app-server the harness did not start) is the one the harness cannot stop: when a
// lease's connection ends or is retired under it, the session's binding is detached, so no later turn overlaps work the
// remote app-server may still be doing on that thread (S37).
import { Config, type ConfigError, Context, Effect, Layer, Option, type Scope } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import type { SessionRuntime as Runtime } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import { type ClientSpec, ClientPool, type LeaseError } from "../appserver/ClientPool.js"
import * as CodexArgs from "../appserver/CodexArgs.js"
import { Settings } from "../config/Settings.js"
import { Delivery } from "../ports/Delivery.js"
import { TranscriptMirror } from "./TranscriptMirror.js"
import { RuntimeMismatch, SupervisedBindingDrift, type SupervisionDisabled } from "./errors.js"
import * as Runtimes from "./Runtimes.js"
import type { SessionState } from "./SessionState.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export type RuntimeRefusal = RuntimeMismatch | SupervisionDisabled | SupervisedBindingDrift

export interface Resolved {
  readonly runtime: Runtime
  readonly spec: ClientSpec
  /** said once per session when the record wins over settings that were left unset */
  readonly notice: string | undefined
}

export interface Leased {
  readonly connection: AppServerConnection
  readonly runtime: Runtime
}

export interface SessionRuntimeService {
  /** the user's own CODEX_HOME ($CODEX_HOME, else ~/.codex) */
  readonly userCodexHome: string
  /** the runtime a new session gets under these settings */
  readonly fresh: Runtime
  /** the session's runtime: the recorded one (checked against the settings), else `fresh` for a new session */
  readonly resolve: (sessionId: string, state: SessionState) => Effect.Effect<Resolved, RuntimeRefusal>
  /** resolves and leases the session's connection for the Scope; a follow-the-record notice is delivered once */
  readonly lease: (sessionId: string, state: SessionState) => Effect.Effect<Leased, RuntimeRefusal | LeaseError, Scope.Scope>
  /**
   * a lease on the runtime a new session gets, for work that belongs to no session (`apps list`, diagnostics without
   * one): no session is resolved, noticed or detached for it
   */
  readonly leaseFresh: Effect.Effect<Leased, LeaseError, Scope.Scope>
  /** a lease on a known runtime (a branch's private connection, before its binding exists) */
  readonly leaseRuntime: (runtime: Runtime, spec: ClientSpec) => Effect.Effect<AppServerConnection, LeaseError, Scope.Scope>
  /** fails everything on the runtime's current client; the next lease gets a fresh one */
  readonly retire: (runtime: Runtime, reason: string) => Effect.Effect<void>
  /** whether this process has an app-server of the runtime running now (a lease would not start one) */
  readonly running: (runtime: Runtime) => Effect.Effect<boolean>
  /** the client spec of supervision connections (discovery, and private branch connections) */
  readonly supervisionSpec: Effect.Effect<ClientSpec, SupervisionDisabled>
}

export class SessionRuntime extends Context.Tag("codex-harness/SessionRuntime")<SessionRuntime, SessionRuntimeService>() {}

/** The key a harness-defined provider gets, from the variable its settings name (see CodexArgs.providerKeyFrom). */
export const providerKeyConfig = (keyEnv?: string | undefined): Config.Config<string | undefined> => {
  const read = (name: string) => Config.string(name).pipe(Config.option, Config.map(Option.getOrUndefined))
  const names = keyEnv !== undefined ? [keyEnv] : [CodexArgs.providerKeyEnv, CodexArgs.legacyProviderKeyEnv]
  return Config.all(names.map(read)).pipe(
    Config.map((values) => CodexArgs.providerKeyFrom((name) => values[names.indexOf(name)], keyEnv))
  )
}

/** $CODEX_HOME as the codex CLI resolves it, else ~/.codex. */
export const userCodexHomeConfig = Config.string("CODEX_HOME").pipe(
  Config.option,
  Config.map(Option.filter((home) => home !== "")),
  Config.map(Option.match({ onNone: () => path.join(os.homedir(), ".codex"), onSome: (home) => path.resolve(home) }))
)

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const pool = yield* ClientPool
  const delivery = yield* Delivery
  const mirror = yield* TranscriptMirror
  // the app's ConfigProvider may fail these reads: a typed ConfigError of the layer's build, never a defect
  const userCodexHome = yield* userCodexHomeConfig
  const providerKey = yield* providerKeyConfig(settings.providerKeyEnv)
  const fresh = Runtimes.runtimeFor(settings, userCodexHome)
  // the client spec of a runtime, worked out once: every turn resolves its session's runtime (twice), and the spec
  // (provider and MCP arguments, URL checks) depends only on the runtime's fields, these settings and the key
  const specs = new Map<string, ClientSpec>()
  const specFor = (runtime: Runtime): ClientSpec => {
    const key = JSON.stringify([runtime.transport, runtime.codexHome, runtime.transport === "websocket" ? runtime.url : runtime.providerUrl])
    let spec = specs.get(key)
    if (spec === undefined) {
      if (specs.size >= 64) specs.clear()
      spec = Runtimes.clientSpecFor(runtime, settings, providerKey)
      specs.set(key, spec)
    }
    return spec
  }
  // sessions already told that their record wins; a notice is worth one line per process, not one per turn
  const noticed = new Set<string>()

  const ordinary = (sessionId: string, recorded: Runtime): Effect.Effect<Resolved, RuntimeMismatch> => {
    // where the app-server is comes first: a session never moves between a local and a remote one, or two remote ones
    const where = (runtime: Runtime) => (runtime.transport === "websocket" ? runtime.url ?? "(no url)" : `stdio (CODEX_HOME ${runtime.codexHome})`)
    const remoteRequested = settings.appServerUrl !== undefined
    if (remoteRequested && (recorded.transport !== "websocket" || recorded.url !== fresh.url)) {
      return Effect.fail(new RuntimeMismatch({ sessionId, what: "app-server", recorded: where(recorded), requested: where(fresh) }))
    }
    if (recorded.transport === "websocket") {
      // the remote app-server has its own CODEX_HOME and provider: only its URL is the harness's to compare
      return Effect.succeed({
        runtime: recorded,
        spec: specFor(recorded),
        notice: remoteRequested ? undefined : `session ${sessionId} continues where it was made: ${Runtimes.describeAppServer(recorded)}`
      })
    }
    const providerDiffers = recorded.providerUrl !== fresh.providerUrl
    if (providerDiffers && settings.providerUrl !== undefined) {
      return Effect.fail(
        new RuntimeMismatch({
          sessionId,
          what: "provider",
          recorded: Runtimes.describeProvider(recorded),
          requested: Runtimes.describeProvider(fresh)
        })
      )
    }
    // a home the settings name (a path, or the user's own by opt-in) is a request; the agent's default follows the record
    const homeRequested = settings.codexHome !== undefined || settings.userCodexHome === true
    if (recorded.codexHome !== fresh.codexHome && homeRequested) {
      return Effect.fail(
        new RuntimeMismatch({ sessionId, what: "CODEX_HOME", recorded: recorded.codexHome, requested: fresh.codexHome })
      )
    }
    const differs = providerDiffers || recorded.codexHome !== fresh.codexHome
    return Effect.succeed({
      runtime: recorded,
      spec: specFor(recorded),
      notice: differs
        ? `session ${sessionId} continues where it was made: provider ${Runtimes.describeProvider(recorded)}, CODEX_HOME ${recorded.codexHome}`
        : undefined
    })
  }

  const supervised = (sessionId: string, recorded: Runtime): Effect.Effect<Resolved, RuntimeRefusal> =>
    Effect.gen(function* () {
      const drift = (reason: string) => new SupervisedBindingDrift({ sessionId, reason })
      if (recorded.poolKey !== Runtimes.supervisedPoolKey(sessionId)) {
        return yield* drift(`it names connection ${recorded.poolKey}, not this session's`)
      }
      const base = yield* Runtimes.supervisionClientSpec(settings.supervision, userCodexHome, providerKey)
      if (recorded.codexHome !== base.codexHome) {
        return yield* drift(`it was made under CODEX_HOME ${recorded.codexHome}, supervision now uses ${base.codexHome}`)
      }
      // the provider the chat was branched with is part of its runtime: its thread's provider must stay configured
      const requested = settings.supervision?.providerUrl
      if (recorded.providerUrl === undefined || recorded.providerUrl === requested) return { runtime: recorded, spec: base, notice: undefined }
      if (requested !== undefined) {
        return yield* new RuntimeMismatch({ sessionId, what: "provider", recorded: recorded.providerUrl, requested })
      }
      return {
        runtime: recorded,
        spec: {
          ...base,
          args: CodexArgs.providerArgs(recorded.providerUrl, settings.supervision?.model, settings.supervision?.providerKeyEnv),
          hiddenEnv: CodexArgs.secretEnvNames(settings.supervision?.providerKeyEnv),
          env: CodexArgs.providerEnv(providerKey, settings.supervision?.providerKeyEnv)
        },
        notice: `session ${sessionId} continues where it was made: provider ${recorded.providerUrl}, CODEX_HOME ${recorded.codexHome}`
      }
    })

  const resolve = (sessionId: string, state: SessionState): Effect.Effect<Resolved, RuntimeRefusal> => {
    const recorded = state.runtime
    if (recorded === undefined) {
      // a new session, or one whose file predates recorded runtimes: it gets (and will record) these settings' runtime
      if (state.binding?.locked === true) {
        return Effect.fail(new SupervisedBindingDrift({ sessionId, reason: "the binding records no private connection" }))
      }
      return Effect.succeed({ runtime: fresh, spec: specFor(fresh), notice: undefined })
    }
    return recorded.locked ? supervised(sessionId, recorded) : ordinary(sessionId, recorded)
  }

  const leaseRuntime = (runtime: Runtime, spec: ClientSpec) =>
    pool.lease(runtime.poolKey, spec).pipe(Effect.withSpan("SessionRuntime.lease", { attributes: { poolKey: runtime.poolKey } }))

  const lease = (sessionId: string, state: SessionState) =>
    Effect.gen(function* () {
      const resolved = yield* resolve(sessionId, state)
      if (resolved.notice !== undefined && !noticed.has(sessionId)) {
        noticed.add(sessionId)
        yield* delivery.deliver({ sessionId, text: resolved.notice, media: [], source: "notice" }).pipe(
          Effect.catchAll((error) => HarnessLog.warning(error.message))
        )
      }
      const connection = yield* leaseRuntime(resolved.runtime, resolved.spec)
      if (!Runtimes.isRemote(resolved.runtime)) return { connection, runtime: resolved.runtime } satisfies Leased
      // the binding records the CODEX_HOME the remote app-server runs with (its machine's), as it says at initialize
      const runtime: Runtime = { ...resolved.runtime, codexHome: connection.initialize.codexHome }
      // added after the lease: it runs before the lease is given back, while the session is still held
      yield* Effect.addFinalizer(() => detachIfEnded(sessionId, runtime, connection))
      return { connection, runtime } satisfies Leased
    })

  /**
   * S37 on a remote connection: the connection this session's work ran on ended or was retired. The app-server may go
   * on with the thread's turn (a dropped socket does not stop it, and the harness cannot stop that process), so the
   * session's binding to the thread is dropped: its next turn starts a fresh thread rather than overlap that one.
   * Bindings of sessions with nothing in flight on it stay; nothing of theirs can be running there.
   */
  const detachIfEnded = (sessionId: string, runtime: Runtime, connection: AppServerConnection) =>
    Effect.gen(function* () {
      const ended = yield* connection.terminationCause
      if (Option.isNone(ended)) return
      const { state } = yield* mirror.read(sessionId)
      const binding = state.binding
      if (binding === undefined || binding.runtime?.poolKey !== runtime.poolKey) return
      yield* mirror.detached(sessionId, binding.threadId, `its remote app-server connection ended: ${ended.value.message}`)
      yield* HarnessLog.warning(`session ${sessionId}: detached from thread ${binding.threadId} (${ended.value.message})`)
    }).pipe(
      Effect.catchAll((error) => HarnessLog.warning(`session ${sessionId}: the binding could not be detached: ${error.message}`))
    )

  return {
    userCodexHome,
    fresh,
    resolve,
    lease,
    leaseFresh: Effect.map(leaseRuntime(fresh, specFor(fresh)), (connection) => ({
      connection,
      runtime: fresh
    })),
    leaseRuntime,
    retire: (runtime, reason) => pool.retire(runtime.poolKey, reason),
    running: (runtime) => Effect.map(pool.keys, (keys) => keys.includes(runtime.poolKey)),
    supervisionSpec: Runtimes.supervisionClientSpec(settings.supervision, userCodexHome, providerKey)
  } satisfies SessionRuntimeService
})

export const layer: Layer.Layer<SessionRuntime, ConfigError.ConfigError, Settings | ClientPool | Delivery | TranscriptMirror> = Layer.effect(
  SessionRuntime,
  make
)
