// The settings a harness runs with (what the CLI builds from flags, the config file and the environment, and what an
// embedder passes to the Live layer), and the tag they are provided under. Data only: what a setting means is decided
// by the room that reads it. A session's runtime (app-server, CODEX_HOME, provider) is recorded with the session; these
// settings only choose it for new sessions (see session/SessionRuntime).
import { Context, type Duration, type LogLevel } from "effect"
import type { NativeHookEvent } from "../../schemas/config.js"
import type { AskForApproval, SandboxMode } from "../../schemas/protocol.js"

export type VisibleReplies = "automatic" | "message_tool"

/** S6: "native" gives a Codex turn the harness's developer instructions; "compatibility" keeps the gateway's own prompt. */
export type Route = "native" | "compatibility"

export interface McpServer {
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  /** "approve" skips Codex's per-call approval of the server's tools */
  readonly defaultToolsApprovalMode?: "approve" | "prompt" | undefined
}

export interface SupervisionSettings {
  /** supervision is opt-in for embedders: without `enabled` every supervision call fails closed */
  readonly enabled: boolean
  /** CODEX_HOME of the supervision app-server; default: the user's own ($CODEX_HOME, else ~/.codex) */
  readonly codexHome?: string | undefined
  /** a Responses API server for that app-server; default: its own configuration and login */
  readonly providerUrl?: string | undefined
  /** with `providerUrl`: the model that app-server is configured with */
  readonly model?: string | undefined
  /** the variable that app-server's provider key is read from (see HarnessSettings.providerKeyEnv) */
  readonly providerKeyEnv?: string | undefined
  /** how long the idle discovery client is kept for the next poll (default 2 minutes) */
  readonly idleTimeToLive?: Duration.DurationInput | undefined
  readonly codexBin?: string | undefined
  readonly requestTimeout?: Duration.DurationInput | undefined
  /** what a refusal says when `enabled` is false (how to turn it on, in the embedder's words) */
  readonly disabledReason?: string | undefined
}

/** S2-S5: connected apps a native thread may use; absent (or empty): no admission step at all. */
export interface AppsSettings {
  /** plugin id ("<name>@<marketplace>") -> the app ids it may contribute */
  readonly plugins: Readonly<Record<string, { readonly allow: ReadonlyArray<string> }>>
  /** plugin ids whose apps stay off whatever account-wide access says */
  readonly disabledPlugins: ReadonlyArray<string>
  /** how long a plugin/installed snapshot is reused per (runtime, workspace); default 5 minutes */
  readonly snapshotTtl?: Duration.DurationInput | undefined
  /** how long the check waits for the thread's codex_apps server before its app/installed; default 10 s */
  readonly readyTimeout?: Duration.DurationInput | undefined
}

export interface HarnessSettings {
  /** where session files (and the agent's own CODEX_HOME, `codex-home`) live */
  readonly stateDir: string
  /** the workspace the agent works in */
  readonly cwd: string
  /**
   * CODEX_HOME for new sessions' app-server. Default: the agent's own, `<stateDir>/codex-home` (S14: ordinary turns stay
   * agent-scoped; only supervision's discovery reads the user's home)
   */
  readonly codexHome?: string | undefined
  /**
   * true: new sessions' app-server runs in the user's own CODEX_HOME ($CODEX_HOME, else ~/.codex), with its
   * configuration, login and threads, instead of the agent's; an explicit `codexHome` wins over it
   */
  readonly userCodexHome?: boolean | undefined
  readonly codexBin?: string | undefined
  /** any OpenAI Responses API server for new sessions; without it Codex uses the user's own configuration and login */
  readonly providerUrl?: string | undefined
  /**
   * the environment variable the provider key is read from (a name, never the key); default: $OPENAI_API_KEY, else
   * $CODEX_HARNESS_PROVIDER_KEY. No command the agent runs sees it (see appserver/CodexArgs.shellEnvironmentArgs).
   */
  readonly providerKeyEnv?: string | undefined
  /** the default model; a session's own choice (`/model`, `--model`) wins over it */
  readonly model?: string | undefined
  readonly approvalPolicy: AskForApproval
  readonly sandbox: SandboxMode
  readonly approvalsReviewer?: "user" | "auto_review" | undefined
  readonly serviceTier?: string | undefined
  /** S18: "automatic" delivers the final text; "message_tool" only what the agent sends with message(action=send) */
  readonly visibleReplies?: VisibleReplies | undefined
  /** S6: "compatibility" keeps the gateway's own prompt: no harness developer instructions */
  readonly route?: Route | undefined
  /** S8: turns without a native filesystem environment get the AGENTS.md snapshot as developer instructions */
  readonly policyRestricted?: boolean | undefined
  /** the name of the channel replies go to, for the delivery instructions */
  readonly channel?: string | undefined
  /** S6: the compatibility route's system prompt file, sent as the thread's base instructions */
  readonly systemPromptPath?: string | undefined
  /** S9: a directory of skills (subdirectories with a SKILL.md) listed to every turn */
  readonly skillsPath?: string | undefined
  /** S9: how turns reach MEMORY.md; default: tools when memory tools are served, else inline */
  readonly memoryMode?: "tools" | "inline" | "off" | undefined
  /** S9: adapter context given to every turn */
  readonly adapterContext?: string | undefined
  /** the heartbeat monitor's cron scratch file, appended to heartbeat prompts when present (S19) */
  readonly cronScratchPath?: string | undefined
  readonly requestTimeout?: Duration.DurationInput | undefined
  readonly idleTimeToLive?: Duration.DurationInput | undefined
  /**
   * a running app-server new sessions use over a WebSocket (`ws://` on loopback, or `wss://`) instead of one the harness
   * starts; codexHome, codexBin, providerUrl and mcpServers then do not apply to them (that app-server has its own)
   */
  readonly appServerUrl?: string | undefined
  /** the variable that app-server's bearer token is read from (a name; default CODEX_HARNESS_APP_SERVER_TOKEN) */
  readonly appServerTokenEnv?: string | undefined
  /** S25: `appServer.experimental.sandboxExecServer`; sandboxed processes (src/processes) refuse unless it is true */
  readonly sandboxExecServer?: boolean | undefined
  /** S35: what messages arriving during a run do, and the steer batching window */
  readonly queueMode?: "steer" | "followup" | "collect" | undefined
  readonly quietWindow?: Duration.DurationInput | undefined
  /** S20: the native hooks relayed per thread; default: all four, without PermissionRequest unless the policy is never */
  readonly nativeHookEvents?: ReadonlyArray<NativeHookEvent> | undefined
  /** S28: how long and how many allow-always decisions are kept */
  readonly allowAlwaysWindow?: Duration.DurationInput | undefined
  readonly allowAlwaysMaxEntries?: number | undefined
  /** S33: a question nobody answers is cancelled after this long (default 10 minutes) */
  readonly questionTimeout?: Duration.DurationInput | undefined
  /** MCP servers the app-server starts (stdio), by name; their tools are advertised as `mcp__<name>` */
  readonly mcpServers?: Readonly<Record<string, McpServer>> | undefined
  /** a turn's deadline (interrupted and reported failed past it) and how long its provider may stay silent */
  readonly turnTimeout?: Duration.DurationInput | undefined
  readonly providerSilence?: Duration.DurationInput | undefined
  /** S37: manual compaction timeout and interrupt grace */
  readonly compactionTimeout?: Duration.DurationInput | undefined
  readonly interruptGrace?: Duration.DurationInput | undefined
  /** S14-S17: native thread supervision (discovery, continue as branch, archive guard); off when absent */
  readonly supervision?: SupervisionSettings | undefined
  /** S2-S5: connected-apps admission; off when absent */
  readonly apps?: AppsSettings | undefined
  /**
   * The least severe of the harness's own log lines that reach the app's logger (each under the `codex-harness` log
   * span); default: whatever the app's `Logger.minimumLogLevel` lets through (the harness logs routine steps at Debug)
   */
  readonly logLevel?: LogLevel.Literal | undefined
}

export class Settings extends Context.Tag("codex-harness/HarnessSettings")<Settings, HarnessSettings>() {}
