// What an embedder tells the harness about one turn beyond its prompt: the turn's kind, its route, the gateway's own
// system prompt (compatibility route), skills, memory, adapter context, profile files, delegation tools and whether the
// turn has a native filesystem (S6-S10). It comes per turn (`TurnRequest.context`) or per session through the
// `TurnContexts` port; the request's fields win over the port's. Everything here is bounded where the instructions are
// built (Instructions.ts), so an embedder can pass what it has without measuring it.
import { Context, Effect } from "effect"
import type { Route } from "../config/Settings.js"
import type { Skill, TurnKind, WorkspaceFile } from "./Instructions.js"

/**
 * How the turn reaches long-term memory (S9). `tools`: the embedder serves memory tools (named in `tools`), so the
 * instructions point at them and MEMORY.md is not preloaded. `inline`: no memory tools; BOOTSTRAP.md and the full
 * MEMORY.md go as plain turn input. `off`: neither.
 */
export type MemoryMode =
  | { readonly mode: "tools"; readonly tools?: ReadonlyArray<string> | undefined }
  | { readonly mode: "inline" }
  | { readonly mode: "off" }

export interface TurnContext {
  /** user (default), heartbeat, or one of the internal kinds that suppress project docs (S8) */
  readonly kind?: TurnKind | undefined
  /** native (default): harness developer instructions; compatibility: the gateway's own system prompt only (S6) */
  readonly route?: Route | undefined
  /** compatibility route: the gateway's system prompt, sent as the thread's base instructions (S6) */
  readonly systemPrompt?: string | undefined
  /** no native filesystem environment for this turn: the AGENTS.md snapshot goes with the instructions (S8) */
  readonly policyRestricted?: boolean | undefined
  /** the channel replies go to, named in the delivery instructions */
  readonly channel?: string | undefined
  /** a skill catalog for this turn (S9), listed as turn-scoped collaboration instructions */
  readonly skills?: ReadonlyArray<Skill> | undefined
  /** default: `tools` when a dynamic tool named memory_search or memory_get is served, else `inline` */
  readonly memory?: MemoryMode | undefined
  /** what the gateway's adapter knows about the conversation (platform, people, thread), in its own words (S9) */
  readonly adapterContext?: string | undefined
  /** profile files to use instead of the workspace's SOUL.md, IDENTITY.md, USER.md and TOOLS.md (S9) */
  readonly profileFiles?: ReadonlyArray<WorkspaceFile> | undefined
  /**
   * Delegation tools the embedder serves (sessions_spawn, sessions_send, ...). Default: every served dynamic tool whose
   * name starts with `sessions_`. The sessions_yield guidance is given when `sessions_yield` is among them (S10).
   */
  readonly delegationTools?: ReadonlyArray<string> | undefined
}

/** The request's fields over the port's; an absent field keeps the other's. */
export const mergeTurnContext = (base: TurnContext, over: TurnContext | undefined): TurnContext => {
  if (over === undefined) return base
  const merged: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(over)) if (value !== undefined) merged[key] = value
  return merged as TurnContext
}

export interface TurnContextsService {
  /** the session's context for a turn of this kind; asked once per turn, before the thread is opened */
  readonly forTurn: (sessionId: string, kind: TurnKind) => Effect.Effect<TurnContext>
}

/**
 * Optional port: what a session's turns know beyond their prompt (channel, adapter context, skills, memory), asked
 * once per turn; a request's own `context` wins field by field. The default gives none.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { TurnContext } from "codex-harness"
 *
 * const Contexts = Layer.succeed(TurnContext.TurnContexts, {
 *   forTurn: () => Effect.succeed({ channel: "Telegram group #ops", adapterContext: "Replies are threaded." })
 * })
 * ```
 */
export class TurnContexts extends Context.Reference<TurnContexts>()("codex-harness/TurnContexts", {
  defaultValue: (): TurnContextsService => ({ forTurn: () => Effect.succeed({}) })
}) {}
