// Allow-always on the native PermissionRequest hook path (S28), remembered the way the app-server approval path does
// (Approvals.ts): the exact (provider, session, tool input, cwd) fingerprint, for the configured window and number of
// entries. The tool input is the hook payload's own: its tool name and `tool_input`, compared exactly, so a different
// command, argument or cwd asks again. A payload without a cwd has no exact fingerprint: its "always" counts once. The
// hook path keeps its own memory: Codex's PermissionRequest is a separate approval path, and its "always" answers only
// PermissionRequest hooks.
import { Effect } from "effect"
import type { HarnessSettings } from "../config/Settings.js"
import type { ApprovalDecision, ApprovalPromptsService, CommandApproval } from "../ports/ApprovalPrompts.js"
import type { HookPayload } from "../ports/HookPolicy.js"
import * as AllowAlways from "./AllowAlways.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export interface PermissionMemory {
  readonly store: AllowAlways.AllowAlways
  /** the provider part of the fingerprint, as the approval path names it */
  readonly provider: string
}

/** The approval path's provider name and allow-always bounds for these settings. Pure. */
export const providerOf = (settings: HarnessSettings): string => settings.providerUrl ?? "codex"

export const allowAlwaysOptionsOf = (settings: HarnessSettings): AllowAlways.AllowAlwaysOptions => ({
  window: settings.allowAlwaysWindow ?? AllowAlways.defaults.window,
  maxEntries: settings.allowAlwaysMaxEntries ?? AllowAlways.defaults.maxEntries
})

export const make = (settings: HarnessSettings): Effect.Effect<PermissionMemory> =>
  Effect.map(AllowAlways.make(allowAlwaysOptionsOf(settings)), (store) => ({ store, provider: providerOf(settings) }))

/** The fingerprint of a PermissionRequest, or undefined when the payload names no cwd. Pure. */
export const fingerprintOf = (memory: PermissionMemory, sessionId: string, payload: HookPayload): AllowAlways.FingerprintParts | undefined =>
  payload.cwd === undefined
    ? undefined
    : {
      provider: memory.provider,
      sessionId,
      input: { kind: "permissionRequest", toolName: payload.toolName ?? null, toolInput: payload.toolInput ?? null },
      cwd: payload.cwd
    }

/**
 * The decision for a PermissionRequest: an unexpired "always" for the exact fingerprint answers it without asking (the
 * prompts are told, so the person sees what it let through); otherwise `ask`, and an `allowAlways` answer is
 * remembered.
 */
export const decide = (
  memory: PermissionMemory,
  prompts: ApprovalPromptsService,
  request: CommandApproval,
  payload: HookPayload,
  ask: Effect.Effect<ApprovalDecision>
): Effect.Effect<ApprovalDecision> =>
  Effect.gen(function* () {
    const key = fingerprintOf(memory, request.sessionId, payload)
    if (key !== undefined && (yield* memory.store.allows(key))) {
      yield* HarnessLog.debug(`PermissionRequest hook: allowed ${request.command} (allow-always)`)
      if (prompts.remembered !== undefined) yield* prompts.remembered(request)
      return "allowAlways" as const
    }
    const decision = yield* ask
    if (decision === "allowAlways" && key !== undefined) yield* memory.store.remember(key)
    return decision
  })
