// A supervised branch's first turn (S15): the branch was only decided (a `branch` record and the bounded visible history
// in the mirror); here, on the chat's private connection and inside the turn that needs it, a temporary native fork
// (persistent, no model or provider override) pins the source's snapshot and reports Codex's model/provider pair, the
// canonical thread starts with exactly that pair and the harness's instructions and tools, the turn's handlers
// (approvals among them) are installed for it, apps admission confirms it when configured (S2-S5), the history is
// injected and the binding committed. The fork is archived by its finalizer once the canonical thread is ready (or
// has failed and been deleted); a fork that cannot be archived stays in the session as a `cleanupFailed` probe record.
// The source is never resumed, and reasoning, tool calls and tool results are never copied.
import { Effect } from "effect"
import type { SessionRecord, SessionRuntime as Runtime } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { RequestError } from "../appserver/errors.js"
import { type CleanupOutcome, cleanupThread } from "../apps/AppAdmission.js"
import type { AppsNotConfirmed } from "../apps/errors.js"
import { SupervisedBindingDrift } from "../session/errors.js"
import type { MirrorError, TranscriptMirrorService } from "../session/TranscriptMirror.js"
import { messageItem } from "../turn/BootstrapProjection.js"
import type { LoadedThreadsService } from "../turn/LoadedThreads.js"
import type { OpenedThread } from "../turn/TurnEvent.js"
import * as TurnRunner from "../turn/TurnRunner.js"
import * as HarnessLog from "../platform/HarnessLog.js"

type BranchRecord = Extract<SessionRecord, { readonly _tag: "branch" }>

/** How long archiving the probe may take before it is left as recovery state. */
export const probeCleanupTimeout = "10 seconds"

export interface HistoryMessage {
  readonly role: "user" | "assistant"
  readonly text: string
}

/**
 * The visible history a branch record announces: the user and assistant records written right after it, closed by
 * the branch's notice. Undefined when the branch was not fully recorded (fewer messages than announced, or no notice:
 * a write failed and the branch with it), so no later prompt is ever taken for history. Pure.
 */
export const branchHistory = (
  records: ReadonlyArray<SessionRecord>,
  branch: BranchRecord
): ReadonlyArray<HistoryMessage> | undefined => {
  // the record itself, or (records read again) the last branch record
  const start = records.includes(branch) ? records.lastIndexOf(branch) : records.map((r) => r._tag).lastIndexOf("branch")
  if (start < 0) return undefined
  const messages: Array<HistoryMessage> = []
  for (const record of records.slice(start + 1, start + 1 + branch.messages)) {
    if (record._tag === "user" && record.kind === undefined) messages.push({ role: "user", text: record.text })
    else if (record._tag === "assistant") messages.push({ role: "assistant", text: record.text })
    else return undefined
  }
  const closing = records[start + 1 + branch.messages]
  return messages.length === branch.messages && closing?._tag === "notice" ? messages : undefined
}

export interface BranchStartRequest {
  readonly sessionId: string
  readonly branch: BranchRecord
  /** the session's records (the history follows the branch record) */
  readonly records: ReadonlyArray<SessionRecord>
  readonly connection: AppServerConnection
  readonly runtime: Runtime
  readonly settings: TurnRunner.ThreadSettings
  /** the thread's instructions, tools and config (with the apps gate's deny-by-default config when apps are on) */
  readonly extras: TurnRunner.ThreadExtras
  /** installs the turn's handlers for the canonical thread, in the turn's scope, before anything else is asked of it */
  readonly install: (threadId: string) => Effect.Effect<void>
  /** the apps admission check (S4), given the run-once cleanup of the provisional canonical thread */
  readonly admit?: ((threadId: string, cleanup: Effect.Effect<CleanupOutcome>) => Effect.Effect<void, AppsNotConfirmed>) | undefined
}

export interface BranchStartDeps {
  readonly mirror: Pick<TranscriptMirrorService, "append" | "binding">
  readonly loadedThreads: LoadedThreadsService
  readonly retire: (runtime: Runtime, reason: string) => Effect.Effect<void>
}

const now = () => new Date().toISOString()

/** Forks, starts, injects and binds the branch's canonical thread; the probe fork is archived before this returns. */
export const start = (
  deps: BranchStartDeps,
  request: BranchStartRequest
): Effect.Effect<OpenedThread, RequestError | MirrorError | AppsNotConfirmed | SupervisedBindingDrift> =>
  Effect.gen(function* () {
    const { branch, connection, runtime, sessionId } = request
    const { sourceThreadId } = branch
    const history = branchHistory(request.records, branch)
    if (history === undefined) {
      // before anything exists in Codex: a chat whose history was cut short never starts with part of it
      return yield* new SupervisedBindingDrift({
        sessionId,
        reason: `its branch of native thread ${sourceThreadId} was not fully recorded; branch the source thread again`
      })
    }
    const append = (record: SessionRecord) => deps.mirror.append(sessionId, record)
    const probeRecord = (threadId: string, status: "open" | "closed" | "cleanupFailed", reason?: string): SessionRecord => ({
      _tag: "probe",
      at: now(),
      threadId,
      sourceThreadId,
      status,
      ...(reason !== undefined ? { reason } : {})
    })

    // archived, not only unsubscribed: the fork is a persistent thread of the home (an ephemeral one cannot be archived)
    const archiveProbe = (probeId: string) =>
      connection.request("thread/archive", { threadId: probeId }, { timeout: probeCleanupTimeout }).pipe(
        Effect.zipRight(append(probeRecord(probeId, "closed"))),
        Effect.catchAll((error) =>
          // recovery state: the fork is still in the home, unarchived. The connection stays: retiring it would not
          // remove a persistent thread, and the turn this branch starts for runs on it
          append(probeRecord(probeId, "cleanupFailed", error.message)).pipe(
            Effect.catchAll((e) => HarnessLog.error(`branch probe ${probeId} needs archiving, and recording that failed: ${e.message}`)),
            Effect.zipRight(HarnessLog.warning(`branch probe ${probeId} could not be archived: ${error.message}`))
          )
        )
      )

    return yield* Effect.scoped(
      Effect.gen(function* () {
        // the probe: no model, no provider; Codex answers with the pair its configuration selects
        const probe = yield* Effect.acquireRelease(
          connection.request("thread/fork", {
            threadId: sourceThreadId,
            excludeTurns: true,
            ...(branch.lastTurnId !== undefined ? { lastTurnId: branch.lastTurnId } : {})
          }).pipe(
            Effect.tap((fork) => append(probeRecord(fork.thread.id, "open")).pipe(Effect.catchAll((e) => HarnessLog.warning(e.message))))
          ),
          (fork) => archiveProbe(fork.thread.id)
        )
        const pinned = { model: probe.model, modelProvider: probe.modelProvider }
        // the canonical thread, provisional until its binding is recorded: its finalizer deletes it (confirmed gone,
        // else the connection is retired) when anything fails first (S4); it runs before the probe's
        let committed = false
        let cleanup: Effect.Effect<CleanupOutcome> = Effect.succeed("deleted")
        const thread = yield* Effect.acquireRelease(
          TurnRunner.startThread(connection, request.settings, request.extras, deps.loadedThreads, pinned).pipe(
            Effect.tap((started) =>
              // run once, whoever asks first: the admission check on its failure, or this finalizer
              Effect.map(
                Effect.cached(cleanupThread(connection, {
                  threadId: started.threadId,
                  ephemeral: false,
                  retire: (reason) => deps.retire(runtime, reason)
                })),
                (once) => {
                  cleanup = once
                }
              )
            )
          ),
          (started) =>
            committed ? Effect.void : Effect.asVoid(cleanup).pipe(Effect.zipRight(Effect.sync(() => deps.loadedThreads.forget(connection, started.threadId))))
        )
        yield* request.install(thread.threadId)
        if (request.admit !== undefined) yield* request.admit(thread.threadId, cleanup)
        const items = history.map((m) => messageItem(m.role, m.text))
        if (items.length > 0) yield* connection.request("thread/inject_items", { threadId: thread.threadId, items })
        yield* deps.mirror.binding(sessionId, { threadId: thread.threadId, ...pinned, runtime })
        committed = true
        return thread
      })
    )
  }).pipe(Effect.withSpan("BranchStart.start", { attributes: { sessionId: request.sessionId, sourceThreadId: request.branch.sourceThreadId } }))
