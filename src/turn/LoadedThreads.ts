// Which threads are loaded on which app-server connection, and with what. A `thread/resume` costs a round trip and
// Codex's own work on every turn, yet a thread this connection started or resumed stays loaded while we stay
// subscribed (we never unsubscribe a session's thread; Codex unloads only unsubscribed threads, after a delay). So the
// first turn on a connection opens the thread, and later turns go straight to `turn/start`, which carries the settings
// S12 resends (model, approval policy, sandbox, approvals reviewer, service tier). A thread is opened again when what
// the open sends changes (the developer instructions, the thread config, a model switch), when the connection is a new
// one, or when `turn/start` says the thread is not loaded any more. A resume of a loaded thread does not change its
// config, so when the config changes the thread is unloaded first (TurnRunner.openThread).
import { Context, Layer } from "effect"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { OpenedThread } from "./TurnEvent.js"

export interface LoadedThread {
  /** what the open sent, as compared text: the same text means nothing needs sending again */
  readonly sentWith: string
  /** the thread config it was opened with, as text: Codex applies another only when the thread is loaded anew */
  readonly config?: string | undefined
  readonly opened: OpenedThread
}

export interface LoadedThreadsService {
  readonly get: (connection: AppServerConnection, threadId: string) => LoadedThread | undefined
  readonly remember: (connection: AppServerConnection, threadId: string, loaded: LoadedThread) => void
  readonly forget: (connection: AppServerConnection, threadId: string) => void
}

export class LoadedThreads extends Context.Tag("codex-harness/LoadedThreads")<LoadedThreads, LoadedThreadsService>() {}

/** threads remembered per connection; the oldest is forgotten past it (it is then resumed once more, no harm done) */
export const maxThreadsPerConnection = 1024

export const make = (): LoadedThreadsService => {
  // weakly held: a retired connection's entries go with it
  const byConnection = new WeakMap<AppServerConnection, Map<string, LoadedThread>>()
  return {
    get: (connection, threadId) => byConnection.get(connection)?.get(threadId),
    remember: (connection, threadId, loaded) => {
      let threads = byConnection.get(connection)
      if (threads === undefined) byConnection.set(connection, (threads = new Map()))
      threads.delete(threadId)
      threads.set(threadId, loaded)
      if (threads.size > maxThreadsPerConnection) threads.delete(threads.keys().next().value!)
    },
    forget: (connection, threadId) => void byConnection.get(connection)?.delete(threadId)
  }
}

export const layer: Layer.Layer<LoadedThreads> = Layer.sync(LoadedThreads, make)

/** Nothing remembered: every turn opens its thread (for callers that run turns outside the harness). */
export const none: LoadedThreadsService = { get: () => undefined, remember: () => {}, forget: () => {} }

