// The options the commands accept: names, values and descriptions only, so `--help` and parsing load nothing else.
// They come in groups by what they steer, and each command takes only the groups its implementation reads, so a flag
// that would do nothing there (`demo --json`, `threads list --sandbox`) is an unknown option (argv.ts), not ignored.
// How they become HarnessSettings is settings.ts, loaded with a command's implementation.
import { Options } from "@effect/cli"

/** where the agent works */
export const workspace = {
  cwd: Options.text("cwd").pipe(
    Options.withAlias("C"),
    Options.withDescription("workspace directory for the agent (default: the current directory)"),
    Options.optional
  )
}

/** where the harness keeps its state, and the config file (which defaults to a file in it) */
export const state = {
  stateDir: Options.text("state-dir").pipe(
    Options.withDescription("where sessions live (default: $CODEX_HARNESS_HOME or ~/.codex-harness)"),
    Options.optional
  ),
  config: Options.text("config").pipe(
    Options.withDescription("config file (default: <state-dir>/config.json, if it exists)"),
    Options.optional
  )
}

/** which codex runs, and with which CODEX_HOME */
export const codex = {
  codexHome: Options.text("codex-home").pipe(
    Options.withDescription("CODEX_HOME for a new session's app-server (default: the agent's own, <state-dir>/codex-home)"),
    Options.optional
  ),
  userCodexHome: Options.boolean("user-codex-home").pipe(
    Options.withDescription("run a new session's app-server in your own CODEX_HOME ($CODEX_HOME, else ~/.codex), with its config, login and threads")
  ),
  codexBin: Options.text("codex-bin").pipe(Options.withDescription("path to a codex executable"), Options.optional)
}

/** an app-server that is already running, instead of one the harness starts */
export const appServer = {
  appServer: Options.text("app-server").pipe(
    Options.withDescription(
      "a running `codex app-server --listen ws://...` for new sessions: ws://127.0.0.1:PORT (or an SSH forward to one), or wss://; its token is read from $CODEX_HARNESS_APP_SERVER_TOKEN, never from the command line"
    ),
    Options.optional
  )
}

/** the model a turn asks for (settings.ts leaves it out: it is passed per turn) */
export const model = {
  model: Options.text("model").pipe(Options.withAlias("m"), Options.withDescription("model to ask Codex for"), Options.optional)
}

/** which Responses API the app-server talks to */
export const provider = {
  providerUrl: Options.text("provider-url").pipe(
    Options.withDescription("an OpenAI Responses API base URL, e.g. http://127.0.0.1:8080/v1"),
    Options.optional
  ),
  providerKeyEnv: Options.text("provider-key-env").pipe(
    Options.withDescription("the environment variable the --provider-url key is in, by name (default: OPENAI_API_KEY); the agent's commands never see it"),
    Options.optional
  )
}

/** what a turn may do, and for how long */
export const policy = {
  // optional (no default here): an unset flag lets the config file's value through
  approvalPolicy: Options.choice("approval-policy", ["untrusted", "on-request", "never"]).pipe(
    Options.withDescription("Codex approval policy (default: never)"),
    Options.optional
  ),
  sandbox: Options.choice("sandbox", ["read-only", "workspace-write", "danger-full-access"]).pipe(
    Options.withDescription("Codex sandbox (default: read-only)"),
    Options.optional
  ),
  timeout: Options.integer("timeout").pipe(
    Options.withDescription("seconds a turn may take in all before it is interrupted (default: the config's turns.timeoutSeconds, 3600)"),
    Options.optional
  )
}

/** the CODEX_HOME whose native threads are supervised */
export const supervision = {
  supervisionHome: Options.text("supervision-home").pipe(
    Options.withDescription("CODEX_HOME whose native threads `threads` supervises (default: $CODEX_HARNESS_SUPERVISION_HOME, else your own)"),
    Options.optional
  )
}

/** machine-readable output */
export const output = {
  json: Options.boolean("json").pipe(Options.withDescription("print one JSON event per line"))
}

/** through a running `codex-harness serve` (connect.ts) */
export const connection = {
  connect: Options.text("connect").pipe(
    Options.withDescription(
      "run through the `codex-harness serve` at this URL (ws://HOST:PORT/rpc, wss://..., ws+unix:PATH:/rpc); without it, the serve running for the state dir is used when there is one; its token comes from $CODEX_HARNESS_TOKEN, else the state dir's serve.token"
    ),
    Options.optional
  )
}

/** how approval requests during a turn are answered */
export const approvals = {
  approvals: Options.choice("approvals", ["deny", "allow"]).pipe(
    Options.withDescription("how Codex's approval requests are answered (each decision is printed on stderr)"),
    Options.withDefault("deny" as const)
  )
}

/** Everything, for the commands that run turns (`run`, `chat`); in the order their help has always listed it. */
export const global = {
  cwd: workspace.cwd,
  stateDir: state.stateDir,
  codexHome: codex.codexHome,
  userCodexHome: codex.userCodexHome,
  model: model.model,
  providerUrl: provider.providerUrl,
  providerKeyEnv: provider.providerKeyEnv,
  approvalPolicy: policy.approvalPolicy,
  sandbox: policy.sandbox,
  config: state.config,
  codexBin: codex.codexBin,
  appServer: appServer.appServer,
  supervisionHome: supervision.supervisionHome,
  timeout: policy.timeout,
  json: output.json,
  approvals: approvals.approvals
}

export type GlobalOptions = {
  readonly [K in keyof typeof global]: (typeof global)[K] extends Options.Options<infer A> ? A : never
}

/** `--config PATH`: a named file must exist; without it `<state-dir>/config.json` is read when present. */
export const configOption = state.config
