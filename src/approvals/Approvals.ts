// Approvals for a turn (S27-S29): command, file-change and permission approvals, and MCP tool-call approvals (the
// elicitations Codex marks `_meta.codex_approval_kind: "mcp_tool_call"`), routed for the turn's thread only, asked of
// the ApprovalPrompts port and mapped back onto the wire. Only an explicit allow is an allow: a deny, no decision, a
// prompt that fails or times out, and a request that cannot be decoded all answer an explicit decline. Other
// elicitations are never matched here (they belong to the question flow).
import { Duration, Effect, Layer, Option, Schema, Stream } from "effect"
import type { RequestMessage } from "../../schemas/jsonrpc.js"
import type { ServerRequestRoute } from "../appserver/AppServerConnection.js"
import { Settings } from "../harness/CodexHarness.js"
import { type TurnContext, type TurnExtension, TurnExtensions } from "../harness/TurnExtensions.js"
import {
  type ApprovalDecision,
  ApprovalPrompts,
  type ApprovalRequest,
  describe,
  type FileChange
} from "../ports/ApprovalPrompts.js"
import * as AllowAlways from "./AllowAlways.js"
import { HookReports } from "./HookRelay.js"

export interface ApprovalsOptions {
  /** how long a prompt may take before it counts as no decision (a decline); default 5 minutes */
  readonly promptTimeout?: Duration.DurationInput | undefined
  readonly allowAlways?: AllowAlways.AllowAlwaysOptions | undefined
}

export const defaults = { promptTimeout: Duration.minutes(5) } as const

export const Methods = {
  command: "item/commandExecution/requestApproval",
  fileChange: "item/fileChange/requestApproval",
  permissions: "item/permissions/requestApproval",
  elicitation: "mcpServer/elicitation/request"
} as const

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** S29: an MCP tool-call approval, told apart before anything else reads the request. Pure. */
export const isMcpToolApproval = (request: RequestMessage): boolean =>
  request.method === Methods.elicitation &&
  isRecord(request.params) &&
  isRecord(request.params._meta) &&
  request.params._meta.codex_approval_kind === "mcp_tool_call"

const threadIdOf = (request: RequestMessage): unknown => (isRecord(request.params) ? request.params.threadId : undefined)

const optionalText = Schema.optional(Schema.NullOr(Schema.String))
const orUndefined = (s: string | null | undefined) => s ?? undefined

const CommandParams = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  itemId: Schema.String,
  command: Schema.String,
  cwd: Schema.String,
  reason: optionalText
})
const FileChangeParams = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  itemId: Schema.String,
  reason: optionalText,
  grantRoot: optionalText
})
const PermissionsParams = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  itemId: Schema.String,
  cwd: Schema.String,
  reason: optionalText,
  permissions: Schema.Struct({
    network: Schema.optional(Schema.NullOr(Schema.Unknown)),
    fileSystem: Schema.optional(Schema.NullOr(Schema.Unknown))
  })
})
const McpToolParams = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.optional(Schema.NullOr(Schema.String)),
  serverName: Schema.String,
  message: Schema.String,
  _meta: Schema.Struct({
    codex_approval_kind: Schema.Literal("mcp_tool_call"),
    tool_name: Schema.String,
    tool_description: optionalText,
    tool_params: Schema.optional(Schema.Unknown)
  })
})

const decodeOption = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownOption(schema)
  return (u: unknown): Option.Option<A> => decode(u)
}
const decodeCommand = decodeOption(CommandParams)
const decodeFileChange = decodeOption(FileChangeParams)
const decodePermissions = decodeOption(PermissionsParams)
const decodeMcpTool = decodeOption(McpToolParams)

/** The wire answers. Pure. */
export const responses = {
  command: (allowed: boolean) => ({ decision: allowed ? "accept" : "decline" }),
  fileChange: (allowed: boolean) => ({ decision: allowed ? "accept" : "decline" }),
  /** a permissions grant has no decision field: allowing grants what was asked, declining grants nothing */
  permissions: (allowed: boolean, requested: { readonly network?: unknown; readonly fileSystem?: unknown }) => ({
    permissions: allowed
      ? {
          ...(requested.network != null ? { network: requested.network } : {}),
          ...(requested.fileSystem != null ? { fileSystem: requested.fileSystem } : {})
        }
      : {},
    scope: "turn"
  }),
  mcpTool: (allowed: boolean) =>
    allowed ? { action: "accept", content: {}, _meta: null } : { action: "decline", content: null, _meta: null }
} as const

const isAllow = (decision: ApprovalDecision) => decision === "allowOnce" || decision === "allowAlways"

/** fileChange items seen on a thread, so a file-change approval can show its changes; bounded */
const MAX_TRACKED_CHANGES = 64

const fileChangesOf = (item: Record<string, unknown>): ReadonlyArray<FileChange> | undefined => {
  if (!Array.isArray(item.changes)) return undefined
  const changes: Array<FileChange> = []
  for (const change of item.changes) {
    if (!isRecord(change) || typeof change.path !== "string") return undefined
    const kind = isRecord(change.kind) && typeof change.kind.type === "string" ? change.kind.type : String(change.kind ?? "update")
    changes.push({ path: change.path, kind, diff: typeof change.diff === "string" ? change.diff : "" })
  }
  return changes
}

export const makeExtension = (
  options: ApprovalsOptions = {}
): Effect.Effect<TurnExtension, never, ApprovalPrompts | Settings> =>
  Effect.gen(function* () {
    const prompts = yield* ApprovalPrompts
    const settings = yield* Settings
    const clock = yield* Effect.clock
    const store = yield* AllowAlways.make(options.allowAlways)
    // S22: requirements a PreToolUse hook recorded in report mode, shown with the app-server's later approval
    const reports = yield* Effect.serviceOption(HookReports)
    const promptTimeout = options.promptTimeout ?? defaults.promptTimeout
    const provider = settings.providerUrl ?? "codex"

    /** true only for an explicit allow (or a remembered allow-always for the exact fingerprint) */
    const decide = (request: ApprovalRequest, input: unknown | undefined, cwd: string) =>
      Effect.gen(function* () {
        const key: AllowAlways.FingerprintParts | undefined =
          input === undefined ? undefined : { provider, sessionId: request.sessionId, input, cwd }
        if (key !== undefined && (yield* store.allows(key))) {
          yield* Effect.logInfo(`approval: allowed ${describe(request)} (allow-always)`)
          return true
        }
        const decision = yield* prompts.ask(request).pipe(
          Effect.timeoutTo({ duration: promptTimeout, onSuccess: (d): ApprovalDecision => d, onTimeout: (): ApprovalDecision => "noDecision" }),
          Effect.catchAllCause((cause) =>
            Effect.as(Effect.logWarning("approval prompt failed; declining", cause), "noDecision" as ApprovalDecision)
          )
        )
        if (decision === "allowAlways" && key !== undefined) yield* store.remember(key)
        yield* Effect.logInfo(`approval: ${isAllow(decision) ? "allowed" : "declined"} ${describe(request)} (${decision})`)
        return isAllow(decision)
      }).pipe(
        Effect.annotateLogs({ sessionId: request.sessionId, threadId: request.threadId }),
        Effect.withClock(clock)
      )

    const unmappable = (request: RequestMessage) =>
      Effect.logWarning(`approval: declined an unmappable ${request.method} request`)

    const install = (turn: TurnContext) =>
      Effect.gen(function* () {
        const changes = new Map<string, ReadonlyArray<FileChange>>()
        const events = yield* turn.connection.subscribe({ threadId: turn.threadId })
        yield* Stream.runForEach(events, (n) =>
          Effect.sync(() => {
            const item = isRecord(n.params) ? n.params.item : undefined
            if (!isRecord(item) || item.type !== "fileChange" || typeof item.id !== "string") return
            if (n.method === "item/completed") changes.delete(item.id)
            else if (n.method === "item/started") {
              const found = fileChangesOf(item)
              if (found === undefined) return
              changes.set(item.id, found)
              for (const oldest of changes.keys()) {
                if (changes.size <= MAX_TRACKED_CHANGES) break
                changes.delete(oldest)
              }
            }
          })
        ).pipe(Effect.forkScoped)

        // item/started precedes the request on the wire; give the observer a moment to have read it
        const changesFor = (itemId: string) =>
          Effect.gen(function* () {
            for (let i = 0; i < 20 && !changes.has(itemId); i++) yield* Effect.yieldNow()
            return changes.get(itemId)
          })

        const forThisThread = (method: string) => (request: RequestMessage) =>
          request.method === method && threadIdOf(request) === turn.threadId

        const routes: ReadonlyArray<ServerRequestRoute> = [
          {
            match: (request) => isMcpToolApproval(request) && threadIdOf(request) === turn.threadId,
            handle: (request) =>
              Option.match(decodeMcpTool(request.params), {
                onNone: () => Effect.as(unmappable(request), responses.mcpTool(false)),
                onSome: (p) =>
                  Effect.map(
                    decide(
                      {
                        kind: "mcpTool",
                        sessionId: turn.sessionId,
                        threadId: p.threadId,
                        turnId: orUndefined(p.turnId),
                        serverName: p.serverName,
                        toolName: p._meta.tool_name,
                        toolDescription: orUndefined(p._meta.tool_description),
                        params: p._meta.tool_params,
                        message: p.message
                      },
                      { kind: "mcpTool", serverName: p.serverName, toolName: p._meta.tool_name, params: p._meta.tool_params ?? null },
                      settings.cwd
                    ),
                    responses.mcpTool
                  )
              })
          },
          {
            match: forThisThread(Methods.command),
            handle: (request) =>
              Option.match(decodeCommand(request.params), {
                onNone: () => Effect.as(unmappable(request), responses.command(false)),
                onSome: (p) =>
                  Effect.gen(function* () {
                    const reported = Option.isNone(reports)
                      ? Option.none()
                      : yield* reports.value.take({ sessionId: turn.sessionId, itemId: p.itemId, command: p.command })
                    const reason = Option.match(reported, {
                      onNone: () => orUndefined(p.reason),
                      onSome: (r) => r.reason ?? orUndefined(p.reason)
                    })
                    const decided = yield* decide(
                      {
                        kind: "command",
                        sessionId: turn.sessionId,
                        threadId: p.threadId,
                        turnId: p.turnId,
                        itemId: p.itemId,
                        command: p.command,
                        cwd: p.cwd,
                        reason
                      },
                      { kind: "command", command: p.command },
                      p.cwd
                    )
                    return responses.command(decided)
                  })
              })
          },
          {
            match: forThisThread(Methods.fileChange),
            handle: (request) =>
              Option.match(decodeFileChange(request.params), {
                onNone: () => Effect.as(unmappable(request), responses.fileChange(false)),
                onSome: (p) =>
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
                    )
                  )
              })
          },
          {
            match: forThisThread(Methods.permissions),
            handle: (request) =>
              Option.match(decodePermissions(request.params), {
                onNone: () => Effect.as(unmappable(request), responses.permissions(false, {})),
                onSome: (p) =>
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
                        raw: request.params
                      },
                      { kind: "permissions", permissions: p.permissions },
                      p.cwd
                    ),
                    (allowed) => responses.permissions(allowed, p.permissions)
                  )
              })
          }
        ]
        yield* Effect.forEach(routes, (route) => turn.connection.handle(route), { discard: true })
      })

    return { name: "approvals", install } satisfies TurnExtension
  })

/** TurnExtensions holding just the approvals extension (combine with other rooms' extensions where needed). */
export const layer = (options: ApprovalsOptions = {}): Layer.Layer<TurnExtensions, never, ApprovalPrompts | Settings> =>
  Layer.effect(
    TurnExtensions,
    Effect.map(makeExtension(options), (extension) => [extension])
  )
