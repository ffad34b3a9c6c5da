// The requests the app-server sends the harness, with typed params and the answers the harness sends back. The
// connection decodes params once and hands them to the handler registered for the method and thread; a request that
// does not decode gets the route's own "invalid" answer (an explicit decline, a failed tool result) or a JSON-RPC
// error. Each schema is held to the binary by `npm run protocol:check` (params read, answers sent).
import { Schema } from "effect"
import { optionalNullable } from "./common.js"

/** the item a request is about, in its thread and turn */
const itemRef = { threadId: Schema.String, turnId: Schema.String, itemId: Schema.String }

// ---- approvals (S27-S29) ----
export const CommandApprovalParams = Schema.Struct({
  ...itemRef,
  /** absent for approvals that are not about a shell command (a network access, say): those are declined */
  command: optionalNullable(Schema.String),
  cwd: optionalNullable(Schema.String),
  reason: optionalNullable(Schema.String)
})
export type CommandApprovalParams = typeof CommandApprovalParams.Type
/** the decisions the harness may send for a command or a file change (it sends only accept and decline) */
const Decision = Schema.Literal("accept", "acceptForSession", "decline", "cancel")
export const CommandApprovalResponse = Schema.Struct({ decision: Decision })

export const FileChangeApprovalParams = Schema.Struct({
  ...itemRef,
  reason: optionalNullable(Schema.String),
  grantRoot: optionalNullable(Schema.String)
})
export type FileChangeApprovalParams = typeof FileChangeApprovalParams.Type
export const FileChangeApprovalResponse = Schema.Struct({ decision: Decision })

export const PermissionsApprovalParams = Schema.Struct({
  ...itemRef,
  cwd: Schema.String,
  reason: optionalNullable(Schema.String),
  permissions: Schema.Struct({
    network: optionalNullable(Schema.Unknown),
    fileSystem: optionalNullable(Schema.Unknown)
  })
})
export type PermissionsApprovalParams = typeof PermissionsApprovalParams.Type
export const PermissionsApprovalResponse = Schema.Struct({
  permissions: Schema.Struct({
    network: Schema.optional(Schema.Unknown),
    fileSystem: Schema.optional(Schema.Unknown)
  }),
  scope: Schema.Literal("turn", "session")
})

// ---- dynamic tools (S11, S21) ----
export const DynamicToolCallParams = Schema.Struct({
  threadId: Schema.String,
  turnId: Schema.String,
  callId: Schema.String,
  namespace: optionalNullable(Schema.String),
  tool: Schema.String,
  arguments: Schema.Unknown
})
export type DynamicToolCallParams = typeof DynamicToolCallParams.Type
export const DynamicToolCallOutputContentItem = Schema.Union(
  Schema.Struct({ type: Schema.Literal("inputText"), text: Schema.String }),
  Schema.Struct({ type: Schema.Literal("inputImage"), imageUrl: Schema.String })
)
export const DynamicToolCallResponse = Schema.Struct({
  contentItems: Schema.Array(DynamicToolCallOutputContentItem),
  success: Schema.Boolean
})
export type DynamicToolCallResponse = typeof DynamicToolCallResponse.Type

// ---- questions (S30-S34) ----
/** request_user_input: its questions are mapped (and checked) by the interaction room, so they stay loose here */
export const UserInputRequestParams = Schema.Struct({
  ...itemRef,
  questions: Schema.Array(Schema.Unknown)
})
export type UserInputRequestParams = typeof UserInputRequestParams.Type
export const UserInputResponse = Schema.Struct({
  answers: Schema.Record({ key: Schema.String, value: Schema.Struct({ answers: Schema.Array(Schema.String) }) })
})

/** An MCP elicitation: a form, a URL or an MCP tool-call approval (`_meta.codex_approval_kind`); mapped elsewhere. */
export const ElicitationRequestParams = Schema.Struct({
  threadId: Schema.String,
  turnId: optionalNullable(Schema.String),
  serverName: Schema.String,
  mode: Schema.String,
  _meta: optionalNullable(Schema.Unknown)
})
export type ElicitationRequestParams = typeof ElicitationRequestParams.Type
export const ElicitationResponse = Schema.Struct({
  action: Schema.Literal("accept", "decline", "cancel"),
  content: Schema.NullOr(Schema.Unknown),
  _meta: Schema.NullOr(Schema.Unknown)
})

const serverRequest = <P extends Schema.Schema.AnyNoContext, R extends Schema.Schema.AnyNoContext>(
  params: P,
  response: R,
  paramsDefinition: string,
  responseDefinition: string
) => ({ params, response, paramsDefinition, responseDefinition })

/** method -> params (read) and response (sent), with their definitions in the generated schema */
export const ServerRequests = {
  "item/commandExecution/requestApproval": serverRequest(
    CommandApprovalParams,
    CommandApprovalResponse,
    "CommandExecutionRequestApprovalParams",
    "CommandExecutionRequestApprovalResponse"
  ),
  "item/fileChange/requestApproval": serverRequest(
    FileChangeApprovalParams,
    FileChangeApprovalResponse,
    "FileChangeRequestApprovalParams",
    "FileChangeRequestApprovalResponse"
  ),
  "item/permissions/requestApproval": serverRequest(
    PermissionsApprovalParams,
    PermissionsApprovalResponse,
    "PermissionsRequestApprovalParams",
    "PermissionsRequestApprovalResponse"
  ),
  "item/tool/call": serverRequest(DynamicToolCallParams, DynamicToolCallResponse, "DynamicToolCallParams", "DynamicToolCallResponse"),
  "item/tool/requestUserInput": serverRequest(
    UserInputRequestParams,
    UserInputResponse,
    "ToolRequestUserInputParams",
    "ToolRequestUserInputResponse"
  ),
  "mcpServer/elicitation/request": serverRequest(
    ElicitationRequestParams,
    ElicitationResponse,
    "McpServerElicitationRequestParams",
    "McpServerElicitationRequestResponse"
  )
} as const
export type ServerRequestMethod = keyof typeof ServerRequests
export type ServerRequestParams<M extends ServerRequestMethod> = Schema.Schema.Type<(typeof ServerRequests)[M]["params"]>
export type ServerRequestResponse<M extends ServerRequestMethod> = Schema.Schema.Type<(typeof ServerRequests)[M]["response"]>
