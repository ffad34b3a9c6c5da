// The harness config file (JSON; default `<stateDir>/config.json`). Every key is optional; unknown keys are an error, so a typo
// is never silently ignored. Each leaf says what it expects in one phrase, which is what a decode failure reports.
// No logic beyond that: loading, defaults and merging live in src/config/HarnessConfig.ts.
import { type ParseResult, Schema } from "effect"
import { AskForApproval, SandboxMode } from "./protocol.js"

/** The documented defaults; the loader's effective config and the JSON Schema's `default`s both come from here. */
export const Defaults = {
  approvalPolicy: "never",
  sandbox: "read-only",
  messages: { visibleReplies: "automatic", queue: { mode: "steer", quietWindowMs: 500 } },
  compaction: { timeoutSeconds: 180, interruptGraceSeconds: 30 },
  approvals: { allowAlwaysWindowMinutes: 30, allowAlwaysMaxEntries: 512 },
  appServer: { requestTimeoutSeconds: 60, idleTimeToLiveSeconds: 120, experimental: { sandboxExecServer: false } },
  questions: { timeoutSeconds: 600 },
  turns: { timeoutSeconds: 3600, silenceSeconds: 300 },
  supervision: { enabled: true },
  // 4 MiB: a prompt is at most 1 MiB of text (schemas/control.ts maxPromptChars), JSON-escaped at most 6 bytes a
  // character in the worst case
  serve: { maxRequestBytes: 4 * 1024 * 1024 }
} as const

/** The range `serve.maxRequestBytes` (and --max-request-bytes) may take: a control request fits, one string can hold it. */
export const maxRequestBytesRange = { min: 64 * 1024, max: 256 * 1024 * 1024 } as const

const shown = (value: unknown): string => {
  if (value === undefined) return "nothing"
  if (typeof value === "number" && !Number.isFinite(value)) return String(value)
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}

// `override: true` on a leaf: its phrase replaces Effect's per-member union messages and inner refinement messages.
// `override: false` on a section: a wrong value inside it reports the inner field, a non-object reports the section.
const expecting =
  (phrase: string, override = true) =>
  <S extends Schema.Annotable.All>(schema: S): S =>
    schema.annotations({
      message: (issue: ParseResult.ParseIssue) => ({ message: `expected ${phrase}, got ${shown(issue.actual)}`, override })
    }) as S

const oneOf = <const L extends ReadonlyArray<string>>(...literals: L) =>
  Schema.Literal(...literals).pipe(expecting(literals.map((l) => JSON.stringify(l)).join(" | ")))

const text = Schema.String.pipe(
  Schema.filter((s) => s.length > 0, { jsonSchema: { minLength: 1 } }),
  expecting("a non-empty string")
)

const positiveInt = Schema.Number.pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n > 0, { jsonSchema: { type: "integer", minimum: 1 } }),
  expecting("a positive integer")
)

const nonNegativeInt = Schema.Number.pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n >= 0, { jsonSchema: { type: "integer", minimum: 0 } }),
  expecting("a non-negative integer")
)

const isHttpUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

const isWsUrl = (value: string): boolean => {
  try {
    const url = new URL(value)
    return url.protocol === "ws:" || url.protocol === "wss:"
  } catch {
    return false
  }
}

// only the scheme here; which hosts plain ws:// may go to is checked when settings are built (AppServerUrl.check)
const wsUrl = Schema.String.pipe(
  Schema.filter(isWsUrl, { jsonSchema: { format: "uri", pattern: "^wss?://" } }),
  expecting("a ws:// or wss:// URL")
)

const httpUrl = Schema.String.pipe(
  Schema.filter(isHttpUrl, { jsonSchema: { format: "uri", pattern: "^https?://" } }),
  expecting("an http(s) URL")
)

// The name of the variable the provider key is in. The message never repeats the value: a value that is not a name is
// most likely the key itself, pasted where its variable's name belongs.
const envVarName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/),
  (schema) =>
    schema.annotations({
      message: () => ({
        message: "expected the name of an environment variable (letters, digits and _, not starting with a digit), not the key itself",
        override: true
      })
    })
)

const section = <F extends Schema.Struct.Fields>(fields: F) => Schema.Struct(fields).pipe(expecting("an object", false))

const field = <S extends Schema.Schema.All>(
  schema: S,
  annotations: { readonly description: string; readonly default?: Schema.Schema.Type<S> }
) => Schema.optionalWith(schema, { exact: true }).annotations(annotations)

export const ApprovalPolicy = AskForApproval.pipe(expecting(AskForApproval.literals.map((l) => JSON.stringify(l)).join(" | ")))
export const Sandbox = SandboxMode.pipe(expecting(SandboxMode.literals.map((l) => JSON.stringify(l)).join(" | ")))
export const ApprovalsReviewer = oneOf("user", "auto_review")
export type ApprovalsReviewer = typeof ApprovalsReviewer.Type
export const VisibleReplies = oneOf("automatic", "message_tool")
export type VisibleReplies = typeof VisibleReplies.Type
export const QueueMode = oneOf("steer", "followup", "collect")
export type QueueMode = typeof QueueMode.Type
export const NativeHookEvent = oneOf("pre_tool_use", "post_tool_use", "permission_request", "stop")
export type NativeHookEvent = typeof NativeHookEvent.Type

export const Messages = section({
  visibleReplies: field(VisibleReplies, {
    description:
      'Where the final assistant text goes: "automatic" delivers it to the source conversation; "message_tool" keeps it private unless the agent calls message(action="send").',
    default: Defaults.messages.visibleReplies
  }),
  queue: field(
    section({
      mode: field(QueueMode, {
        description:
          'Messages that arrive during a run: "steer" batches them over the quiet window into one turn/steer; "followup" and "collect" queue them for after the run.',
        default: Defaults.messages.queue.mode
      }),
      quietWindowMs: field(nonNegativeInt, {
        description: "Steer mode: how long (milliseconds) to wait for more messages before sending the batch.",
        default: Defaults.messages.queue.quietWindowMs
      })
    }),
    { description: "Messages that arrive while a turn is running." }
  )
})

export const NativeHookRelay = section({
  events: field(Schema.Array(NativeHookEvent).pipe(expecting("an array", false)), {
    description:
      'Codex hooks relayed to the harness. Default: all four when approvalPolicy is "never"; without "permission_request" otherwise (add it to force the relay while app-server approvals are on).'
  })
})

export const Compaction = section({
  timeoutSeconds: field(positiveInt, {
    description: "Manual compaction: seconds to wait for completion before requesting a turn interrupt.",
    default: Defaults.compaction.timeoutSeconds
  }),
  interruptGraceSeconds: field(positiveInt, {
    description: "Seconds to wait for Codex to confirm that interrupt before retiring the connection.",
    default: Defaults.compaction.interruptGraceSeconds
  })
})

export const Approvals = section({
  allowAlwaysWindowMinutes: field(positiveInt, {
    description: "How long (minutes) an allow-always decision is remembered for its exact tool input and cwd.",
    default: Defaults.approvals.allowAlwaysWindowMinutes
  }),
  allowAlwaysMaxEntries: field(positiveInt, {
    description: "How many allow-always decisions are remembered at most (the oldest are dropped).",
    default: Defaults.approvals.allowAlwaysMaxEntries
  })
})

export const AppServer = section({
  requestTimeoutSeconds: field(positiveInt, {
    description: "Seconds to wait for the app-server to answer a request.",
    default: Defaults.appServer.requestTimeoutSeconds
  }),
  idleTimeToLiveSeconds: field(positiveInt, {
    description: "Seconds an unused app-server process is kept alive for the next turn.",
    default: Defaults.appServer.idleTimeToLiveSeconds
  }),
  url: field(wsUrl, {
    description:
      "A running `codex app-server --listen ws://...` for new sessions, instead of starting one: ws:// on a loopback address (an SSH forward), or wss://. --app-server wins."
  }),
  tokenEnv: field(envVarName, {
    description: "The environment variable its bearer token is read from, by name (default: CODEX_HARNESS_APP_SERVER_TOKEN); never the token itself."
  }),
  experimental: field(
    section({
      sandboxExecServer: field(Schema.Boolean.pipe(expecting("true or false")), {
        description:
          "S25: sandboxed processes through the app-server (`codex-harness exec`, chat's /exec, /ps, /logs, /kill), their output kept in a bounded buffer. Off: those refuse.",
        default: Defaults.appServer.experimental.sandboxExecServer
      })
    }),
    { description: "Experimental app-server features, each off unless turned on here." }
  )
})

export const Heartbeat = section({
  cronScratchPath: field(text, {
    description: "A file whose contents are appended to heartbeat prompts when it exists (relative to this file)."
  })
})

export const TurnContext = section({
  route: field(oneOf("native", "compatibility"), {
    description:
      '"native": the harness gives Codex its developer instructions (delivery, tools, profile files). "compatibility": only your own system prompt (systemPromptPath) is sent, in place of Codex\'s base instructions.',
    default: "native"
  }),
  systemPromptPath: field(text, {
    description: "The compatibility route's system prompt, a text file (relative to this file); read at most 64 KiB."
  }),
  policyRestricted: field(Schema.Boolean.pipe(expecting("true or false")), {
    description: "Turns have no native filesystem: a snapshot of the workspace AGENTS.md goes with the instructions.",
    default: false
  }),
  channel: field(text, { description: "The name of where replies go, for the delivery instructions.", default: "terminal" }),
  memory: field(oneOf("tools", "inline", "off"), {
    description:
      '"tools": memory tools are served, MEMORY.md is not preloaded. "inline": MEMORY.md and BOOTSTRAP.md go with each turn. "off": neither. Default: "tools" when a memory_search or memory_get tool is served, else "inline".'
  }),
  skillsPath: field(text, {
    description:
      "A directory of skills (relative to this file): each subdirectory with a SKILL.md whose front matter has name and description is listed to the agent."
  }),
  adapterContext: field(text, { description: "Text about where the agent is talking (platform, people), given to every turn." })
})

export const Questions = section({
  timeoutSeconds: field(positiveInt, {
    description: "Seconds a question (request_user_input, an MCP elicitation) waits for an answer before it is cancelled.",
    default: Defaults.questions.timeoutSeconds
  })
})

export const Turns = section({
  timeoutSeconds: field(positiveInt, {
    description:
      "Seconds a turn may take in all; past it the turn is interrupted and reported failed, keeping the reply it completed (--timeout wins).",
    default: Defaults.turns.timeoutSeconds
  }),
  silenceSeconds: field(positiveInt, {
    description:
      "Seconds the model provider may send nothing while a turn waits on it (no tool running, no approval or question pending); past it the turn is interrupted and reported failed.",
    default: Defaults.turns.silenceSeconds
  })
})

// a name Codex accepts as a bare TOML key in `-c mcp_servers.<name>=...`
const mcpServerName = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/))

export const McpServer = section({
  command: Schema.propertySignature(text).annotations({ description: "The program Codex starts (stdio MCP server)." }),
  args: field(Schema.Array(Schema.String).pipe(expecting("an array of strings")), { description: "Its arguments." }),
  env: field(Schema.Record({ key: Schema.String, value: Schema.String }).pipe(expecting("an object of strings")), {
    description: "Extra environment variables for it."
  }),
  defaultToolsApprovalMode: field(oneOf("approve", "prompt"), {
    description: '"approve" runs its tools without Codex asking for approval of each call; default: Codex asks (per the approval policy).'
  })
})

export const Supervision = section({
  enabled: field(Schema.Boolean.pipe(expecting("true or false")), {
    description:
      "Native thread supervision (`threads`, supervised chats). Off: every threads command and every supervised chat's turn is refused. CODEX_HARNESS_SUPERVISION=off wins.",
    default: Defaults.supervision.enabled
  }),
  codexHome: field(text, {
    description:
      "The CODEX_HOME whose native threads are supervised, relative to this file (--supervision-home and $CODEX_HARNESS_SUPERVISION_HOME win). Default: your own ($CODEX_HOME, else ~/.codex)."
  })
})

// "<name>@<marketplace>", as Codex's plugin/installed lists plugin ids
const pluginId = Schema.String.pipe(Schema.pattern(/^[^@\s]+@[^@\s]+$/), expecting('a plugin id "<name>@<marketplace>"'))

export const AppsPlugin = section({
  allow: field(Schema.Array(text).pipe(expecting("an array of app ids")), {
    description: "The app ids this plugin may contribute to a native thread; any other app of it stays off."
  })
})

export const Apps = section({
  plugins: field(Schema.Record({ key: pluginId, value: AppsPlugin }).pipe(expecting("an object", false)), {
    description:
      'Connected apps a native thread may use, per plugin id ("<name>@<marketplace>"); an app is admitted only when allowed here and listed by that plugin\'s own details.'
  }),
  disabledPlugins: field(Schema.Array(pluginId).pipe(expecting("an array of plugin ids", false)), {
    description: "Plugin ids whose apps stay off on every native thread, whatever account-wide app access says."
  }),
  snapshotTtlSeconds: field(positiveInt, { description: "Seconds a plugin/installed snapshot is reused per runtime and workspace.", default: 300 }),
  readyTimeoutSeconds: field(positiveInt, {
    description: "Seconds the check waits for a new thread's codex_apps server before its one app/installed.",
    default: 10
  })
})

export const Serve = section({
  maxRequestBytes: field(
    Schema.Number.pipe(
      Schema.filter((n) => Number.isSafeInteger(n) && n >= maxRequestBytesRange.min && n <= maxRequestBytesRange.max, {
        jsonSchema: { type: "integer", minimum: maxRequestBytesRange.min, maximum: maxRequestBytesRange.max }
      }),
      expecting(`an integer from ${maxRequestBytesRange.min} to ${maxRequestBytesRange.max}`)
    ),
    {
      description:
        "The largest control request serve reads: a POST /rpc body (larger: 413) and a WebSocket message (larger: the socket closes with 1009). --max-request-bytes wins.",
      default: Defaults.serve.maxRequestBytes
    }
  )
})

export const HarnessConfig = section({
  $schema: field(text, { description: "The JSON Schema for editors (`codex-harness config schema`); ignored by the harness." }),
  model: field(text, { description: "Model to ask Codex for (--model wins)." }),
  providerUrl: field(httpUrl, {
    description:
      "An OpenAI Responses API base URL, e.g. http://127.0.0.1:8080/v1 (--provider-url wins). Without it Codex uses your own configuration and login."
  }),
  providerKeyEnv: field(envVarName, {
    description:
      "With a provider URL: the environment variable its key is read from, e.g. MY_PROVIDER_KEY (--provider-key-env wins). Default: OPENAI_API_KEY, else CODEX_HARNESS_PROVIDER_KEY. No command the agent runs sees it."
  }),
  approvalPolicy: field(ApprovalPolicy, {
    description: "When Codex asks before acting (--approval-policy wins).",
    default: Defaults.approvalPolicy
  }),
  sandbox: field(Sandbox, {
    description: "What the agent's commands may touch (--sandbox wins).",
    default: Defaults.sandbox
  }),
  approvalsReviewer: field(ApprovalsReviewer, {
    description: "Who reviews approval requests; unset: Codex's own configuration decides."
  }),
  serviceTier: field(text, { description: "Service tier to ask Codex for; unset: Codex's own configuration decides." }),
  codexHome: field(text, {
    description:
      "CODEX_HOME for the app-server, relative to this file (--codex-home wins). Default: the agent's own, <state-dir>/codex-home."
  }),
  userCodexHome: field(Schema.Boolean.pipe(expecting("true or false")), {
    description:
      "true: new sessions' app-server runs in your own CODEX_HOME ($CODEX_HOME, else ~/.codex), with its config, login and threads, instead of the agent's own (--user-codex-home; codexHome wins). Default: false."
  }),
  codexBin: field(text, { description: "Path to a codex executable, relative to this file (--codex-bin wins)." }),
  messages: field(Messages, { description: "Reply delivery and steering." }),
  nativeHookRelay: field(NativeHookRelay, { description: "The per-thread Codex hook configuration the harness injects." }),
  compaction: field(Compaction, { description: "Manual (native) compaction." }),
  approvals: field(Approvals, { description: "Approval memory." }),
  appServer: field(AppServer, { description: "The codex app-server connection." }),
  heartbeat: field(Heartbeat, { description: "Heartbeat turns." }),
  turnContext: field(TurnContext, { description: "What every turn is told besides its prompt (route, memory, skills, adapter context)." }),
  questions: field(Questions, { description: "Questions Codex and MCP servers ask during a turn." }),
  turns: field(Turns, { description: "Bounds on a turn's time." }),
  supervision: field(Supervision, { description: "Supervision of the native Codex threads of a CODEX_HOME." }),
  mcpServers: field(Schema.Record({ key: mcpServerName, value: McpServer }).pipe(expecting("an object", false)), {
    description: "MCP servers the app-server starts, by name; their tools appear to the agent as mcp__<name>."
  }),
  apps: field(Apps, { description: "Connected apps (native Codex apps owned by plugins) admitted to native threads; off when absent." }),
  serve: field(Serve, { description: "`codex-harness serve`: bounds on what a client sends." })
}).annotations({
  title: "codex-harness config",
  description: "The codex-harness config file (JSON). Every key is optional; unknown keys are an error."
})
export type HarnessConfig = typeof HarnessConfig.Type
