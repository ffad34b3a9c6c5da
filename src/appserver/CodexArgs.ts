// Pure builders for the codex command-line overrides the harness passes to `codex app-server`.

/** Name of the model provider the harness defines when pointed at a Responses server with --provider-url. */
export const providerId = "codex_harness"
/** Environment variable carrying the provider key; a local server ignores it but Codex wants one set. */
export const providerKeyEnv = "CODEX_HARNESS_PROVIDER_KEY"
/** Model requested from a --provider-url server when none is chosen. */
export const defaultLocalModel = "local-model"

const tomlString = (value: string) => JSON.stringify(value) // a JSON string is a valid TOML basic string

/** `-c` overrides that make Codex use any OpenAI Responses API server at `baseUrl` (plain HTTP, no WebSocket). */
export const providerArgs = (baseUrl: string, model: string | undefined): ReadonlyArray<string> => [
  "-c",
  `model_provider=${tomlString(providerId)}`,
  "-c",
  `model_providers.${providerId}={name=${tomlString("codex-harness provider")},base_url=${tomlString(
    baseUrl
  )},wire_api="responses",env_key=${tomlString(providerKeyEnv)},request_max_retries=1,stream_max_retries=1}`,
  "-c",
  `model=${tomlString(model ?? defaultLocalModel)}`
]

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

/** The environment the provider reads its key from; a local server ignores the key, but Codex wants one set. */
export const providerEnv = (key?: string | undefined): Readonly<Record<string, string>> => ({
  [providerKeyEnv]: key ?? "codex-harness-local"
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
    `instead ($${providerKeyEnv})`
}
