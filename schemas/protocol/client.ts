// The client requests the harness makes, with their params and results, and the contract table `request<M>` is typed
// by. Each is held to the binary's generated schema by `npm run protocol:check`.
import { Schema } from "effect"
import {
  AppsInstalledParams,
  AppsInstalledResponse,
  PluginInstalledParams,
  PluginInstalledResponse,
  PluginReadParams,
  PluginReadResponse
} from "./apps.js"
import { ApprovalsReviewer, AskForApproval, optionalNullable, Personality, SandboxMode, SandboxPolicy } from "./common.js"
import { Thread, Turn, UserInput } from "./items.js"
import {
  CommandExecEmptyResponse,
  CommandExecParams,
  CommandExecResizeParams,
  CommandExecResponse,
  CommandExecTerminateParams,
  CommandExecWriteParams
} from "./processes.js"

// ---- initialize (v1) ----
export const ClientInfo = Schema.Struct({
  name: Schema.String,
  title: optionalNullable(Schema.String),
  version: Schema.String
})
export const InitializeCapabilities = Schema.Struct({
  experimentalApi: Schema.optional(Schema.Boolean),
  /** MCP extensions the client takes, by id; Codex passes them on to its MCP servers (`"openai/form": {}`) */
  extensions: optionalNullable(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  optOutNotificationMethods: optionalNullable(Schema.Array(Schema.String))
})
export const InitializeParams = Schema.Struct({
  clientInfo: ClientInfo,
  capabilities: optionalNullable(InitializeCapabilities)
})
export type InitializeParams = typeof InitializeParams.Type
export const InitializeResponse = Schema.Struct({
  userAgent: Schema.String,
  codexHome: Schema.String,
  platformFamily: Schema.String,
  platformOs: Schema.String
})
export type InitializeResponse = typeof InitializeResponse.Type

// ---- dynamic tools (experimental API) ----
export const DynamicToolFunction = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String,
  description: Schema.String,
  inputSchema: Schema.Unknown,
  deferLoading: Schema.optional(Schema.Boolean)
})
export type DynamicToolFunction = typeof DynamicToolFunction.Type
export const DynamicToolNamespace = Schema.Struct({
  type: Schema.Literal("namespace"),
  name: Schema.String,
  description: Schema.String,
  tools: Schema.Array(DynamicToolFunction)
})
export const DynamicToolSpec = Schema.Union(DynamicToolFunction, DynamicToolNamespace)
export type DynamicToolSpec = typeof DynamicToolSpec.Type

// ---- collaboration mode (experimental API) ----
export const CollaborationMode = Schema.Struct({
  mode: Schema.Literal("plan", "default"),
  settings: Schema.Struct({
    model: Schema.String,
    reasoning_effort: optionalNullable(Schema.String),
    developer_instructions: optionalNullable(Schema.String)
  })
})
export type CollaborationMode = typeof CollaborationMode.Type

// ---- thread/start, thread/resume, thread/fork ----
const threadOptions = {
  model: optionalNullable(Schema.String),
  modelProvider: optionalNullable(Schema.String),
  cwd: optionalNullable(Schema.String),
  approvalPolicy: optionalNullable(AskForApproval),
  approvalsReviewer: optionalNullable(ApprovalsReviewer),
  sandbox: optionalNullable(SandboxMode),
  personality: optionalNullable(Personality),
  serviceTier: optionalNullable(Schema.String),
  baseInstructions: optionalNullable(Schema.String),
  developerInstructions: optionalNullable(Schema.String),
  config: optionalNullable(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}
/** An environment a thread's commands run in (S26: a paired node registered with `environment/add`). */
export const TurnEnvironment = Schema.Struct({ environmentId: Schema.String, cwd: Schema.String })
export type TurnEnvironment = typeof TurnEnvironment.Type
export const ThreadStartParams = Schema.Struct({
  ...threadOptions,
  ephemeral: optionalNullable(Schema.Boolean),
  dynamicTools: optionalNullable(Schema.Array(DynamicToolSpec)),
  /** the first is where the thread's commands run; omitted: the app-server's own machine */
  environments: optionalNullable(Schema.Array(TurnEnvironment))
})
export type ThreadStartParams = typeof ThreadStartParams.Type
export const ThreadResumeParams = Schema.Struct({
  ...threadOptions,
  threadId: Schema.String,
  excludeTurns: Schema.optional(Schema.Boolean)
})
export type ThreadResumeParams = typeof ThreadResumeParams.Type

const threadOpened = {
  thread: Thread,
  model: Schema.String,
  modelProvider: Schema.String,
  cwd: Schema.String,
  approvalPolicy: Schema.Unknown,
  sandbox: Schema.Unknown
}
export const ThreadStartResponse = Schema.Struct(threadOpened)
export type ThreadStartResponse = typeof ThreadStartResponse.Type
export const ThreadResumeResponse = Schema.Struct(threadOpened)
export type ThreadResumeResponse = typeof ThreadResumeResponse.Type

/** A fork never carries model or provider here: the probe pins the snapshot with Codex's own pair (S15). */
export const ThreadForkParams = Schema.Struct({
  threadId: Schema.String,
  ephemeral: Schema.optional(Schema.Boolean),
  excludeTurns: Schema.optional(Schema.Boolean),
  lastTurnId: optionalNullable(Schema.String)
})
export const ThreadForkResponse = Schema.Struct(threadOpened)
export type ThreadForkResponse = typeof ThreadForkResponse.Type

// ---- turn/start, turn/interrupt, turn/steer ----
export const TurnStartParams = Schema.Struct({
  threadId: Schema.String,
  input: Schema.Array(UserInput),
  model: optionalNullable(Schema.String),
  cwd: optionalNullable(Schema.String),
  approvalPolicy: optionalNullable(AskForApproval),
  approvalsReviewer: optionalNullable(ApprovalsReviewer),
  personality: optionalNullable(Personality),
  serviceTier: optionalNullable(Schema.String),
  sandboxPolicy: optionalNullable(SandboxPolicy),
  collaborationMode: optionalNullable(CollaborationMode)
})
export type TurnStartParams = typeof TurnStartParams.Type
export const TurnStartResponse = Schema.Struct({ turn: Turn })
export type TurnStartResponse = typeof TurnStartResponse.Type

export const TurnInterruptParams = Schema.Struct({ threadId: Schema.String, turnId: Schema.String })
export const TurnInterruptResponse = Schema.Struct({})

export const TurnSteerParams = Schema.Struct({
  threadId: Schema.String,
  expectedTurnId: Schema.String,
  input: Schema.Array(UserInput)
})
export const TurnSteerResponse = Schema.Struct({ turnId: Schema.String })

// ---- thread/read (metadata only: a passive status read) ----
export const ThreadReadParams = Schema.Struct({ threadId: Schema.String, includeTurns: Schema.optional(Schema.Boolean) })
export const ThreadReadResponse = Schema.Struct({ thread: Thread })

// ---- supervision (S14-S16): catalog listing, turn history, injection, archive ----
export const ThreadSourceKind = Schema.Literal(
  "cli",
  "vscode",
  "exec",
  "appServer",
  "subAgent",
  "subAgentReview",
  "subAgentCompact",
  "subAgentThreadSpawn",
  "subAgentOther",
  "unknown"
)
export const ThreadListParams = Schema.Struct({
  cursor: optionalNullable(Schema.String),
  limit: optionalNullable(Schema.Number),
  archived: optionalNullable(Schema.Boolean),
  parentThreadId: optionalNullable(Schema.String),
  ancestorThreadId: optionalNullable(Schema.String),
  includedThreadIds: optionalNullable(Schema.Array(Schema.String)),
  sourceKinds: optionalNullable(Schema.Array(ThreadSourceKind)),
  /** without it Codex lists only the connection's default provider's threads; `[]` lists every provider's (S14) */
  modelProviders: optionalNullable(Schema.Array(Schema.String))
})
export type ThreadListParams = typeof ThreadListParams.Type
export const ThreadListResponse = Schema.Struct({
  data: Schema.Array(Thread),
  nextCursor: optionalNullable(Schema.String)
})
export type ThreadListResponse = typeof ThreadListResponse.Type

export const ThreadTurnsListParams = Schema.Struct({
  threadId: Schema.String,
  cursor: optionalNullable(Schema.String),
  limit: optionalNullable(Schema.Number),
  sortDirection: optionalNullable(Schema.Literal("asc", "desc")),
  itemsView: optionalNullable(Schema.Literal("notLoaded", "summary", "full"))
})
export const ThreadTurnsListResponse = Schema.Struct({
  data: Schema.Array(Turn),
  nextCursor: optionalNullable(Schema.String)
})
export type ThreadTurnsListResponse = typeof ThreadTurnsListResponse.Type

/** Raw Responses API items appended to a thread's model-visible history. */
export const ThreadInjectItemsParams = Schema.Struct({ threadId: Schema.String, items: Schema.Array(Schema.Unknown) })
export const ThreadInjectItemsResponse = Schema.Struct({})
export const ThreadIdParams = Schema.Struct({ threadId: Schema.String })
export const EmptyResponse = Schema.Struct({})
export const ThreadUnsubscribeResponse = Schema.Struct({
  status: Schema.Literal("notLoaded", "notSubscribed", "unsubscribed")
})

// ---- diagnostics (S36) ----
/** Codex's feedback upload to OpenAI: one thread (or none) and, with `includeLogs`, Codex's logs; `reason` is the note */
export const FeedbackUploadParams = Schema.Struct({
  classification: Schema.String,
  reason: optionalNullable(Schema.String),
  threadId: optionalNullable(Schema.String),
  includeLogs: Schema.optional(Schema.Boolean),
  extraLogFiles: optionalNullable(Schema.Array(Schema.String)),
  tags: optionalNullable(Schema.Record({ key: Schema.String, value: Schema.String }))
})
export type FeedbackUploadParams = typeof FeedbackUploadParams.Type
export const FeedbackUploadResponse = Schema.Struct({
  threadId: Schema.String,
  promptHash: optionalNullable(Schema.String)
})
export const ServerDiagnosticsParams = Schema.Struct({})
export const ServerDiagnosticsResponse = Schema.Struct({
  process: Schema.Struct({
    id: Schema.Number,
    residentMemoryBytes: optionalNullable(Schema.Number),
    physicalFootprintBytes: optionalNullable(Schema.Number)
  }),
  gauges: Schema.Array(Schema.Struct({ name: Schema.String, value: Schema.Number }))
})
export type ServerDiagnosticsResponse = typeof ServerDiagnosticsResponse.Type

// ---- environments (S25: the local sandbox environment must be ready before a sandboxed process starts) ----
export const EnvironmentStatusParams = Schema.Struct({ environmentId: Schema.String })
export const EnvironmentStatusResponse = Schema.Struct({
  status: Schema.Literal("ready", "pending", "disconnected", "unknown"),
  error: optionalNullable(Schema.String)
})

// ---- remote environments (S26: a paired node's exec-server, reached through the harness's relay) ----
/** Registers an exec-server; answers at once, without reaching it. */
export const EnvironmentAddParams = Schema.Struct({ environmentId: Schema.String, execServerUrl: Schema.String })
export const EnvironmentAddResponse = Schema.Struct({})
/** Asks the environment itself: the answer proves the exec-server is reachable. */
export const EnvironmentInfoParams = Schema.Struct({ environmentId: Schema.String })
export const EnvironmentInfoResponse = Schema.Struct({
  shell: Schema.Struct({ name: Schema.String, path: Schema.String }),
  cwd: optionalNullable(Schema.String)
})

// ---- the contract: which methods we call, with their generated-schema names ----
export interface MethodContract {
  readonly params: Schema.Schema.AnyNoContext
  readonly result: Schema.Schema.AnyNoContext
  /** definition names in the generated JSON schema */
  readonly paramsDefinition: string
  readonly resultDefinition: string
}

const method = <P extends Schema.Schema.AnyNoContext, R extends Schema.Schema.AnyNoContext>(
  params: P,
  result: R,
  paramsDefinition: string,
  resultDefinition: string
) => ({ params, result, paramsDefinition, resultDefinition })

export const ClientMethods = {
  initialize: method(InitializeParams, InitializeResponse, "InitializeParams", "InitializeResponse"),
  "thread/start": method(ThreadStartParams, ThreadStartResponse, "ThreadStartParams", "ThreadStartResponse"),
  "thread/resume": method(ThreadResumeParams, ThreadResumeResponse, "ThreadResumeParams", "ThreadResumeResponse"),
  "turn/start": method(TurnStartParams, TurnStartResponse, "TurnStartParams", "TurnStartResponse"),
  "turn/interrupt": method(TurnInterruptParams, TurnInterruptResponse, "TurnInterruptParams", "TurnInterruptResponse"),
  "turn/steer": method(TurnSteerParams, TurnSteerResponse, "TurnSteerParams", "TurnSteerResponse"),
  "thread/read": method(ThreadReadParams, ThreadReadResponse, "ThreadReadParams", "ThreadReadResponse"),
  "thread/compact/start": method(ThreadIdParams, EmptyResponse, "ThreadCompactStartParams", "ThreadCompactStartResponse"),
  "thread/list": method(ThreadListParams, ThreadListResponse, "ThreadListParams", "ThreadListResponse"),
  "thread/turns/list": method(ThreadTurnsListParams, ThreadTurnsListResponse, "ThreadTurnsListParams", "ThreadTurnsListResponse"),
  "thread/fork": method(ThreadForkParams, ThreadForkResponse, "ThreadForkParams", "ThreadForkResponse"),
  "thread/inject_items": method(ThreadInjectItemsParams, ThreadInjectItemsResponse, "ThreadInjectItemsParams", "ThreadInjectItemsResponse"),
  "thread/archive": method(ThreadIdParams, EmptyResponse, "ThreadArchiveParams", "ThreadArchiveResponse"),
  "thread/delete": method(ThreadIdParams, EmptyResponse, "ThreadDeleteParams", "ThreadDeleteResponse"),
  "thread/unsubscribe": method(ThreadIdParams, ThreadUnsubscribeResponse, "ThreadUnsubscribeParams", "ThreadUnsubscribeResponse"),
  "plugin/installed": method(PluginInstalledParams, PluginInstalledResponse, "PluginInstalledParams", "PluginInstalledResponse"),
  "plugin/read": method(PluginReadParams, PluginReadResponse, "PluginReadParams", "PluginReadResponse"),
  "app/installed": method(AppsInstalledParams, AppsInstalledResponse, "AppsInstalledParams", "AppsInstalledResponse"),
  "feedback/upload": method(FeedbackUploadParams, FeedbackUploadResponse, "FeedbackUploadParams", "FeedbackUploadResponse"),
  "server/diagnostics": method(ServerDiagnosticsParams, ServerDiagnosticsResponse, "ServerDiagnosticsParams", "ServerDiagnosticsResponse"),
  "environment/add": method(EnvironmentAddParams, EnvironmentAddResponse, "EnvironmentAddParams", "EnvironmentAddResponse"),
  "environment/info": method(EnvironmentInfoParams, EnvironmentInfoResponse, "EnvironmentInfoParams", "EnvironmentInfoResponse"),
  "environment/status": method(EnvironmentStatusParams, EnvironmentStatusResponse, "EnvironmentStatusParams", "EnvironmentStatusResponse"),
  "command/exec": method(CommandExecParams, CommandExecResponse, "CommandExecParams", "CommandExecResponse"),
  "command/exec/write": method(CommandExecWriteParams, CommandExecEmptyResponse, "CommandExecWriteParams", "CommandExecWriteResponse"),
  "command/exec/resize": method(CommandExecResizeParams, CommandExecEmptyResponse, "CommandExecResizeParams", "CommandExecResizeResponse"),
  "command/exec/terminate": method(
    CommandExecTerminateParams,
    CommandExecEmptyResponse,
    "CommandExecTerminateParams",
    "CommandExecTerminateResponse"
  )
} as const satisfies Record<string, MethodContract>
export type ClientMethod = keyof typeof ClientMethods
