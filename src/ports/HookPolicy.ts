// Port (optional): the embedder's decisions for the native hooks Codex runs (S20, S22, S27). Every member is optional:
// a missing one is "no decision", which leaves the call to Codex's own flow (its approvals included), never an allow.
// Without it (the default) the harness decides nothing, and the Stop hook costs no process at all.
import { Context, type Effect } from "effect"

/** The fields of a hook payload the relay reads (Codex sends more; `raw` keeps all of it). */
export interface HookPayload {
  /** Codex's session id (the thread id) */
  readonly threadId: string | undefined
  readonly turnId: string | undefined
  readonly cwd: string | undefined
  readonly toolName: string | undefined
  readonly toolInput: unknown
  readonly toolUseId: string | undefined
  /** `tool_input.command` when it is a string */
  readonly command: string | undefined
  readonly approvalMode: string | undefined
  readonly stopHookActive: boolean
  readonly lastAssistantMessage: string | undefined
  readonly raw: unknown
}

export type PreToolUseVerdict =
  | { readonly _tag: "NoDecision" }
  | { readonly _tag: "Allow" }
  | { readonly _tag: "Deny"; readonly reason: string }
  | { readonly _tag: "RequireApproval"; readonly reason?: string | undefined }

export type StopVerdict = { readonly _tag: "Stop" } | { readonly _tag: "Continue"; readonly reason: string }

export interface HookContext {
  /** the harness session the hook's thread belongs to */
  readonly sessionId: string
  readonly payload: HookPayload
}

export interface HookPolicyService {
  readonly preToolUse?: ((context: HookContext) => Effect.Effect<PreToolUseVerdict>) | undefined
  /** an observation only: PostToolUse cannot undo the call */
  readonly postToolUse?: ((context: HookContext) => Effect.Effect<void>) | undefined
  /** consulted only when `stop_hook_active` is not set */
  readonly stop?: ((context: HookContext) => Effect.Effect<StopVerdict>) | undefined
}

/** The default policy: no decision for anything. */
export const allowAll: HookPolicyService = {}

/**
 * Optional port: decisions for Codex's native hooks, relayed per thread (PreToolUse: allow, deny or require an
 * approval; PostToolUse: observe; Stop: let the turn end or continue it). The default decides nothing.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { HookPolicy } from "codex-harness"
 *
 * const Policy = Layer.succeed(HookPolicy.HookPolicy, {
 *   preToolUse: ({ payload }) =>
 *     Effect.succeed(payload.command?.includes("rm -rf") ? { _tag: "Deny", reason: "no recursive deletes" } : { _tag: "NoDecision" })
 * })
 * ```
 */
export class HookPolicy extends Context.Reference<HookPolicy>()("codex-harness/HookPolicy", {
  defaultValue: (): HookPolicyService => allowAll
}) {}
