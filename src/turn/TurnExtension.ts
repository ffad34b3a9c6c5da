// Extension points of a turn, for the rooms that plug into it (approvals, hook relay, questions, tools, observations):
// tools served on the session's threads, thread-level config, and per-turn installs (server-request routes,
// notification consumers) scoped to the turn. The harness runs them in order; it never needs to know which rooms exist.
import { Context, type Effect, type Scope } from "effect"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { LifecycleEvent } from "../ports/PluginHooks.js"
import type { HarnessTool } from "../ports/DynamicTools.js"

import type { TurnKind } from "./Instructions.js"

/** User and heartbeat turns (S19), and the internal turn kinds (S8). */
export type { TurnKind } from "./Instructions.js"

export interface InstalledTurn {
  readonly sessionId: string
  readonly threadId: string
  readonly kind: TurnKind
  readonly connection: AppServerConnection
  /** hands a lifecycle observation to the PluginHooks observers (bounded, asynchronous; never blocks) */
  readonly observe: (event: LifecycleEvent) => Effect.Effect<void>
}

export interface TurnExtension {
  readonly name: string
  /** tools the harness serves on the session's threads; advertised on thread/start (S11) */
  readonly tools?: ((sessionId: string) => ReadonlyArray<HarnessTool>) | undefined
  /** thread-level `config` entries sent on start and resume (for example per-thread hooks, S20) */
  readonly threadConfig?: ((sessionId: string) => Effect.Effect<Readonly<Record<string, unknown>>>) | undefined
  /** installed for the turn's life, before turn/start: server-request routes, observers */
  readonly install?: ((turn: InstalledTurn) => Effect.Effect<void, never, Scope.Scope>) | undefined
  /** offered a plain-text reply for the session's running turn (an answer to a pending question); true when taken */
  readonly answer?: ((sessionId: string, text: string) => Effect.Effect<boolean>) | undefined
}

/** The extensions the harness runs, in order (later server-request routes win). */
export class TurnExtensions extends Context.Tag("codex-harness/TurnExtensions")<
  TurnExtensions,
  ReadonlyArray<TurnExtension>
>() {}

/**
 * Optional: turn extensions an embedder adds after the harness's own (its own server-request routes, observers or
 * tools). The default adds none.
 */
export class EmbedderExtensions extends Context.Reference<EmbedderExtensions>()("codex-harness/EmbedderExtensions", {
  defaultValue: (): ReadonlyArray<TurnExtension> => []
}) {}
