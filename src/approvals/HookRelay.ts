// The native hook relay (S20, S22, S27): per-thread Codex hooks for PreToolUse, PostToolUse, PermissionRequest (only
// when the approval policy is "never" or the configured events name it) and Stop, each a `codex-harness hook-relay`
// command that forwards Codex's hook payload to this process over the relay socket and prints the decision.
//
// Trust: Codex runs only trusted hooks. The trusted hash of a hook is Codex's `currentHash`: "sha256:" + the SHA-256
// of the compact JSON of the hook's normalized identity with sorted keys,
// `{"event_name":"pre_tool_use","hooks":[{"async":false,"command":…,"statusMessage":…,"timeout":…,"type":"command"}],"matcher":"*"}`
// (verified against `hooks/list` of codex 0.171.0; the integration tests fail if a later binary changes it, because the
// hooks then stop running). Computing it here needs no probe thread and works the same on thread/start and resume.
//
// Decisions: PreToolUse asks the HookPolicy (default: no decision); a requirement for approval in report mode
// (`openclaw_approval_mode: "report"`, which Codex never sets itself: the relay command marks the payload when
// `preToolUseApprovalMode: "report"` asks for it) is recorded in HookReports for the later app-server approval and gets
// no native decision (S22). PermissionRequest answers only an explicit allow or deny from ApprovalPrompts; anything else is no
// decision, which Codex treats as "ask the usual way", never as an allow (S27); an "always" there is remembered for
// the exact fingerprint, as on the approval path (S28, PermissionMemory). Stop never blocks when
// `stop_hook_active` is set, so a Stop hook can continue a turn at most once in a row.
import type { FileSystem } from "@effect/platform"
import { Clock, Context, type Duration, Effect, type Scope } from "effect"
import type { NativeHookEvent } from "../../schemas/config.js"
import { defaultNativeHookEvents } from "../config/HarnessConfig.js"
import { Settings } from "../config/Settings.js"
import { type PostToolUseReporting, reporterOf } from "../turn/ToolUseLedger.js"
import type { TurnExtension } from "../turn/TurnExtension.js"
import {
  type ApprovalDecision,
  ApprovalPrompts,
  type ApprovalPromptsService,
  type CommandApproval
} from "../ports/ApprovalPrompts.js"
import {
  type HookContext,
  type HookPayload,
  HookPolicy,
  type HookPolicyService,
  type StopVerdict
} from "../ports/HookPolicy.js"
import { HookReports, type HookReportsService } from "./HookReports.js"
import {
  defaultRelayCommand,
  defaultTimeouts,
  eventNames,
  noDecisionCommand,
  relayCommandLine,
  relayed,
  threadHookConfig
} from "./HookThreadConfig.js"
import * as PermissionMemory from "./PermissionMemory.js"
import {
  type HookCall,
  type HookOutput,
  type HookRelayServerError,
  make as makeServer,
  noDecision
} from "./HookRelayServer.js"

export type { HookEventName, HookOutput } from "./HookRelayServer.js"
export * from "./HookThreadConfig.js"
export {
  HookReports,
  type HookReportsService,
  makeReports,
  type ReportedRequirement,
  type ReportLookup,
  reportsLayer
} from "./HookReports.js"
export {
  allowAll,
  type HookContext,
  type HookPayload,
  HookPolicy,
  type HookPolicyService,
  type PreToolUseVerdict,
  type StopVerdict
} from "../ports/HookPolicy.js"
import * as HarnessLog from "../platform/HarnessLog.js"

// ---------------------------------------------------------------------------------------------------------------------
// payloads

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

/** Pure. Unknown or missing fields are undefined; `stop_hook_active` is true only when it is literally true. */
export const readPayload = (raw: unknown): HookPayload => {
  const p = isRecord(raw) ? raw : {}
  const toolInput = p.tool_input
  return {
    threadId: str(p.session_id),
    turnId: str(p.turn_id),
    cwd: str(p.cwd),
    toolName: str(p.tool_name),
    toolInput,
    toolUseId: str(p.tool_use_id),
    command: isRecord(toolInput) ? str(toolInput.command) : undefined,
    approvalMode: str(p.openclaw_approval_mode),
    stopHookActive: p.stop_hook_active === true,
    lastAssistantMessage: str(p.last_assistant_message),
    raw
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// pure output mapping (Codex's hook output format)

/** PreToolUse: a deny is exit 2 with the reason on stderr (the model gets "Command blocked by PreToolUse hook: <reason>");
 * an allow and no decision leave the call to Codex's own flow (approvals included). Pure. */
export const preToolUseOutput = (verdict: "allow" | "noDecision" | { readonly deny: string }): HookOutput =>
  typeof verdict === "object" ? { exitCode: 2, stderr: verdict.deny } : noDecision

/** PermissionRequest (S27): only an explicit allow or deny is a decision; no decision falls through to Codex. Pure. */
export const permissionRequestOutput = (decision: ApprovalDecision, denyMessage = "denied by the harness approval policy"): HookOutput => {
  switch (decision) {
    case "allowOnce":
    case "allowAlways":
      return {
        exitCode: 0,
        stdout: JSON.stringify({ hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } } })
      }
    case "deny":
      return {
        exitCode: 0,
        stdout: JSON.stringify({
          hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "deny", message: denyMessage } }
        })
      }
    case "noDecision":
      return noDecision
  }
}

/** Stop: a continue is `{"decision":"block","reason"}`, never while `stop_hook_active` is set (no endless loop). Pure. */
export const stopOutput = (verdict: StopVerdict, stopHookActive: boolean): HookOutput =>
  verdict._tag === "Continue" && !stopHookActive
    ? { exitCode: 0, stdout: JSON.stringify({ decision: "block", reason: verdict.reason }) }
    : noDecision

// ---------------------------------------------------------------------------------------------------------------------
// the relay's handler and extension

export interface HookRelayOptions {
  /** the relayed events; default `defaultNativeHookEvents(settings.approvalPolicy)` (S20) */
  readonly events?: ReadonlyArray<NativeHookEvent> | undefined
  /** argv the hook command starts with; default `node <repo>/bin/codex-harness.js hook-relay` */
  readonly relayCommand?: ReadonlyArray<string> | undefined
  readonly timeouts?: Partial<Record<NativeHookEvent, number>> | undefined
  /** the socket directory's parent; default os.tmpdir() */
  readonly socketParentDir?: string | undefined
  /** how long a PermissionRequest or PreToolUse prompt may take (then: no decision / deny); default 5 minutes */
  readonly promptTimeout?: Duration.DurationInput | undefined
  /**
   * S22: `report` marks every relayed PreToolUse payload `openclaw_approval_mode: "report"` (Codex never does), so a
   * HookPolicy that requires approval is recorded and shown with the app-server's approval for that tool use: one
   * prompt, carrying the policy's reason. It applies only with app-server approvals on (a policy other than `never`),
   * and it has a cost: a tool use Codex runs without asking (a known-safe command; a sandboxed one under `on-request`)
   * shows the requirement to nobody. Default: the relay asks the ApprovalPrompts port itself, in the hook, and the
   * app-server's approval that may follow asks again.
   */
  readonly preToolUseApprovalMode?: "report" | undefined
}

/**
 * Optional port: how the native hook relay runs (its command, socket directory, timeouts); the default suits an
 * installed package and puts the socket under the temp dir.
 *
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { HookRelayConfig } from "codex-harness"
 *
 * // a short private directory for the relay's socket, when TMPDIR is long or shared
 * const Relay = Layer.succeed(HookRelayConfig.HookRelayConfig, { socketParentDir: "/run/my-bot" })
 * ```
 */
export class HookRelayConfig extends Context.Reference<HookRelayConfig>()("codex-harness/HookRelayConfig", {
  defaultValue: (): HookRelayOptions => ({})
}) {}

export interface RelayServices {
  readonly policy: HookPolicyService
  readonly prompts: ApprovalPromptsService
  readonly reports: HookReportsService
  readonly promptTimeout: Duration.DurationInput
  /** what "always" answered on the PermissionRequest path (S28) */
  readonly permissions: PermissionMemory.PermissionMemory
  /** reports a relayed PostToolUse as after_tool_call (S23); never waits for the observers */
  readonly reportPostToolUse?: ((sessionId: string, payload: HookPayload) => Effect.Effect<void>) | undefined
}

const commandApproval = (call: HookCall, p: HookPayload, reason: string): CommandApproval => ({
  kind: "command",
  sessionId: call.sessionId,
  threadId: p.threadId ?? "",
  turnId: p.turnId ?? "",
  itemId: p.toolUseId ?? "",
  command: p.command ?? JSON.stringify(p.toolInput ?? null),
  cwd: p.cwd ?? "",
  reason
})

/** Asks the prompts; a failure or a timeout is "noDecision" (never an allow). */
const ask = (services: RelayServices, request: CommandApproval) =>
  services.prompts.ask(request).pipe(
    Effect.timeoutFail({ duration: services.promptTimeout, onTimeout: () => "timeout" as const }),
    Effect.catchAll(() => Effect.succeed<ApprovalDecision>("noDecision"))
  )

/** One relayed hook call → the hook's output. A policy that dies counts as no decision (PreToolUse: a deny). */
export const handle = (services: RelayServices) => (call: HookCall): Effect.Effect<HookOutput> => {
  const payload = readPayload(call.payload)
  const context: HookContext = { sessionId: call.sessionId, payload }
  switch (call.event) {
    case "PreToolUse": {
      const policy = services.policy.preToolUse
      if (policy === undefined) return Effect.succeed(noDecision)
      return policy(context).pipe(
        Effect.flatMap((verdict): Effect.Effect<HookOutput> => {
          switch (verdict._tag) {
            case "NoDecision":
              return Effect.succeed(preToolUseOutput("noDecision"))
            case "Allow":
              return Effect.succeed(preToolUseOutput("allow"))
            case "Deny":
              return Effect.succeed(preToolUseOutput({ deny: verdict.reason }))
            case "RequireApproval":
              if (payload.approvalMode === "report") {
                return Clock.currentTimeMillis.pipe(
                  Effect.flatMap((now) =>
                    services.reports.record({
                      sessionId: call.sessionId,
                      threadId: payload.threadId,
                      turnId: payload.turnId,
                      toolUseId: payload.toolUseId,
                      command: payload.command,
                      toolName: payload.toolName,
                      toolInput: payload.toolInput,
                      reason: verdict.reason,
                      recordedAt: now
                    })
                  ),
                  Effect.as(noDecision)
                )
              }
              return ask(services, commandApproval(call, payload, verdict.reason ?? "a plugin requires approval")).pipe(
                Effect.map((decision) =>
                  decision === "allowOnce" || decision === "allowAlways"
                    ? preToolUseOutput("allow")
                    : preToolUseOutput({ deny: verdict.reason ?? "not approved" })
                )
              )
          }
        }),
        Effect.catchAllDefect(() => Effect.succeed(preToolUseOutput({ deny: "the hook policy failed" })))
      )
    }
    case "PermissionRequest": {
      const request = commandApproval(call, payload, "PermissionRequest hook")
      return PermissionMemory.decide(services.permissions, services.prompts, request, payload, ask(services, request)).pipe(
        Effect.map((d) => permissionRequestOutput(d))
      )
    }
    case "PostToolUse": {
      const observe = services.policy.postToolUse
      const reported = services.reportPostToolUse?.(call.sessionId, payload) ?? Effect.void
      return observe === undefined
        ? Effect.as(reported, noDecision)
        : reported.pipe(Effect.zipRight(observe(context).pipe(Effect.catchAllDefect(() => Effect.void))), Effect.as(noDecision))
    }
    case "Stop": {
      const stop = services.policy.stop
      if (stop === undefined || payload.stopHookActive) return Effect.succeed(noDecision)
      return stop(context).pipe(
        Effect.map((verdict) => stopOutput(verdict, payload.stopHookActive)),
        Effect.catchAllDefect(() => Effect.succeed(noDecision))
      )
    }
  }
}

const statusMessages: Readonly<Record<NativeHookEvent, string>> = {
  pre_tool_use: "codex-harness: checking the tool call",
  post_tool_use: "codex-harness: recording the tool result",
  permission_request: "codex-harness: asking for permission",
  stop: "codex-harness: checking the end of the turn"
}

/**
 * The "hook-relay" turn extension: starts the relay socket for the scope's life and injects the per-thread hooks.
 * It asks the HookPolicy and ApprovalPrompts ports (both optional) and records report-mode requirements in HookReports.
 * With `reporting`, each relayed PostToolUse is also an after_tool_call observation, recorded in the ledger (S23).
 */
export const makeExtension = (
  options: HookRelayOptions = {},
  reporting?: PostToolUseReporting
): Effect.Effect<TurnExtension, HookRelayServerError, Settings | HookReports | Scope.Scope | FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const policy = yield* HookPolicy
    const prompts = yield* ApprovalPrompts
    const reports = yield* HookReports
    const events = options.events ?? defaultNativeHookEvents(settings.approvalPolicy)
    const reportsPostToolUse = reporting !== undefined && events.includes("post_tool_use") && relayed("post_tool_use", policy)
    if (reportsPostToolUse) reporting.ledger.setRelayReports()
    const services: RelayServices = {
      policy,
      prompts,
      reports,
      promptTimeout: options.promptTimeout ?? "5 minutes",
      permissions: yield* PermissionMemory.make(settings),
      reportPostToolUse: reportsPostToolUse ? reporterOf(reporting) : undefined
    }
    const server = yield* makeServer({ parentDir: options.socketParentDir, handle: handle(services) })
    const prefix = options.relayCommand ?? (yield* defaultRelayCommand)
    // report mode needs an app-server approval to show the requirement with: under "never" Codex sends none
    const reportMode = options.preToolUseApprovalMode === "report" && settings.approvalPolicy !== "never"
    if (options.preToolUseApprovalMode === "report" && !reportMode) {
      yield* HarnessLog.warning(`hook relay: report mode ignored: approval policy "never" sends no approval to report to`)
    }
    const approvalModeOf = (event: NativeHookEvent) => (reportMode && event === "pre_tool_use" ? "report" as const : undefined)
    const threadConfig = (sessionId: string) =>
      server.tokenFileFor(sessionId).pipe(
        Effect.map((tokenFile) =>
          threadHookConfig(events, (event) => {
            const timeout = options.timeouts?.[event] ?? defaultTimeouts[event]
            return {
              command: relayed(event, policy)
                ? relayCommandLine(prefix, server.socketPath, tokenFile, eventNames[event], timeout, approvalModeOf(event))
                : noDecisionCommand,
              timeout,
              statusMessage: statusMessages[event]
            }
          })
        ),
        // the token file is in our own private directory; failing to write it there is not a state to run hooks in
        Effect.orDie
      )
    return { name: "hook-relay", threadConfig } satisfies TurnExtension
  })
