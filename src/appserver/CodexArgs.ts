// Pure builders for the codex command-line overrides the harness passes to `codex app-server`. Plain TypeScript with no
// Effect import: the bin's early spawn of a cold `run`'s app-server (cli/prelaunch.ts) builds the same command line with
// them before the CLI is loaded.

/** Name of the model provider the harness defines when pointed at a Responses server with --provider-url. */
export const providerId = "codex_harness"
/** The variable the provider key is read from when none is named (--provider-key-env, `providerKeyEnv`). */
export const providerKeyEnv = "OPENAI_API_KEY"
/** Where the key was read from before --provider-key-env: still read when no variable is named and $OPENAI_API_KEY is empty. */
export const legacyProviderKeyEnv = "CODEX_HARNESS_PROVIDER_KEY"
/** The key Codex reads for its own API-key login. */
export const codexApiKeyEnv = "CODEX_API_KEY"
/** What a provider gets when no key is set: a local server needs none, but Codex refuses a provider whose variable is empty. */
export const placeholderProviderKey = "codex-harness-local"
/** Model requested from a --provider-url server when none is chosen. */
export const defaultLocalModel = "local-model"

const tomlString = (value: string) => JSON.stringify(value) // a JSON string is a valid TOML basic string

/**
 * A name a POSIX shell can export. Anything else is refused: the name is written into Codex's config (`env_key`, the
 * shell policy's exclude list, where `*` and `?` would be patterns), and a value with `-` or `.` in it is more likely the
 * key itself than the name of its variable.
 */
export const isEnvName = (name: string): boolean => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)

/** Why `name` cannot name the provider key's variable, in one line that never repeats it (it may be the key), or undefined. */
export const checkProviderKeyEnv = (name: string): string | undefined =>
  isEnvName(name)
    ? undefined
    : "expected the name of an environment variable (letters, digits and _, not starting with a digit), not the key itself"

const envName = (name: string): string => {
  if (!isEnvName(name)) throw new Error(`invalid environment variable name for the provider key: ${checkProviderKeyEnv(name)}`)
  return name
}

/**
 * `-c` overrides that make Codex use any OpenAI Responses API server at `baseUrl` (plain HTTP, no WebSocket), sending the
 * key it finds in `$keyEnv` as its bearer token. Only the variable's name is on the command line, never the key: every
 * user of the machine can read a command line.
 */
export const providerArgs = (baseUrl: string, model: string | undefined, keyEnv: string = providerKeyEnv): ReadonlyArray<string> => [
  "-c",
  `model_provider=${tomlString(providerId)}`,
  "-c",
  `model_providers.${providerId}={name=${tomlString("codex-harness provider")},base_url=${tomlString(
    baseUrl
  )},wire_api="responses",env_key=${tomlString(envName(keyEnv))},request_max_retries=1,stream_max_retries=1}`,
  "-c",
  `model=${tomlString(model ?? defaultLocalModel)}`
]

/**
 * The variables the agent's commands never see: the provider key's (named or default), the one it was read from before
 * --provider-key-env, and Codex's own API-key variable. Unique, in a stable order.
 */
export const secretEnvNames = (keyEnv?: string | undefined): ReadonlyArray<string> => [
  ...new Set([envName(keyEnv ?? providerKeyEnv), providerKeyEnv, legacyProviderKeyEnv, codexApiKeyEnv, ...harnessSecretEnvNames])
]

/**
 * The harness's own secrets that may be in its environment: the serve token a client reads, and a cluster runner's
 * PostgreSQL password (`serve --cluster` also removes it from its environment once read; this is the second guard).
 */
export const harnessSecretEnvNames = ["CODEX_HARNESS_TOKEN", "CODEX_HARNESS_APP_SERVER_TOKEN", "PGPASSWORD", "PGPASSFILE"] as const

/**
 * `-c` override of Codex's `shell_environment_policy` that keeps the harness's secrets out of every command the agent
 * runs: the app-server inherits the harness's environment (the provider key has to be in it for Codex to send it), and
 * by default Codex hands that whole environment to the agent's shell, where an `env` call returns it to the model.
 * Only `exclude` is set, as a dotted key: Codex merges it into the config's table, so the rest of the policy (`inherit`,
 * `set`, `include_only`, whether Codex's default `*KEY*`/`*SECRET*`/`*TOKEN*` excludes apply) stays what the CODEX_HOME's
 * config says, and every other variable still reaches the agent as it does today. Turning the default excludes on
 * instead would also hide variables the user's commands rely on (GH_TOKEN for gh, say). The list itself replaces the
 * config's `exclude`, so `userExcludes`, that config's own list (CodexConfigToml.readShellExcludes), comes first in it:
 * what the user hid stays hidden. Exclude patterns match names without case.
 */
export const shellEnvironmentArgs = (
  keyEnv?: string | undefined,
  userExcludes: ReadonlyArray<string> = []
): ReadonlyArray<string> => excludeArgs([...userExcludes, ...secretEnvNames(keyEnv)])

/** The `-c` pair that sets `shell_environment_policy.exclude` to these patterns, each once, in order. */
export const excludeArgs = (patterns: ReadonlyArray<string>): ReadonlyArray<string> => [
  "-c",
  `shell_environment_policy.exclude=[${[...new Set(patterns)].map(tomlString).join(",")}]`
]

/**
 * The provider key: `$keyEnv` when a variable is named; otherwise `$OPENAI_API_KEY`, else `$CODEX_HARNESS_PROVIDER_KEY`
 * (where it was read from before). Unset and empty are the same; undefined when there is none. Pure: `lookup` reads the
 * environment.
 */
export const providerKeyFrom = (lookup: (name: string) => string | undefined, keyEnv?: string | undefined): string | undefined => {
  const value = (name: string) => {
    const found = lookup(name)
    return found === undefined || found === "" ? undefined : found
  }
  return keyEnv !== undefined ? value(keyEnv) : value(providerKeyEnv) ?? value(legacyProviderKeyEnv)
}

/**
 * The environment the app-server gets on top of the harness's own: the key in the variable `env_key` names. With no key
 * set, a placeholder, because a local server ignores the key but Codex refuses a provider whose variable is unset.
 */
export const providerEnv = (key?: string | undefined, keyEnv: string = providerKeyEnv): Readonly<Record<string, string>> => ({
  [envName(keyEnv)]: key ?? placeholderProviderKey
})

/** `-c` overrides that declare stdio MCP servers (names must be TOML bare keys). */
export const mcpServerArgs = (
  servers: Readonly<
    Record<string, {
      readonly command: string
      readonly args?: ReadonlyArray<string> | undefined
      readonly env?: Readonly<Record<string, string>> | undefined
      readonly defaultToolsApprovalMode?: string | undefined
    }>
  >
): ReadonlyArray<string> =>
  Object.entries(servers).flatMap(([name, server]) => {
    if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new Error(`invalid MCP server name: ${JSON.stringify(name)}`)
    const fields = [
      `command=${tomlString(server.command)}`,
      `args=[${(server.args ?? []).map(tomlString).join(",")}]`,
      ...(server.env !== undefined
        ? [`env={${Object.entries(server.env).map(([k, v]) => `${tomlString(k)}=${tomlString(v)}`).join(",")}}`]
        : []),
      ...(server.defaultToolsApprovalMode !== undefined
        ? [`default_tools_approval_mode=${tomlString(server.defaultToolsApprovalMode)}`]
        : [])
    ]
    return ["-c", `mcp_servers.${name}={${fields.join(",")}}`]
  })

/** Query parameters that carry a credential, compared without case, `-` or `_` (so `API-Key` and `access_token` too). */
export const credentialParams: ReadonlyArray<string> = ["key", "api_key", "apikey", "token", "access_token", "secret", "password"]
const normalized = (name: string) => name.toLowerCase().replace(/[-_]/g, "")
const isCredentialParam = (name: string) => credentialParams.some((p) => normalized(p) === normalized(name))

/** A URL as it may be shown: userinfo and credential-like query values replaced by `***`. Pure. */
export const redactUrl = (value: string): string => {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {
    url = undefined
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
    // not an http(s) URL: still never echo what looks like `user:secret@` or `?key=…`
    return value
      .replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/?#]*@/i, "$1***@")
      .replace(/([?&])([^=&#]*)=[^&#]*/g, (whole, sep: string, name: string) => (isCredentialParam(name) ? `${sep}${name}=***` : whole))
  }
  const userinfo = url.username !== "" || url.password !== "" ? "***@" : ""
  const query = [...url.searchParams.entries()]
    .map(([k, v]) => `${encodeURIComponent(k)}=${isCredentialParam(k) ? "***" : encodeURIComponent(v)}`)
    .join("&")
  return `${url.protocol}//${userinfo}${url.host}${url.pathname}${query !== "" ? `?${query}` : ""}${url.hash}`
}

/**
 * A --provider-url must be an absolute http(s) URL without a credential in it: a URL is printed, logged, recorded with
 * the session and passed on Codex's command line, where every user of the machine can read it. Returns a one-line
 * reason when it is refused, with the credential shown as `***`.
 */
export const checkProviderUrl = (value: string): string | undefined => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return `not a URL: ${redactUrl(value)}`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `must be http or https: ${redactUrl(value)}`
  const param = [...url.searchParams.keys()].find(isCredentialParam)
  const what = url.username !== "" || url.password !== ""
    ? "a user name or password"
    : param !== undefined
    ? `a ${param} parameter`
    : undefined
  if (what === undefined) return undefined
  return `${redactUrl(value)} carries a credential (${what}); leave it out of the URL and put the key in the environment ` +
    `instead ($${providerKeyEnv}, or the variable --provider-key-env names)`
}

/** The variable whose lines are `-c` overrides for every app-server the harness starts (appServerConfigArgs). */
export const appServerConfigEnv = "CODEX_HARNESS_APP_SERVER_CONFIG"

/**
 * The `-c` pairs `$CODEX_HARNESS_APP_SERVER_CONFIG` asks for: one `key=value` per line (blank lines skipped), exactly as
 * `codex -c` takes them, e.g. `features.shell_snapshot=false`. Either the pairs, or the one-line reason a line is not
 * such a pair (a string), never a silent default. They go before the harness's own (appServerArgv): where both set a
 * key, the harness's wins, so this cannot undo what the harness needs (the secrets' exclude list, the thread unload).
 */
export const appServerConfigArgs = (env: Readonly<Record<string, string | undefined>>): ReadonlyArray<string> | string => {
  const lines = (env[appServerConfigEnv] ?? "").split("\n").map((line) => line.trim())
  const pairs: Array<string> = []
  for (const [index, line] of lines.entries()) {
    if (line === "") continue
    const equals = line.indexOf("=")
    if (equals <= 0 || line.slice(0, equals).trim() === "") {
      return `$${appServerConfigEnv} line ${index + 1}: expected key=value (a codex -c override), got ${JSON.stringify(line.slice(0, 60))}`
    }
    pairs.push("-c", line)
  }
  return pairs
}

/**
 * The arguments `codex app-server` is spawned with (after the executable): the wrapper script's when codex runs through
 * node, then the user's overrides (`user`, appServerConfigArgs: first, so the harness's own win), the harness's `-c`
 * overrides, the settings' (`args`: provider, MCP servers) and the shell policy's (`hidden`, excludeArgs).
 * `thread_unload_delay_secs=0`: a thread this connection unsubscribes is unloaded at once, so reopening it with other
 * thread config (an internal turn's project-doc switch, S8) takes effect: Codex ignores the config of a resume while the
 * thread is loaded.
 */
export const appServerArgv = (
  prefixArgs: ReadonlyArray<string>,
  args: ReadonlyArray<string>,
  hidden: ReadonlyArray<string>,
  user: ReadonlyArray<string> = []
): ReadonlyArray<string> => [...prefixArgs, ...user, "-c", "thread_unload_delay_secs=0", ...args, ...hidden, "app-server"]
