// Paired-node catalogs (S17): for each paired node that names its own `codex app-server --listen` URL, a RemoteNode
// whose listing is that app-server's `thread/list`, read over a WebSocket of its own for the one call and closed
// after. Rows are metadata only (id, name, status, model, provider, cwd, update time; never a preview or any turn
// content), and the Catalog refuses Continue and Archive on them even when idle: a node's app-server is not a
// connection a harness binding can live on.
import { Effect, Option, type Redacted, Schema } from "effect"
import { ThreadSourceKind } from "../../schemas/protocol.js"
import * as Connection from "../appserver/AppServerConnection.js"
import * as WebSocketTransport from "../appserver/WebSocketTransport.js"
import { EnumerationFailed } from "../supervision/errors.js"
import type { RemoteNode, RemoteThread } from "../supervision/RemoteCatalogs.js"
import type { PairedNode } from "./NodePairing.js"

export const bounds = { pageSize: 100, maxPages: 20 } as const

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const str = (u: unknown): string | undefined => (typeof u === "string" && u !== "" ? u : undefined)
const isStatus = Schema.is(Schema.Literal("notLoaded", "idle", "active", "systemError"))

/** A `thread/list` row as metadata: nothing a user or the model wrote, beyond the thread's own name. */
export const metadataOf = (row: unknown): RemoteThread | undefined => {
  if (!isRecord(row) || typeof row.id !== "string") return undefined
  const type = isRecord(row.status) ? row.status.type : undefined
  const status = isStatus(type) ? type : undefined
  return {
    threadId: row.id,
    title: str(row.name),
    status,
    model: str(row.model),
    modelProvider: str(row.modelProvider),
    cwd: str(row.cwd),
    updatedAt: typeof row.updatedAt === "number" ? row.updatedAt : undefined
  }
}

const listOnce = (node: PairedNode & { readonly appServerUrl: string }, token: Option.Option<Redacted.Redacted<string>>) =>
  Effect.scoped(
    Effect.gen(function* () {
      // the node's own token (from its 0600 file), never the process environment
      const handle = yield* WebSocketTransport.connect({
        url: node.appServerUrl,
        ...(Option.isSome(token) ? { token: token.value } : {})
      })
      const connection = yield* Connection.make(handle, { clientName: "codex-harness-catalog" })
      const rows: Array<RemoteThread> = []
      let cursor: string | undefined
      for (let page = 0; page < bounds.maxPages; page++) {
        const result = yield* connection.request("thread/list", {
          archived: false,
          limit: bounds.pageSize,
          modelProviders: [],
          // every kind (the default leaves some out, e.g. threads an app-server client started)
          sourceKinds: ThreadSourceKind.literals,
          ...(cursor !== undefined ? { cursor } : {})
        })
        for (const row of result.data) {
          const meta = metadataOf(row)
          if (meta !== undefined) rows.push(meta)
        }
        cursor = str(result.nextCursor)
        if (cursor === undefined) break
      }
      return rows
    })
  ).pipe(
    Effect.mapError((e) => new EnumerationFailed({ what: `node ${node.name}'s catalog`, reason: e.message }))
  )

/** The RemoteCatalogs value for these nodes: one entry per node with an app-server URL. */
export const fromNodes = (
  nodes: ReadonlyArray<PairedNode>,
  tokenOf: (name: string) => Effect.Effect<Option.Option<Redacted.Redacted<string>>>
): ReadonlyArray<RemoteNode> =>
  nodes.flatMap((node) =>
    node.appServerUrl === undefined ? [] : [{
      node: node.name,
      list: Effect.flatMap(tokenOf(node.name), (token) => listOnce({ ...node, appServerUrl: node.appServerUrl! }, token))
    }]
  )
