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

/** A --provider-url must be an absolute http(s) URL; returns a reason when it is not. */
export const checkProviderUrl = (value: string): string | undefined => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return `not a URL: ${value}`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `must be http or https: ${value}`
  return undefined
}
