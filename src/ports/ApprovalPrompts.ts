// Port: who decides an approval Codex asks for (a person in a chat channel, a terminal, a fixed policy). The embedding
// gateway may provide it; the harness maps the app-server's request into an ApprovalRequest and the decision back onto
// the wire. A prompt that fails, times out or gives no decision is always a decline (S27): never an allow. Without
// one, every approval is declined (the default).
import { Context, Effect, Schema } from "effect"

export interface FileChange {
  readonly path: string
  /** "add" | "delete" | "update" as the app-server reports it */
  readonly kind: string
  readonly diff: string
}

/** What every approval of a turn's item says about where it comes from. */
export interface TurnApprovalOrigin {
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string
  readonly itemId: string
}

export interface CommandApproval extends TurnApprovalOrigin {
  readonly kind: "command"
  readonly command: string
  readonly cwd: string
  readonly reason?: string | undefined
}

export interface FileChangeApproval extends TurnApprovalOrigin {
  readonly kind: "fileChange"
  /** the changes of the fileChange item this request is about, when it could be correlated (item/started) */
  readonly changes?: ReadonlyArray<FileChange> | undefined
  readonly reason?: string | undefined
  readonly grantRoot?: string | undefined
}

export interface PermissionsApproval extends TurnApprovalOrigin {
  readonly kind: "permissions"
  readonly cwd: string
  readonly reason?: string | undefined
  /** the requested profile as sent (`{network, fileSystem}`) */
  readonly permissions: unknown
  readonly raw: unknown
}

export interface McpToolApproval {
  readonly kind: "mcpTool"
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string | undefined
  readonly serverName: string
  readonly toolName: string
  readonly toolDescription?: string | undefined
  readonly params?: unknown
  readonly message: string
}

/** one thread a diagnostics upload would send, with how it relates to the session */
export interface DiagnosticsThread {
  readonly threadId: string
  /** the session's bound thread, or a sub-agent thread Codex spawned under it */
  readonly role: "bound" | "subAgent"
  readonly parentThreadId?: string | undefined
}

/**
 * S36: a diagnostics upload to OpenAI (Codex's `feedback/upload`), asked before anything is sent. It says what would
 * leave the machine (which threads, counted, whether Codex's logs go with them, the note) but carries no Codex thread
 * id: whatever a prompt shows is shown whether the answer is yes or no, and a denied or ignored upload prints no id.
 * The ids are in the report of an approved upload.
 */
export interface DiagnosticsApproval {
  readonly kind: "diagnostics"
  readonly sessionId: string | undefined
  /** where it goes, in words ("OpenAI, through Codex's feedback upload") */
  readonly destination: string
  /** whether the session's own thread goes (one `feedback/upload`) */
  readonly sessionThread: boolean
  /** how many sub-agent threads Codex spawned under it go, one `feedback/upload` each */
  readonly subAgentThreads: number
  readonly includeLogs: boolean
  readonly note: string | undefined
}

/** Which threads a diagnostics upload sends, in words and without ids ("the session's thread and 2 sub-agent threads"). */
export const diagnosticsThreads = (request: DiagnosticsApproval): string => {
  const subAgents = request.subAgentThreads === 0
    ? undefined
    : `${request.subAgentThreads} sub-agent thread${request.subAgentThreads === 1 ? "" : "s"}`
  if (!request.sessionThread) return subAgents ?? "no thread"
  return subAgents === undefined ? "the session's thread" : `the session's thread and ${subAgents}`
}

/** the requests Codex itself makes during a turn */
export type TurnApprovalRequest = CommandApproval | FileChangeApproval | PermissionsApproval | McpToolApproval

export type ApprovalRequest = TurnApprovalRequest | DiagnosticsApproval

export type ApprovalDecision = "allowOnce" | "allowAlways" | "deny" | "noDecision"

export class ApprovalPromptFailed extends Schema.TaggedError<ApprovalPromptFailed>()("ApprovalPromptFailed", {
  reason: Schema.String
}) {
  override get message() {
    return `the approval prompt failed: ${this.reason}`
  }
}

export interface ApprovalPromptsService {
  readonly ask: (request: ApprovalRequest) => Effect.Effect<ApprovalDecision, ApprovalPromptFailed>
  /**
   * Optional: told when an earlier `allowAlways` answer allowed this request without asking, so the person who gave it
   * sees what it let through (a terminal prints a line).
   */
  readonly remembered?: ((request: ApprovalRequest) => Effect.Effect<void>) | undefined
}

/** Nobody to ask: no decision, which is always a decline. */
export const declineAll: ApprovalPromptsService = { ask: () => Effect.succeed("noDecision") }

/**
 * Optional port: who decides what Codex asks to approve (a command, a file change, more permissions, an MCP tool).
 * Only an explicit allow allows; a failure, a timeout (5 minutes) or "noDecision" declines. The default declines all.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { ApprovalPrompts } from "codex-harness"
 *
 * const Approver = Layer.succeed(ApprovalPrompts.ApprovalPrompts, {
 *   ask: (request) =>
 *     Effect.succeed(request.kind === "command" && request.command.startsWith("git status") ? "allowOnce" : "deny")
 * })
 * ```
 */
export class ApprovalPrompts extends Context.Reference<ApprovalPrompts>()("codex-harness/ApprovalPrompts", {
  defaultValue: (): ApprovalPromptsService => declineAll
}) {}

/** One line naming what is asked about, for logs and terminals. */
export const describe = (request: ApprovalRequest): string => {
  switch (request.kind) {
    case "command":
      return `command ${JSON.stringify(request.command)}`
    case "fileChange":
      return request.changes === undefined || request.changes.length === 0
        ? `file change ${request.itemId}`
        : `file change ${request.changes.map((c) => `${c.kind} ${c.path}`).join(", ")}`
    case "permissions":
      return `permissions ${JSON.stringify(request.permissions)}`
    case "mcpTool":
      return `MCP tool ${request.serverName}/${request.toolName}`
    case "diagnostics":
      return `diagnostics upload of ${diagnosticsThreads(request)}${request.includeLogs ? " with Codex's logs" : ""}`
  }
}

/** What a person reads before deciding (a terminal prompt, a Control UI card): several lines. Pure. */
export const details = (request: ApprovalRequest): string => {
  const lines: Array<string> = []
  switch (request.kind) {
    case "command":
      lines.push(`Codex wants to run: ${request.command}`, `  in ${request.cwd}`)
      break
    case "fileChange":
      lines.push("Codex wants to change files:")
      for (const change of request.changes ?? []) {
        lines.push(`  ${change.kind} ${change.path}`)
        for (const line of change.diff.split("\n").slice(0, 40)) lines.push(`    ${line}`)
      }
      if (request.changes === undefined) lines.push(`  (item ${request.itemId}; changes not available)`)
      break
    case "permissions":
      lines.push(`Codex asks for extra permissions in ${request.cwd}:`, `  ${JSON.stringify(request.permissions)}`)
      break
    case "mcpTool":
      lines.push(request.message)
      if (request.toolDescription !== undefined) lines.push(`  ${request.toolDescription}`)
      if (request.params !== undefined) lines.push(`  params: ${JSON.stringify(request.params)}`)
      break
    case "diagnostics":
      lines.push(`Send diagnostics to ${request.destination}?`)
      lines.push(`  session: ${request.sessionId ?? "(none)"}`)
      lines.push(
        request.sessionThread || request.subAgentThreads > 0
          ? `  threads: ${diagnosticsThreads(request)} (their ids are printed once they are sent)`
          : "  threads: none (Codex's logs only)"
      )
      lines.push(`  Codex's logs: ${request.includeLogs ? "included" : "not included"}`)
      lines.push(`  note: ${request.note === undefined ? "(none)" : JSON.stringify(request.note)}`)
      break
  }
  if ("reason" in request && request.reason !== undefined) lines.push(`  reason: ${request.reason}`)
  return lines.join("\n")
}
