// The port for catalogs of paired (remote) nodes (S17). An embedder that pairs nodes provides their listings; the
// harness only shows them: a remote row is metadata-only, and Continue and Archive on it are refused. There is no
// remote transport here, on purpose: the node boundary cannot carry a live harness binding.
import { Context, type Effect } from "effect"
import type { EnumerationFailed } from "./errors.js"

/** A thread as a remote node reports it; everything but the id is optional metadata. */
export interface RemoteThread {
  readonly threadId: string
  readonly title?: string | undefined
  readonly preview?: string | undefined
  readonly status?: "notLoaded" | "idle" | "active" | "systemError" | undefined
  readonly model?: string | undefined
  readonly modelProvider?: string | undefined
  readonly cwd?: string | undefined
  readonly updatedAt?: number | undefined
}

export interface RemoteNode {
  /** the node's name, shown in every row it contributes */
  readonly node: string
  readonly list: Effect.Effect<ReadonlyArray<RemoteThread>, EnumerationFailed>
}

/** Optional: the default pairs no nodes. */
export class RemoteCatalogs extends Context.Reference<RemoteCatalogs>()("codex-harness/supervision/RemoteCatalogs", {
  defaultValue: (): ReadonlyArray<RemoteNode> => []
}) {}
