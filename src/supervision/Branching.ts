// Continue as branch (S15, S16, S17): a new model-locked chat that continues a native thread without touching it.
// A temporary ephemeral fork (the probe, a scoped resource) pins the snapshot with Codex's own model/provider pair; the
// canonical thread starts on the chat's private supervision connection with exactly that pair, gets the bounded visible
// user/assistant history injected, and the probe is unsubscribed by its finalizer. The source is never resumed;
// reasoning, tool calls and tool results are never copied. Later turns stay on the private connection.
// With apps in the config (S2-S4) the canonical thread starts deny-by-default and one app/installed confirms it before
// its history is injected or the binding committed. The canonical thread is provisional (a scoped resource) until the
// binding is committed: a branch that fails or is interrupted deletes it, confirmed gone, or retires the connection;
// the probe's finalizer runs after it, and a probe that cannot be cleaned up stays in the session as recovery state.
import { Context, Effect, Layer, Schema } from "effect"
import { TextContent, type Turn } from "../../schemas/protocol.js"
import type { SessionRecord } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { LeaseError } from "../appserver/ClientPool.js"
import type { RequestError } from "../appserver/errors.js"
import { AppAdmission, type CleanupOutcome, cleanupThread } from "../apps/AppAdmission.js"
import * as AppsPolicy from "../apps/AppsPolicy.js"
import type { AppsError } from "../apps/errors.js"
import { Settings } from "../config/Settings.js"
import { ThreadOpener } from "../threads/ThreadOpener.js"
import { supervisedRuntime } from "../session/Runtimes.js"
import { SessionRuntime } from "../session/SessionRuntime.js"
import {
  checkSessionId,
  type InvalidSessionId,
  type SessionHoldError,
  SessionStore,
  type SessionStoreError
} from "../session/SessionStore.js"
import { TranscriptMirror } from "../session/TranscriptMirror.js"
import { conversationBounds, fitText, keepNewest, messageItem } from "../turn/BootstrapProjection.js"
import * as TurnRunner from "../turn/TurnRunner.js"
import { SessionWork } from "../harness/SessionWork.js"
import { Catalog, type CatalogError, type CatalogRow, paginate } from "./Catalog.js"
import { BranchRefused, EnumerationFailed, type SupervisionDisabled, type ThreadNotFound } from "./errors.js"

/** How much of the source's visible conversation a branch carries (UTF-8 bytes; the newest messages are kept). */
export const historyBounds = {
  /** the same limits as a bootstrap projection's (S38) */
  maxMessages: conversationBounds.maxEntries,
  maxTotalBytes: conversationBounds.maxTotalBytes,
  /** a longer message is cut, with a marker saying how much was left out */
  maxMessageBytes: conversationBounds.maxEntryBytes,
  /** thread/turns/list pages read, newest first */
  turnPageSize: 50,
  maxTurnPages: 100
} as const

export type HistoryBounds = typeof historyBounds

export interface HistoryMessage {
  readonly role: "user" | "assistant"
  readonly text: string
  readonly turnId: string
}

export interface History {
  /** oldest first */
  readonly messages: ReadonlyArray<HistoryMessage>
  readonly bytes: number
  /** older messages were left out, or a message was cut */
  readonly truncated: boolean
  /** the source's last terminal persisted turn: the snapshot point */
  readonly lastTurnId: string | undefined
}

const terminal = new Set(["completed", "interrupted", "failed"])
const isTextContent = Schema.is(TextContent)

/** The visible messages of a turn: user text and assistant text only; reasoning and tool items never. */
export const visibleMessages = (turn: Turn): ReadonlyArray<HistoryMessage> =>
  turn.items.flatMap((item): ReadonlyArray<HistoryMessage> => {
    if (item.type === "userMessage") {
      const text = item.content.flatMap((part) => (isTextContent(part) ? [part.text] : [])).join("\n")
      return text === "" ? [] : [{ role: "user", text, turnId: turn.id }]
    }
    if (item.type === "agentMessage") {
      return item.text !== "" ? [{ role: "assistant", text: item.text, turnId: turn.id }] : []
    }
    return []
  })

/**
 * The bounded history up to the last terminal turn, from turns listed newest first. Turns newer than the last
 * terminal one (still running, or torn) are left out. Pure.
 */
export const boundHistory = (newestFirst: ReadonlyArray<Turn>, bounds: HistoryBounds = historyBounds): History => {
  const start = newestFirst.findIndex((t) => terminal.has(t.status))
  if (start < 0) return { messages: [], bytes: 0, truncated: false, lastTurnId: undefined }
  const newestMessages = function*() {
    for (const turn of newestFirst.slice(start)) yield* [...visibleMessages(turn)].reverse()
  }
  const { bytes, kept, truncated } = keepNewest(
    newestMessages(),
    { maxEntries: bounds.maxMessages, maxTotalBytes: bounds.maxTotalBytes, maxEntryBytes: bounds.maxMessageBytes },
    (message, max) => {
      const fitted = fitText(message.text, max)
      return { entry: { ...message, text: fitted.text }, bytes: fitted.bytes, cut: fitted.cut }
    }
  )
  return { messages: kept, bytes, truncated, lastTurnId: newestFirst[start]!.id }
}

/** The history as raw Responses API items for thread/inject_items. */
export const injectionItems = (history: History): ReadonlyArray<unknown> => history.messages.map((m) => messageItem(m.role, m.text))

export interface BranchOptions {
  /** the new chat's session id; default `branch-<uuid>`; it must not exist yet */
  readonly sessionId?: string | undefined
}

export interface Branched {
  readonly sessionId: string
  readonly sourceThreadId: string
  /** the canonical thread of the new chat */
  readonly threadId: string
  /** exactly the pair the probe fork reported */
  readonly model: string
  readonly modelProvider: string
  readonly probeThreadId: string
  readonly probe: "closed" | "cleanupFailed"
  readonly history: History
}

export type BranchError =
  | BranchRefused
  | SupervisionDisabled
  | ThreadNotFound
  | CatalogError
  | EnumerationFailed
  | LeaseError
  | RequestError
  | SessionStoreError
  | SessionHoldError
  | InvalidSessionId
  | AppsError

export interface BranchingService {
  readonly branch: (source: string | CatalogRow, options?: BranchOptions) => Effect.Effect<Branched, BranchError>
}

export class Branching extends Context.Tag("codex-harness/supervision/Branching")<Branching, BranchingService>() {}

const now = () => new Date().toISOString()

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const runtimes = yield* SessionRuntime
  const mirror = yield* TranscriptMirror
  const store = yield* SessionStore
  const catalog = yield* Catalog
  const runs = yield* SessionWork
  const opener = yield* ThreadOpener
  const apps = yield* AppAdmission
  const appsOn = AppsPolicy.hasAppsConfig(settings.apps)

  const readHistory = (connection: AppServerConnection, threadId: string) =>
    Effect.gen(function* () {
      // newest first, and only as far back as the bounds can use
      const turns: Array<Turn> = []
      let messages = 0
      yield* paginate(
        `the turns of thread ${threadId}`,
        (cursor) =>
          messages >= historyBounds.maxMessages
            ? Effect.succeed({ data: [], nextCursor: null })
            : connection
              .request("thread/turns/list", {
                threadId,
                sortDirection: "desc",
                itemsView: "full",
                limit: historyBounds.turnPageSize,
                ...(cursor !== undefined ? { cursor } : {})
              })
              .pipe(
                Effect.tap((page) =>
                  Effect.sync(() => {
                    turns.push(...page.data)
                    messages += page.data.reduce((n, t) => n + visibleMessages(t).length, 0)
                  })
                )
              ),
        { maxPages: historyBounds.maxTurnPages, maxRows: historyBounds.turnPageSize * historyBounds.maxTurnPages, onLimit: "truncate" }
      )
      return boundHistory(turns)
    })

  const branch = (source: string | CatalogRow, options: BranchOptions = {}) =>
    Effect.gen(function* () {
      const spec = yield* runtimes.supervisionSpec
      const row = typeof source === "string" ? yield* catalog.show(source) : source
      const sourceThreadId = row.threadId
      const refused = (reason: string) => new BranchRefused({ threadId: sourceThreadId, reason })
      if (row.remote) return yield* refused(`it belongs to paired node ${row.node}, whose catalog is metadata-only`)
      const fresh = yield* catalog.inspect(sourceThreadId)
      if (fresh.archived) return yield* refused("it is archived")
      if (fresh.row.status === "active") return yield* refused("it is active; branch it once its turn has ended")
      const owners = yield* runs.owners(new Set([sourceThreadId]))
      if (owners.length > 0) return yield* refused(`session ${owners[0]!.sessionId} is running a turn on it`)

      const sessionId = yield* checkSessionId(options.sessionId ?? `branch-${crypto.randomUUID()}`)
      yield* store.hold(sessionId)
      if ((yield* mirror.read(sessionId)).contents.records.length > 0) return yield* refused(`session ${sessionId} already exists`)
      // the chat's runtime: its private connection under the supervision home, model-locked (S13, S15)
      const runtime = supervisedRuntime(sessionId, spec.codexHome!, settings.supervision?.providerUrl)
      // what every thread of a session is opened with (ThreadOpener), started here with the pair the probe pins (S15)
      const { settings: threadSettings, setup } = yield* opener.plan({ sessionId, state: {}, kind: "user" })
      const append = (record: SessionRecord) => mirror.append(sessionId, record)

      let probeOutcome: Branched["probe"] = "closed"
      const cleanupProbe = (connection: AppServerConnection, probeId: string) =>
        connection.request("thread/unsubscribe", { threadId: probeId }, { timeout: "10 seconds" }).pipe(
          Effect.zipRight(append({ _tag: "probe", at: now(), threadId: probeId, sourceThreadId, status: "closed" })),
          Effect.catchAll((error) =>
            Effect.gen(function* () {
              probeOutcome = "cleanupFailed"
              // recovery state first, then the connection goes: whatever still holds the probe goes with it
              yield* append({ _tag: "probe", at: now(), threadId: probeId, sourceThreadId, status: "cleanupFailed", reason: error.message })
                .pipe(Effect.catchAll((e) => Effect.logError(`probe ${probeId} needs cleanup, and recording that failed: ${e.message}`)))
              yield* runtimes.retire(runtime, `branch probe ${probeId} could not be cleaned up`)
              yield* Effect.logWarning(`branch probe ${probeId} could not be cleaned up (${error.message}); its connection was retired`)
            })
          )
        )

      const made = yield* Effect.scoped(
        Effect.gen(function* () {
          const connection = yield* runtimes.leaseRuntime(runtime, spec)
          // S2-S5: decided before anything exists on the connection; the canonical thread opens deny-by-default
          const gate = appsOn ? yield* apps.prepare(connection, { poolKey: runtime.poolKey, cwd: threadSettings.cwd }) : undefined
          const readiness = gate !== undefined ? yield* apps.watchReadiness(connection) : undefined
          const history = yield* readHistory(connection, sourceThreadId)
          // the probe: no model, no provider; Codex answers with the pair its configuration selects
          const probe = yield* Effect.acquireRelease(
            connection.request("thread/fork", {
              threadId: sourceThreadId,
              ephemeral: true,
              excludeTurns: true,
              ...(history.lastTurnId !== undefined ? { lastTurnId: history.lastTurnId } : {})
            }).pipe(
              Effect.tap((fork) =>
                append({ _tag: "probe", at: now(), threadId: fork.thread.id, sourceThreadId, status: "open" }).pipe(
                  Effect.catchAll((e) => Effect.logWarning(e.message))
                )
              )
            ),
            (fork) => cleanupProbe(connection, fork.thread.id)
          )
          const extras = gate === undefined ? setup.extras : { ...setup.extras, config: { ...setup.extras.config, ...gate.threadConfig } }
          // the canonical thread, provisional until the binding is committed: its finalizer deletes it (confirmed gone,
          // else the connection is retired) when the branch fails or is interrupted first (S4); it runs before the probe's
          let committed = false
          let cleanup: Effect.Effect<CleanupOutcome> = Effect.succeed("deleted")
          const started = yield* Effect.acquireRelease(
            connection.request("thread/start", {
              ...TurnRunner.threadParams(threadSettings, extras, true),
              model: probe.model,
              modelProvider: probe.modelProvider,
              ...(setup.extras.dynamicTools !== undefined && setup.extras.dynamicTools.length > 0 ? { dynamicTools: setup.extras.dynamicTools } : {})
            }).pipe(
              Effect.tap((started) =>
                // run once, whoever asks first: the admission check on its failure, or this finalizer
                Effect.map(
                  Effect.cached(cleanupThread(connection, {
                    threadId: started.thread.id,
                    ephemeral: false,
                    retire: (reason) => runtimes.retire(runtime, reason)
                  })),
                  (once) => {
                    cleanup = once
                  }
                )
              )
            ),
            () => (committed ? Effect.void : Effect.asVoid(cleanup))
          )
          const threadId = started.thread.id
          if (gate !== undefined) {
            yield* apps.confirm(connection, { threadId, ephemeral: false, gate, readiness, cleanup, retire: (reason) => runtimes.retire(runtime, reason) })
          }
          const items = injectionItems(history)
          if (items.length > 0) yield* connection.request("thread/inject_items", { threadId, items })

          // the mirror of what the canonical thread now knows, then the binding that commits the chat
          yield* append({
            _tag: "notice",
            at: now(),
            text: `Branched from native thread ${sourceThreadId}: ${history.messages.length} messages carried over${history.truncated ? " (bounded)" : ""}.`
          })
          for (const message of history.messages) {
            yield* append(
              message.role === "user"
                ? { _tag: "user", at: now(), text: message.text }
                : { _tag: "assistant", at: now(), threadId: sourceThreadId, turnId: message.turnId, text: message.text, delivered: false }
            )
          }
          yield* mirror.binding(sessionId, { threadId, model: probe.model, modelProvider: probe.modelProvider, runtime })
          committed = true
          return { threadId, model: probe.model, modelProvider: probe.modelProvider, probeThreadId: probe.thread.id, history }
        })
      )

      return { sessionId, sourceThreadId, ...made, probe: probeOutcome } satisfies Branched
    }).pipe(Effect.scoped, Effect.withSpan("Branching.branch"))

  return { branch } satisfies BranchingService
})

export const layer: Layer.Layer<
  Branching,
  never,
  Settings | SessionRuntime | SessionStore | TranscriptMirror | Catalog | SessionWork | ThreadOpener | AppAdmission
> = Layer.effect(
  Branching,
  make
)
