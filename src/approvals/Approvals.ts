// Approvals for a turn (S27-S29): command, file-change and permission approvals, and MCP tool-call approvals (the
// elicitations Codex marks `_meta.codex_approval_kind: "mcp_tool_call"`), routed for the turn's thread only, asked of
// the ApprovalPrompts port and mapped back onto the wire. Only an explicit allow is an allow: a deny, no decision, a
// prompt that fails or times out, and a request that cannot be decoded all answer an explicit decline. Other
// elicitations are never matched here (they belong to the question flow).
import { Duration, Effect, Layer, Option } from "effect"
import type {
  CommandApprovalParams,
  CommandApprovalResponse,
  ElicitationRequestParams,
  ElicitationResponse,
  FileChangeApprovalParams,
  FileChangeApprovalResponse,
  ItemOf,
  PermissionsApprovalParams,
  PermissionsApprovalResponse
} from "../../schemas/protocol.js"
import { Settings } from "../config/Settings.js"
import {
  type ApprovalDecision,
  ApprovalPrompts,
  type TurnApprovalRequest,
  describe,
  type FileChange
} from "../ports/ApprovalPrompts.js"
import { type InstalledTurn, type TurnExtension, TurnExtensions } from "../turn/TurnExtension.js"
import * as AllowAlways from "./AllowAlways.js"
import { HookReports } from "./HookRelay.js"
import * as PermissionMemory from "./PermissionMemory.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export interface ApprovalsOptions {
  /** how long a prompt may take before it counts as no decision (a decline); default 5 minutes */
  readonly promptTimeout?: Duration.DurationInput | undefined
  readonly allowAlways?: AllowAlways.AllowAlwaysOptions | undefined
}

export const defaults = { promptTimeout: Duration.minutes(5) } as const

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** S29: an MCP tool-call approval, told apart from other elicitations before anything else reads the request. Pure. */
export const isMcpToolApproval = (params: ElicitationRequestParams): boolean =>
  isRecord(params._meta) && params._meta.codex_approval_kind === "mcp_tool_call"

const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)
const orUndefined = (s: string | null | undefined) => s ?? undefined

/** What an MCP tool-call approval names, or undefined when it cannot be read (then: an explicit decline). Pure. */
const mcpToolOf = (params: ElicitationRequestParams) => {
  const meta = isRecord(params._meta) ? params._meta : {}
  const toolName = str(meta.tool_name)
  // the schema leaves `message` out (a userVerification elicitation has none); decoding keeps it when it is there
  const message = "message" in params ? str(params.message) : undefined
  if (toolName === undefined || message === undefined) return undefined
  return { toolName, toolDescription: str(meta.tool_description), toolParams: meta.tool_params, message }
}

/** The wire answers. Pure. */
export const responses = {
  command: (allowed: boolean): typeof CommandApprovalResponse.Type => ({ decision: allowed ? "accept" : "decline" }),
  fileChange: (allowed: boolean): typeof FileChangeApprovalResponse.Type => ({ decision: allowed ? "accept" : "decline" }),
  /** a permissions grant has no decision field: allowing grants what was asked, declining grants nothing */
  permissions: (
    allowed: boolean,
    requested: { readonly network?: unknown; readonly fileSystem?: unknown }
  ): typeof PermissionsApprovalResponse.Type => ({
    permissions: allowed
      ? {
          ...(requested.network != null ? { network: requested.network } : {}),
          ...(requested.fileSystem != null ? { fileSystem: requested.fileSystem } : {})
        }
      : {},
    scope: "turn"
  }),
  mcpTool: (allowed: boolean): typeof ElicitationResponse.Type =>
    allowed ? { action: "accept", content: {}, _meta: null } : { action: "decline", content: null, _meta: null }
}

const isAllow = (decision: ApprovalDecision) => decision === "allowOnce" || decision === "allowAlways"

/** fileChange items seen on a thread, so a file-change approval can show its changes; bounded */
const MAX_TRACKED_CHANGES = 64

const fileChangesOf = (item: ItemOf<"fileChange">): ReadonlyArray<FileChange> =>
  item.changes.map((change) => ({
    path: change.path,
    kind: isRecord(change.kind) && typeof change.kind.type === "string" ? change.kind.type : String(change.kind ?? "update"),
    diff: change.diff
  }))

export const makeExtension = (
  options: ApprovalsOptions = {}
): Effect.Effect<TurnExtension, never, Settings | HookReports> =>
  Effect.gen(function* () {
    const prompts = yield* ApprovalPrompts
    const settings = yield* Settings
    const clock = yield* Effect.clock
    const store = yield* AllowAlways.make(options.allowAlways)
    // S22: requirements a PreToolUse hook recorded in report mode, shown with the app-server's later approval
    const reports = yield* HookReports
    const promptTimeout = options.promptTimeout ?? defaults.promptTimeout
    const provider = PermissionMemory.providerOf(settings)

    /** true only for an explicit allow (or a remembered allow-always for the exact fingerprint) */
    const decide = (request: TurnApprovalRequest, input: unknown | undefined, cwd: string) =>
      Effect.gen(function* () {
        const key: AllowAlways.FingerprintParts | undefined =
          input === undefined ? undefined : { provider, sessionId: request.sessionId, input, cwd }
        if (key !== undefined && (yield* store.allows(key))) {
          yield* HarnessLog.debug(`approval: allowed ${describe(request)} (allow-always)`)
          // the port is told, so the person whose "always" this was can see what it let through
          if (prompts.remembered !== undefined) yield* prompts.remembered(request)
          return true
        }
        const decision = yield* prompts.ask(request).pipe(
          Effect.timeoutTo({ duration: promptTimeout, onSuccess: (d): ApprovalDecision => d, onTimeout: (): ApprovalDecision => "noDecision" }),
          Effect.catchAllCause((cause) =>
            Effect.as(HarnessLog.warning("approval prompt failed; declining", cause), "noDecision" as ApprovalDecision)
          )
        )
        if (decision === "allowAlways" && key !== undefined) yield* store.remember(key)
        yield* HarnessLog.debug(`approval: ${isAllow(decision) ? "allowed" : "declined"} ${describe(request)} (${decision})`)
        return isAllow(decision)
      }).pipe(
        Effect.annotateLogs({ sessionId: request.sessionId, threadId: request.threadId }),
        Effect.withClock(clock),
        Effect.withSpan("Approvals.decide", { attributes: { kind: request.kind, sessionId: request.sessionId } })
      )

    const unmappable = (what: string, problem: string) => HarnessLog.warning(`approval: declined an unmappable ${what} request (${problem})`)

    const install = (turn: InstalledTurn) =>
      Effect.gen(function* () {
        const changes = new Map<string, ReadonlyArray<FileChange>>()
        yield* turn.connection.forEachNotification({ threadId: turn.threadId }, (n) =>
          Effect.sync(() => {
            if (n._tag === "ItemCompleted" && n.params.item.type === "fileChange") changes.delete(n.params.item.id)
            else if (n._tag === "ItemStarted" && n.params.item.type === "fileChange") {
              changes.set(n.params.item.id, fileChangesOf(n.params.item))
              for (const oldest of changes.keys()) {
                if (changes.size <= MAX_TRACKED_CHANGES) break
                changes.delete(oldest)
              }
            }
          })
        )

        // item/started precedes the request on the wire, and the observer above runs on the connection's reader before
        // it routes a later request: the changes are known by the time a request asks for them
        const changesFor = (itemId: string) => Effect.sync(() => changes.get(itemId))

        const command = (p: CommandApprovalParams) =>
          Effect.gen(function* () {
            const commandLine = p.command ?? undefined
            const cwd = p.cwd ?? undefined
            if (commandLine === undefined || cwd === undefined) {
              yield* unmappable("command approval", "no command or cwd")
              return responses.command(false)
            }
            const reported = yield* reports.take({ sessionId: turn.sessionId, itemId: p.itemId, command: commandLine })
            const reason = Option.match(reported, {
              onNone: () => orUndefined(p.reason),
              onSome: (r) => r.reason ?? orUndefined(p.reason)
            })
            const decided = yield* decide(
              { kind: "command", sessionId: turn.sessionId, threadId: p.threadId, turnId: p.turnId, itemId: p.itemId, command: commandLine, cwd, reason },
              { kind: "command", command: commandLine },
              cwd
            )
            return responses.command(decided)
          })

        const fileChange = (p: FileChangeApprovalParams) =>
          Effect.flatMap(changesFor(p.itemId), (found) =>
            Effect.map(
              decide(
                {
                  kind: "fileChange",
                  sessionId: turn.sessionId,
                  threadId: p.threadId,
                  turnId: p.turnId,
                  itemId: p.itemId,
                  changes: found,
                  reason: orUndefined(p.reason),
                  grantRoot: orUndefined(p.grantRoot)
                },
                // without the changes there is no exact input to remember: allow-always then counts once
                found === undefined ? undefined : { kind: "fileChange", changes: found, grantRoot: p.grantRoot ?? null },
                settings.cwd
              ),
              responses.fileChange
            ))

        const permissions = (p: PermissionsApprovalParams) =>
          Effect.map(
            decide(
              {
                kind: "permissions",
                sessionId: turn.sessionId,
                threadId: p.threadId,
                turnId: p.turnId,
                itemId: p.itemId,
                cwd: p.cwd,
                reason: orUndefined(p.reason),
                permissions: p.permissions,
                raw: p
              },
              { kind: "permissions", permissions: p.permissions },
              p.cwd
            ),
            (allowed) => responses.permissions(allowed, p.permissions)
          )

        const mcpTool = (p: ElicitationRequestParams) => {
          const tool = mcpToolOf(p)
          if (tool === undefined) return Effect.as(unmappable("MCP tool approval", "no tool name or message"), responses.mcpTool(false))
          return Effect.map(
            decide(
              {
                kind: "mcpTool",
                sessionId: turn.sessionId,
                threadId: p.threadId,
                turnId: orUndefined(p.turnId),
                serverName: p.serverName,
                toolName: tool.toolName,
                toolDescription: tool.toolDescription,
                params: tool.toolParams,
                message: tool.message
              },
              { kind: "mcpTool", serverName: p.serverName, toolName: tool.toolName, params: tool.toolParams ?? null },
              settings.cwd
            ),
            responses.mcpTool
          )
        }

        const { connection, threadId } = turn
        // S29: MCP tool approvals are classified before any other elicitation handling (these routes are newer)
        yield* connection.handle("mcpServer/elicitation/request", {
          threadId,
          when: isMcpToolApproval,
          handle: mcpTool,
          // an elicitation that cannot be read at all is declined, whichever flow it was meant for
          invalid: (_raw, problem) => Effect.as(unmappable("elicitation", problem), responses.mcpTool(false))
        })
        yield* connection.handle("item/commandExecution/requestApproval", {
          threadId,
          handle: command,
          invalid: (_raw, problem) => Effect.as(unmappable("command approval", problem), responses.command(false))
        })
        yield* connection.handle("item/fileChange/requestApproval", {
          threadId,
          handle: fileChange,
          invalid: (_raw, problem) => Effect.as(unmappable("file-change approval", problem), responses.fileChange(false))
        })
        yield* connection.handle("item/permissions/requestApproval", {
          threadId,
          handle: permissions,
          invalid: (_raw, problem) => Effect.as(unmappable("permissions approval", problem), responses.permissions(false, {}))
        })
      })

    return { name: "approvals", install } satisfies TurnExtension
  })

/** TurnExtensions holding just the approvals extension (combine with other rooms' extensions where needed). */
export const layer = (options: ApprovalsOptions = {}): Layer.Layer<TurnExtensions, never, Settings | HookReports> =>
  Layer.effect(
    TurnExtensions,
    Effect.map(makeExtension(options), (extension) => [extension])
  )
