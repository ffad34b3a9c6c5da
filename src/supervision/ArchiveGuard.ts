// The archive guard (S16, S17): archives a native thread only when nothing known runs on it or on any of its
// non-archived spawned descendants, after the operator confirmed that no other runner uses it and after a fresh status
// read. `notLoaded` is unknown, never idle. Any doubt (an enumeration error, a cycle, a limit) refuses with the reason.
// Codex cannot prove that another process is idle; the confirmation covers that gap and the race after the read.
import { Context, Effect, Layer } from "effect"
import { RpcError } from "../appserver/errors.js"
import { type InvalidSessionId, SessionStore, type SessionStoreError } from "../session/SessionStore.js"
import { sessionState } from "../session/SessionState.js"
import { type RunOwner, SessionWork } from "../harness/SessionWork.js"
import { Catalog, type CatalogError, type CatalogRow } from "./Catalog.js"
import { Discovery } from "./Discovery.js"
import { ArchiveBlocked, type ThreadNotFound } from "./errors.js"

export interface ArchiveOptions {
  /** the operator states that no process outside this harness runs or answers approvals on the thread */
  readonly confirmNoOtherRunner?: boolean | undefined
}

export interface Archived {
  readonly threadId: string
  /** the status read just before archiving */
  readonly status: CatalogRow["status"]
  readonly descendantsChecked: number
  /** local sessions whose binding to the thread was detached */
  readonly detachedSessions: ReadonlyArray<string>
}

export interface ArchiveGuardService {
  readonly archive: (
    target: string | CatalogRow,
    options?: ArchiveOptions
  ) => Effect.Effect<Archived, ArchiveBlocked | CatalogError | ThreadNotFound | SessionStoreError | InvalidSessionId>
}

export class ArchiveGuard extends Context.Tag("codex-harness/supervision/ArchiveGuard")<ArchiveGuard, ArchiveGuardService>() {}

const describeOwner = (owner: RunOwner, target: string) =>
  `session ${owner.sessionId} is running a turn on ${owner.threadId === target ? "it" : `its descendant ${owner.threadId}`}`

export const make = Effect.gen(function* () {
  const catalog = yield* Catalog
  const discovery = yield* Discovery
  const runs = yield* SessionWork
  const store = yield* SessionStore

  const archive = (target: string | CatalogRow, options: ArchiveOptions = {}) =>
    Effect.gen(function* () {
      const row = typeof target === "string" ? yield* catalog.show(target) : target
      const threadId = row.threadId
      const blocked = (reason: string) => new ArchiveBlocked({ threadId, reason })
      if (row.remote) return yield* blocked(`it belongs to paired node ${row.node}, whose catalog is metadata-only`)

      const fresh = yield* catalog.inspect(threadId)
      if (fresh.archived) return yield* blocked("it is already archived")
      if (fresh.row.status === "active") {
        return yield* blocked(`it is active${fresh.row.activeFlags.length > 0 ? ` (${fresh.row.activeFlags.join(", ")})` : ""}`)
      }
      const directOwners = yield* runs.owners(new Set([threadId]))
      if (directOwners.length > 0) return yield* blocked(describeOwner(directOwners[0]!, threadId))
      if (options.confirmNoOtherRunner !== true) {
        const state = fresh.row.status === "idle" ? "idle here" : `${fresh.row.status} (its activity is unknown)`
        return yield* blocked(`it is ${state}; confirm that no other runner uses it (--confirm-no-other-runner)`)
      }

      const descendants = yield* catalog.descendants(threadId).pipe(
        Effect.catchAll((error) => Effect.fail(blocked(`its descendants could not be checked: ${error.message}`)))
      )
      const active = descendants.find((d) => d.status === "active")
      if (active !== undefined) return yield* blocked(`its descendant ${active.threadId} is active`)
      const owners = yield* runs.owners(new Set([threadId, ...descendants.map((d) => d.threadId)]))
      if (owners.length > 0) return yield* blocked(describeOwner(owners[0]!, threadId))

      // the last look, as close to the mutation as possible
      const last = yield* catalog.inspect(threadId)
      if (last.archived) return yield* blocked("it was archived meanwhile")
      if (last.row.status === "active") return yield* blocked("it became active")
      yield* discovery.archive(threadId).pipe(
        // Codex's own cross-process writer lock: another process still has the thread or a descendant loaded
        Effect.catchIf(
          (e): e is RpcError => e instanceof RpcError && /active writer/i.test(e.rpcMessage),
          (e) => Effect.fail(blocked(`another process is writing it (${e.rpcMessage})`))
        )
      )

      // local chats bound to it lose the binding: their next message starts afresh, and they can be deleted
      const sessions = yield* store.list
      const detached: Array<string> = []
      for (const s of sessions) {
        const { records } = yield* store.read(s.sessionId)
        if (sessionState(records).binding?.threadId !== threadId) continue
        yield* store.append(s.sessionId, { _tag: "detached", at: new Date().toISOString(), threadId, reason: "archived" })
        detached.push(s.sessionId)
      }
      return { threadId, status: last.row.status, descendantsChecked: descendants.length, detachedSessions: detached }
    }).pipe(Effect.withSpan("ArchiveGuard.archive"))

  return { archive } satisfies ArchiveGuardService
})

export const layer: Layer.Layer<ArchiveGuard, never, Catalog | Discovery | SessionWork | SessionStore> = Layer.effect(
  ArchiveGuard,
  make
)
