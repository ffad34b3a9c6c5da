// Continue as branch (S15, S16, S17): a new model-locked chat that continues a native thread without touching it.
// Branching decides it and nothing more: after the refusals (active, owned, archived, remote, a taken session id) it
// reads the source's bounded visible history through the passive discovery client and records, in this order, the
// `branch` record (from it on the session is a model-locked chat on its private supervision connection), the history
// as user and assistant records, and a notice that closes it. Nothing is made in Codex here: the chat's first turn
// forks the snapshot, starts the canonical thread with the pair the fork returned, injects the history and archives
// the fork, inside the ordinary turn path with the turn's approval handlers installed (threads/BranchStart). The
// source is never resumed; reasoning, tool calls and tool results are never copied.
import { Context, Effect, Layer, Schema } from "effect"
import { TextContent, type Turn } from "../../schemas/protocol.js"
import type { SessionRecord } from "../../schemas/session.js"
import { Settings } from "../config/Settings.js"
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
import { conversationBounds, fitText, keepNewest } from "../turn/BootstrapProjection.js"
import { SessionWork } from "../harness/SessionWork.js"
import { Catalog, type CatalogError, type CatalogRow, paginate } from "./Catalog.js"
import { Discovery, type DiscoveryError } from "./Discovery.js"
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

export interface BranchOptions {
  /** the new chat's session id; default `branch-<uuid>`; it must not exist yet */
  readonly sessionId?: string | undefined
}

export interface Branched {
  readonly sessionId: string
  readonly sourceThreadId: string
  /** the snapshot the chat's first turn forks: the source's last terminal turn */
  readonly lastTurnId: string | undefined
  /** what the chat's canonical thread will be given (and the mirror already holds) */
  readonly history: History
}

export type BranchError =
  | BranchRefused
  | SupervisionDisabled
  | ThreadNotFound
  | CatalogError
  | EnumerationFailed
  | DiscoveryError
  | SessionStoreError
  | SessionHoldError
  | InvalidSessionId

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
  const discovery = yield* Discovery

  // newest first, and only as far back as the bounds can use; a passive read (the source is never loaded)
  const readHistory = (threadId: string) =>
    Effect.gen(function* () {
      const turns: Array<Turn> = []
      let messages = 0
      yield* paginate(
        `the turns of thread ${threadId}`,
        (cursor) =>
          messages >= historyBounds.maxMessages
            ? Effect.succeed({ data: [], nextCursor: null })
            : discovery
              .read("thread/turns/list", {
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
      const history = yield* readHistory(sourceThreadId)
      const append = (record: SessionRecord) => mirror.append(sessionId, record)

      // the decision first: from this record on the session runs only on its private connection, model-locked (S13)
      yield* append({
        _tag: "branch",
        at: now(),
        sourceThreadId,
        ...(history.lastTurnId !== undefined ? { lastTurnId: history.lastTurnId } : {}),
        messages: history.messages.length,
        ...(history.truncated ? { truncated: true } : {}),
        runtime: supervisedRuntime(sessionId, spec.codexHome!, settings.supervision?.providerUrl)
      })
      // the history the first turn injects, then the notice that closes it (without it the branch is incomplete)
      for (const message of history.messages) {
        yield* append(
          message.role === "user"
            ? { _tag: "user", at: now(), text: message.text }
            : { _tag: "assistant", at: now(), threadId: sourceThreadId, turnId: message.turnId, text: message.text, delivered: false }
        )
      }
      yield* append({
        _tag: "notice",
        at: now(),
        text: `Branched from native thread ${sourceThreadId}: ${history.messages.length} messages carried over` +
          `${history.truncated ? " (bounded)" : ""}. The first turn forks its snapshot and starts the chat's own thread.`
      })
      return { sessionId, sourceThreadId, lastTurnId: history.lastTurnId, history } satisfies Branched
    }).pipe(Effect.scoped, Effect.withSpan("Branching.branch"))

  return { branch } satisfies BranchingService
})

export const layer: Layer.Layer<
  Branching,
  never,
  Settings | SessionRuntime | SessionStore | TranscriptMirror | Catalog | SessionWork | Discovery
> = Layer.effect(
  Branching,
  make
)
