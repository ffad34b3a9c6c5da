// The one way a session's thread is opened on its connection, for every path that loads it: a turn, a manual
// compaction, a cluster runner taking a session over, a resume after a restart. Whatever loads a thread first decides
// its developer instructions, hooks and tools for as long as that app-server keeps it loaded (Codex ignores them on a
// resume of a loaded thread, and a compaction rebuilds the context from them), so every path gets them from here: the
// session's recorded runtime (the lease), its thread settings (S12, S13) and its ThreadSetup (S6-S11, S20), with the
// apps gate when apps are configured (S2-S5), checked on a started and a resumed thread alike. A bound thread that is
// gone is replaced by a fresh one carrying the conversation (S38) only where the caller allows it; the binding is
// recorded before the caller sends anything else.
// A supervised branch that was only decided gets its canonical thread here, on its first turn (BranchStart, S15), and a
// branch probe still waiting for its cleanup is retried on the connection first (ProbeCleanup.ts). The caller's
// handlers for the thread (a turn's approvals, tools, questions) are installed as soon as the thread exists.
import { Context, Effect, Layer, Scope } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import type { SessionRuntime as Runtime } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { LeaseError } from "../appserver/ClientPool.js"
import { type RequestError, RpcError } from "../appserver/errors.js"
import { AppAdmission } from "../apps/AppAdmission.js"
import * as AppsPolicy from "../apps/AppsPolicy.js"
import type { AppsError } from "../apps/errors.js"
import { Settings } from "../config/Settings.js"
import { ContextEngine } from "../ports/ContextEngine.js"
import { Delivery } from "../ports/Delivery.js"
import { SupervisedThreadGone } from "../session/errors.js"
import { type RuntimeRefusal, SessionRuntime } from "../session/SessionRuntime.js"
import type { SessionState } from "../session/SessionState.js"
import { type MirrorError, TranscriptMirror } from "../session/TranscriptMirror.js"
import * as Bootstrap from "../turn/BootstrapProjection.js"
import { LoadedThreads } from "../turn/LoadedThreads.js"
import { mergeTurnContext, type TurnContext, TurnContexts } from "../turn/TurnContext.js"
import type { TurnKind } from "../turn/TurnExtension.js"
import type { OpenedThread } from "../turn/TurnEvent.js"
import * as TurnRunner from "../turn/TurnRunner.js"
import { threadSettingsFor } from "../turn/ThreadSettings.js"
import * as BranchStart from "./BranchStart.js"
import * as ProbeCleanup from "./ProbeCleanup.js"
import { type ThreadSetup, ThreadSetups } from "./ThreadSetup.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** What a thread of the session is opened with, before any connection is involved. */
export interface PlanRequest {
  readonly sessionId: string
  /** the session's state, as read under its hold */
  readonly state: SessionState
  /** the kind of turn the thread is opened for; a compaction opens it as for a user turn */
  readonly kind: TurnKind
  /** what the caller knows beyond the TurnContexts port (a turn request's own context) */
  readonly context?: TurnContext | undefined
  /** an explicit model choice of this call (S12); never sent on a locked session (S13) */
  readonly requestedModel?: string | undefined
}

export interface ThreadPlan {
  readonly settings: TurnRunner.ThreadSettings
  readonly setup: ThreadSetup
  /** a supervised, model-locked binding (S13) */
  readonly locked: boolean
}

export interface OpenRequest extends PlanRequest {
  /** false: only the bound thread will do; a session without one, or whose thread is gone, is the caller's failure */
  readonly mayStartFresh: boolean
  /** the session's records: what a fresh thread that takes over a conversation carries (S38) */
  readonly records: ReadonlyArray<SessionRecord>
  /**
   * The caller's handlers for the thread (a turn's server-request routes and observers), installed in the caller's
   * Scope once the thread exists and before anything else is asked of it: before an apps check, an injection, a turn
   */
  readonly install?: ((thread: InstallTarget) => Effect.Effect<void, never, Scope.Scope>) | undefined
}

export interface InstallTarget {
  readonly connection: AppServerConnection
  readonly threadId: string
  readonly setup: ThreadSetup
}

export interface SessionThread {
  readonly connection: AppServerConnection
  readonly runtime: Runtime
  readonly thread: OpenedThread
  readonly setup: ThreadSetup
  readonly settings: TurnRunner.ThreadSettings
  /** a supervised, model-locked binding (S13) */
  readonly locked: boolean
  /** the detached thread whose conversation this fresh one took over (`newThread(carry)`), if any */
  readonly carriedFrom: string | undefined
  /** forgets that the thread is loaded on this connection (Codex said otherwise), so the next open resumes it */
  readonly forget: Effect.Effect<void>
}

export type OpenError = LeaseError | RequestError | RuntimeRefusal | SupervisedThreadGone | AppsError | MirrorError | Bootstrap.BootstrapFailed

export interface ThreadOpenerService {
  /** leases the session's connection for the Scope and opens its thread on it (started, resumed, or already loaded) */
  readonly open: (request: OpenRequest) => Effect.Effect<SessionThread, OpenError, Scope.Scope>
}

export class ThreadOpener extends Context.Tag("codex-harness/ThreadOpener")<ThreadOpener, ThreadOpenerService>() {}

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const runtimes = yield* SessionRuntime
  const mirror = yield* TranscriptMirror
  const delivery = yield* Delivery
  const setups = yield* ThreadSetups
  const loadedThreads = yield* LoadedThreads
  const turnContexts = yield* TurnContexts
  const contextEngine = yield* ContextEngine
  const apps = yield* AppAdmission
  const appsOn = AppsPolicy.hasAppsConfig(settings.apps)

  // the thread settings, instructions, tools and config a thread of the session gets: what `open` sends
  const plan = (request: PlanRequest) =>
    Effect.gen(function* () {
      const { kind, sessionId, state } = request
      const context = mergeTurnContext(yield* turnContexts.forTurn(sessionId, kind), request.context)
      const { kind: _kind, ...setupContext } = context
      return {
        settings: threadSettingsFor(settings, state, request.requestedModel),
        setup: yield* setups.forSession(sessionId, kind, setupContext),
        locked: state.runtime?.locked === true || state.binding?.locked === true
      } satisfies ThreadPlan
    })

  const open = (request: OpenRequest) =>
    Effect.gen(function* () {
      const { records, sessionId, state } = request
      const { locked, settings: threadSettings, setup } = yield* plan(request)
      const { connection, runtime } = yield* runtimes.lease(sessionId, state)
      // a branch probe whose cleanup failed (or never ran) is retried on the session's connection first (S4)
      if (state.pendingProbes !== undefined) yield* ProbeCleanup.retryPending(connection, mirror, sessionId, state.pendingProbes)
      const bound = state.binding !== undefined
        ? { threadId: state.binding.threadId, locked, replaceIfGone: !locked && request.mayStartFresh }
        : undefined
      // S2-S5: only with apps in the config; a fresh thread opens deny-by-default and is checked before anything else
      const gate = appsOn ? yield* apps.prepare(connection, { poolKey: runtime.poolKey, cwd: threadSettings.cwd }) : undefined
      const readiness = gate !== undefined ? yield* apps.watchReadiness(connection) : undefined
      const extras = gate === undefined ? setup.extras : { ...setup.extras, config: { ...setup.extras.config, ...gate.threadConfig } }
      const caller = yield* Effect.scope
      const install = (threadId: string) =>
        request.install === undefined ? Effect.void : Scope.extend(request.install({ connection, threadId, setup }), caller)
      const retire = (reason: string) => runtimes.retire(runtime, reason)
      // a branch that was only decided: its canonical thread is made now, and bound before the turn starts (S15)
      const branch = state.binding === undefined ? state.branch : undefined
      if (branch !== undefined) {
        const thread = yield* BranchStart.start({ mirror, loadedThreads, retire: runtimes.retire }, {
          sessionId,
          branch,
          records,
          connection,
          runtime,
          settings: threadSettings,
          extras,
          install,
          admit: gate === undefined
            ? undefined
            : (threadId, cleanup) => apps.confirm(connection, { threadId, ephemeral: false, gate, readiness, cleanup, retire })
        })
        const forget = Effect.sync(() => loadedThreads.forget(connection, thread.threadId))
        return { connection, runtime, thread, setup, settings: threadSettings, locked, carriedFrom: undefined, forget } satisfies SessionThread
      }
      const thread = yield* TurnRunner.openThread(connection, threadSettings, bound, extras, loadedThreads).pipe(
        Effect.catchIf(
          (error): error is RpcError => locked && TurnRunner.isThreadGone(error),
          (error) => Effect.fail(new SupervisedThreadGone({ sessionId, threadId: bound?.threadId ?? "", reason: error.rpcMessage }))
        )
      )
      const forget = Effect.sync(() => loadedThreads.forget(connection, thread.threadId))
      yield* install(thread.threadId)
      // S3 on every thread this open loaded, started or resumed; one already loaded here was checked when it was
      if (gate !== undefined && thread.reused !== true) {
        yield* apps.confirm(connection, {
          threadId: thread.threadId,
          ephemeral: false,
          resumed: thread.resumed,
          gate,
          readiness,
          retire,
          forget
        })
      }
      // a fresh thread after `newThread(carry)` takes over the detached one's conversation (S38)
      const carriedFrom = !thread.resumed && state.binding === undefined && state.detached?.carry === true
        ? state.detached.threadId
        : undefined
      if (thread.replacedThreadId !== undefined) {
        const text = `The Codex thread ${thread.replacedThreadId} of this session no longer exists; continuing on a new thread.`
        yield* mirror.notice(sessionId, text)
        yield* delivery.deliver({ sessionId, text, media: [], source: "notice" }).pipe(
          Effect.catchAll((error) => HarnessLog.warning(error.message))
        )
      }
      if (thread.replacedThreadId !== undefined || carriedFrom !== undefined) {
        // the fresh thread gets the conversation it takes over, as the ContextEngine agrees, before any turn (S38)
        yield* Bootstrap.inject(connection, contextEngine, mirror, {
          sessionId,
          reason: thread.replacedThreadId !== undefined ? "threadGone" : "carry",
          threadId: thread.threadId,
          previousThreadId: thread.replacedThreadId ?? carriedFrom,
          records
        })
      }
      if (state.binding?.threadId !== thread.threadId || state.binding.runtime === undefined) {
        yield* mirror.binding(sessionId, { threadId: thread.threadId, model: thread.model, modelProvider: thread.modelProvider, runtime })
      }
      return { connection, runtime, thread, setup, settings: threadSettings, locked, carriedFrom, forget } satisfies SessionThread
    }).pipe(Effect.withSpan("ThreadOpener.open", { attributes: { sessionId: request.sessionId, kind: request.kind } }))

  return { open } satisfies ThreadOpenerService
})

export const layer: Layer.Layer<
  ThreadOpener,
  never,
  Settings | SessionRuntime | TranscriptMirror | Delivery | ThreadSetups | LoadedThreads | AppAdmission
> = Layer.effect(ThreadOpener, make)
