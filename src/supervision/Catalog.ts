// The native thread catalog (S14, S17): non-archived threads of the supervision CODEX_HOME, read through the discovery
// connection and followed to the end of their pagination within documented bounds, plus metadata-only rows from
// paired nodes. Every read is passive. It never resumes, forks or archives anything.
import { Context, Effect, Layer } from "effect"
import { type Thread, ThreadSourceKind } from "../../schemas/protocol.js"
import { RpcError } from "../appserver/errors.js"
import { Discovery, type DiscoveryError } from "./Discovery.js"
import { EnumerationFailed, ThreadNotFound } from "./errors.js"
import { RemoteCatalogs, type RemoteThread } from "./RemoteCatalogs.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export const bounds = {
  /** threads per thread/list page */
  pageSize: 100,
  /** pages followed for one listing; with pageSize, at most 5,000 rows */
  maxPages: 50,
  maxRows: 5_000,
  /** a descendant query (ArchiveGuard): 100 per page x 100 pages, beyond that it fails closed */
  descendantPageSize: 100,
  descendantMaxPages: 100
} as const

export type RowStatus = "notLoaded" | "idle" | "active" | "systemError" | "unknown"

export interface CatalogRow {
  readonly threadId: string
  /** "local" for the supervision CODEX_HOME, else the paired node's name */
  readonly node: string
  /** a paired node's row: metadata only, never continued or archived (S17) */
  readonly remote: boolean
  readonly title: string
  readonly status: RowStatus
  readonly activeFlags: ReadonlyArray<string>
  readonly model: string | undefined
  readonly modelProvider: string | undefined
  readonly cwd: string | undefined
  readonly createdAt: number | undefined
  readonly updatedAt: number | undefined
  readonly forkedFromId: string | undefined
  readonly parentThreadId: string | undefined
  /** where the thread came from: "cli", "vscode", "appServer", "subAgent", ... */
  readonly source: string
}

export interface CatalogListing {
  readonly rows: ReadonlyArray<CatalogRow>
  /** the local listing stopped at `bounds.maxPages` / `bounds.maxRows`; the newest rows are the ones kept */
  readonly truncated: boolean
}

export type CatalogError = DiscoveryError | EnumerationFailed

export interface CatalogService {
  /** local non-archived threads (newest first), then each paired node's rows */
  readonly list: Effect.Effect<CatalogListing, CatalogError>
  /** one thread: a fresh local read, else a paired node's row */
  readonly show: (threadId: string) => Effect.Effect<CatalogRow, CatalogError | ThreadNotFound>
  /** a fresh local metadata read, and whether the thread is archived */
  readonly inspect: (threadId: string) => Effect.Effect<Inspected, CatalogError | ThreadNotFound>
  /** the non-archived spawned descendants of a local thread, every page; cycles and limits fail closed (S16) */
  readonly descendants: (threadId: string) => Effect.Effect<ReadonlyArray<CatalogRow>, CatalogError>
}

export interface Inspected {
  readonly row: CatalogRow
  readonly archived: boolean
}

export class Catalog extends Context.Tag("codex-harness/supervision/Catalog")<Catalog, CatalogService>() {}

// every kind, so sub-agents and other sources are listed too (thread/list's default leaves some out)
const allSourceKinds = ThreadSourceKind.literals
// without it Codex lists only the threads of the connection's default provider; the empty list means every provider's
const everyProvider: ReadonlyArray<string> = []

const sourceName = (source: unknown): string => {
  if (typeof source === "string") return source
  if (typeof source === "object" && source !== null) return Object.keys(source)[0] ?? "unknown"
  return "unknown"
}

export const localRow = (thread: Thread): CatalogRow => {
  const status = thread.status
  const name = thread.name ?? undefined
  return {
    threadId: thread.id,
    node: "local",
    remote: false,
    title: name !== undefined && name !== "" ? name : thread.preview,
    status: status?.type ?? "unknown",
    activeFlags: status?.type === "active" ? status.activeFlags : [],
    model: thread.model ?? undefined,
    modelProvider: thread.modelProvider,
    cwd: thread.cwd,
    createdAt: thread.createdAt,
    updatedAt: thread.updatedAt,
    forkedFromId: thread.forkedFromId ?? undefined,
    parentThreadId: thread.parentThreadId ?? undefined,
    source: sourceName(thread.source)
  }
}

export const remoteRow = (node: string, thread: RemoteThread): CatalogRow => ({
  threadId: thread.threadId,
  node,
  remote: true,
  title: thread.title ?? thread.preview ?? "",
  status: thread.status ?? "unknown",
  activeFlags: [],
  model: thread.model,
  modelProvider: thread.modelProvider,
  cwd: thread.cwd,
  createdAt: undefined,
  updatedAt: thread.updatedAt,
  forkedFromId: undefined,
  parentThreadId: undefined,
  source: "remote"
})

export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly nextCursor?: string | null | undefined
}

export interface PageLimits {
  readonly maxPages: number
  readonly maxRows: number
  /** "fail": running out of pages or rows is an error (fail closed); "truncate": keep what fits */
  readonly onLimit: "fail" | "truncate"
}

/**
 * Follows a cursor to the end. A cursor seen before (the server going round in circles) always fails; so does a
 * page fetch error. Pure control flow over `fetch`, so it is tested without any app-server.
 */
export const paginate = <A, E>(
  what: string,
  fetch: (cursor: string | undefined) => Effect.Effect<Page<A>, E>,
  limits: PageLimits
): Effect.Effect<{ readonly items: ReadonlyArray<A>; readonly truncated: boolean }, E | EnumerationFailed> =>
  Effect.gen(function* () {
    const items: Array<A> = []
    const seen = new Set<string>()
    let cursor: string | undefined
    for (let page = 0; ; page++) {
      if (page >= limits.maxPages) {
        if (limits.onLimit === "truncate") return { items, truncated: true }
        return yield* new EnumerationFailed({ what, reason: `more than ${limits.maxPages} pages (safety limit)` })
      }
      const next = yield* fetch(cursor)
      items.push(...next.data)
      if (items.length > limits.maxRows) {
        if (limits.onLimit === "truncate") return { items: items.slice(0, limits.maxRows), truncated: true }
        return yield* new EnumerationFailed({ what, reason: `more than ${limits.maxRows} rows (safety limit)` })
      }
      const nextCursor = next.nextCursor ?? undefined
      if (nextCursor === undefined) return { items, truncated: false }
      if (seen.has(nextCursor)) {
        return yield* new EnumerationFailed({ what, reason: `the server repeated cursor ${JSON.stringify(nextCursor)}` })
      }
      seen.add(nextCursor)
      cursor = nextCursor
    }
  })

/**
 * Checks a descendant set for cycles: a row that is the root itself, a row listed twice, or a parent chain that comes
 * back to where it started. Returns the reason, or undefined when the set is a proper tree under `root`.
 */
export const descendantCycle = (root: string, rows: ReadonlyArray<CatalogRow>): string | undefined => {
  const parents = new Map<string, string | undefined>()
  for (const row of rows) {
    if (row.threadId === root) return `thread ${root} is listed as its own descendant`
    if (parents.has(row.threadId)) return `thread ${row.threadId} is listed twice`
    parents.set(row.threadId, row.parentThreadId)
  }
  for (const start of parents.keys()) {
    const visited = new Set<string>([start])
    let at = parents.get(start)
    while (at !== undefined && at !== root && parents.has(at)) {
      if (visited.has(at)) return `the parent chain of thread ${start} loops through ${at}`
      visited.add(at)
      at = parents.get(at)
    }
  }
  return undefined
}

const isNotFound = (error: unknown): error is RpcError =>
  error instanceof RpcError && /not loaded|not found|no rollout|invalid thread id/i.test(error.rpcMessage)

export const make = Effect.gen(function* () {
  const discovery = yield* Discovery
  const remotes = yield* RemoteCatalogs

  const remoteRows = Effect.forEach(remotes, (remote) =>
    remote.list.pipe(
      Effect.map((threads) => threads.map((t) => remoteRow(remote.node, t))),
      // one unreachable node must not hide the others or the local catalog
      Effect.catchAll((error) => HarnessLog.warning(`paired node ${remote.node}: ${error.message}`).pipe(Effect.as([]))))
  ).pipe(Effect.map((rows) => rows.flat()))

  const list = Effect.gen(function* () {
    const local = yield* paginate(
      "the thread catalog",
      (cursor) =>
        discovery.read("thread/list", {
          archived: false,
          limit: bounds.pageSize,
          modelProviders: everyProvider,
          ...(cursor !== undefined ? { cursor } : {})
        }),
      { maxPages: bounds.maxPages, maxRows: bounds.maxRows, onLimit: "truncate" }
    )
    if (local.truncated) yield* HarnessLog.warning(`the thread catalog was cut at ${local.items.length} threads`)
    const remote = yield* remoteRows
    return { rows: [...local.items.map(localRow), ...remote], truncated: local.truncated }
  }).pipe(Effect.withSpan("Catalog.list"))

  const inspect = (threadId: string) =>
    Effect.gen(function* () {
      const read = yield* discovery.read("thread/read", { threadId }).pipe(
        Effect.catchIf(isNotFound, (e) => Effect.fail(new ThreadNotFound({ threadId, reason: e.rpcMessage })))
      )
      const archivedPage = yield* discovery.read("thread/list", {
        archived: true,
        includedThreadIds: [threadId],
        sourceKinds: allSourceKinds,
        modelProviders: everyProvider
      })
      return { row: localRow(read.thread), archived: archivedPage.data.some((t) => t.id === threadId) }
    }).pipe(Effect.withSpan("Catalog.inspect", { attributes: { threadId } }))

  const show = (threadId: string) =>
    inspect(threadId).pipe(
      Effect.map((i) => i.row),
      Effect.catchTag("ThreadNotFound", (notFound) =>
        Effect.flatMap(remoteRows, (rows) => {
          const row = rows.find((r) => r.threadId === threadId)
          return row !== undefined ? Effect.succeed(row) : Effect.fail(notFound)
        }))
    )

  const descendants = (threadId: string) =>
    Effect.gen(function* () {
      const what = `the descendants of thread ${threadId}`
      const found = yield* paginate(
        what,
        (cursor) =>
          discovery.read("thread/list", {
            ancestorThreadId: threadId,
            archived: false,
            modelProviders: everyProvider,
            limit: bounds.descendantPageSize,
            ...(cursor !== undefined ? { cursor } : {})
          }),
        {
          maxPages: bounds.descendantMaxPages,
          maxRows: bounds.descendantPageSize * bounds.descendantMaxPages,
          onLimit: "fail"
        }
      ).pipe(
        // any other failure of the query is an enumeration error too: the caller fails closed on it
        Effect.mapError((e) => (e instanceof EnumerationFailed ? e : new EnumerationFailed({ what, reason: e.message })))
      )
      const rows = found.items.map(localRow)
      const cycle = descendantCycle(threadId, rows)
      if (cycle !== undefined) return yield* new EnumerationFailed({ what, reason: `cycle: ${cycle}` })
      return rows
    }).pipe(Effect.withSpan("Catalog.descendants", { attributes: { threadId } }))

  return { list, show, inspect, descendants } satisfies CatalogService
})

export const layer: Layer.Layer<Catalog, never, Discovery> = Layer.effect(Catalog, make)
