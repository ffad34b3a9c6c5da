// Pure rules for session runtimes: which runtime a new session of some settings gets, the app-server client spec a
// recorded runtime is leased with, and a supervised chat's private connection. The service that applies them to a
// session is SessionRuntime; nothing here reads a file or spawns anything.
import { Effect } from "effect"
import * as path from "node:path"
import type { SessionRuntime } from "../../schemas/session.js"
import * as AppServerUrl from "../appserver/AppServerUrl.js"
import * as CodexArgs from "../appserver/CodexArgs.js"
import type { ClientSpec } from "../appserver/ClientPool.js"
import type { HarnessSettings, SupervisionSettings } from "../config/Settings.js"
import { SupervisionDisabled } from "./errors.js"

/** The pool key of an ordinary runtime: one shared client per (CODEX_HOME, provider). */
export const ordinaryPoolKey = (codexHome: string, providerUrl: string | undefined): string =>
  `stdio|${codexHome}|${providerUrl ?? "codex"}`

/** The agent-scoped CODEX_HOME ordinary sessions get by default (S14): the harness's own, under its state dir. */
export const agentCodexHome = (stateDir: string): string => path.join(stateDir, "codex-home")

/** The pool key of a remote runtime: one shared client per app-server URL. */
export const remotePoolKey = (url: string): string => `websocket|${url}`

/** A runtime on an app-server the harness did not start (S37: its bindings are detached when its connection ends). */
export const isRemote = (runtime: SessionRuntime): boolean => runtime.transport === "websocket"

/** The pool key of a supervised chat's private connection. */
export const supervisedPoolKey = (sessionId: string): string => `supervision:${sessionId}`

/**
 * The runtime a new session of these settings gets; `userHome` is the user's own CODEX_HOME. A local app-server runs
 * in the agent's own home (`<stateDir>/codex-home`) unless the settings name one or opt into the user's (S14). Pure.
 */
export const runtimeFor = (settings: HarnessSettings, userHome: string): SessionRuntime => {
  if (settings.appServerUrl !== undefined) {
    // the remote app-server has its own CODEX_HOME and provider; its CODEX_HOME is filled in from `initialize` at lease
    const url = normaliseUrl(settings.appServerUrl)
    return { transport: "websocket", url, codexHome: "", poolKey: remotePoolKey(url), locked: false }
  }
  const providerUrl = settings.providerUrl
  const codexHome = path.resolve(
    settings.codexHome ?? (settings.userCodexHome === true ? userHome : agentCodexHome(settings.stateDir))
  )
  return {
    transport: "stdio",
    codexHome,
    ...(providerUrl !== undefined ? { providerUrl } : {}),
    poolKey: ordinaryPoolKey(codexHome, providerUrl),
    locked: false
  }
}

/** The client an ordinary runtime is leased with: its own home and provider, the settings' binary and MCP servers. Pure. */
export const clientSpecFor = (runtime: SessionRuntime, settings: HarnessSettings, providerKey?: string | undefined): ClientSpec =>
  runtime.transport === "websocket"
    ? { url: runtime.url, tokenEnv: settings.appServerTokenEnv, requestTimeout: settings.requestTimeout }
    : localClientSpec(runtime, settings, providerKey)

const localClientSpec = (runtime: SessionRuntime, settings: HarnessSettings, providerKey?: string | undefined): ClientSpec => ({
  codexBin: settings.codexBin,
  codexHome: runtime.codexHome,
  args: [
    ...(runtime.providerUrl !== undefined ? CodexArgs.providerArgs(runtime.providerUrl, settings.model, settings.providerKeyEnv) : []),
    ...CodexArgs.mcpServerArgs(settings.mcpServers ?? {})
  ],
  hiddenEnv: CodexArgs.secretEnvNames(settings.providerKeyEnv),
  env: runtime.providerUrl !== undefined ? CodexArgs.providerEnv(providerKey, settings.providerKeyEnv) : undefined,
  requestTimeout: settings.requestTimeout
})

/** The CODEX_HOME supervision uses, or SupervisionDisabled; `userHome` is the user's own CODEX_HOME. */
export const supervisionHome = (
  settings: SupervisionSettings | undefined,
  userHome: string
): Effect.Effect<string, SupervisionDisabled> =>
  settings?.enabled === true
    ? Effect.succeed(path.resolve(settings.codexHome ?? userHome))
    : Effect.fail(
      new SupervisionDisabled({ reason: settings?.disabledReason ?? "set supervision.enabled to use native thread supervision" })
    )

/** The client spec of a supervision connection (discovery and private branch connections alike). */
export const supervisionClientSpec = (
  settings: SupervisionSettings | undefined,
  userHome: string,
  providerKey?: string | undefined
): Effect.Effect<ClientSpec, SupervisionDisabled> =>
  Effect.map(supervisionHome(settings, userHome), (codexHome) => ({
    codexBin: settings?.codexBin,
    // explicit even for the user's own home, so a recorded binding can be compared with it
    codexHome,
    args: settings?.providerUrl !== undefined ? CodexArgs.providerArgs(settings.providerUrl, settings.model, settings.providerKeyEnv) : [],
    hiddenEnv: CodexArgs.secretEnvNames(settings?.providerKeyEnv),
    env: settings?.providerUrl !== undefined ? CodexArgs.providerEnv(providerKey, settings.providerKeyEnv) : undefined,
    requestTimeout: settings?.requestTimeout
  }))

/** The runtime a supervised chat's binding records: its private connection under the supervision home. Pure. */
export const supervisedRuntime = (sessionId: string, codexHome: string, providerUrl: string | undefined): SessionRuntime => ({
  transport: "stdio",
  codexHome,
  ...(providerUrl !== undefined ? { providerUrl } : {}),
  poolKey: supervisedPoolKey(sessionId),
  locked: true
})

/** A URL as the runtime records it (the accepted form; one that is refused is kept as given, and refused at connect). */
export const normaliseUrl = (url: string): string => {
  const parsed = AppServerUrl.parse(url)
  return "endpoint" in parsed ? parsed.endpoint.url : url
}

/** How a runtime's app-server is named in notices and refusals. */
export const describeAppServer = (runtime: SessionRuntime): string =>
  runtime.transport === "websocket" ? `the app-server at ${runtime.url ?? "(no url)"}` : `a local app-server (CODEX_HOME ${runtime.codexHome})`

/** How a runtime is named in notices and refusals. */
export const describeProvider = (runtime: SessionRuntime): string => runtime.providerUrl ?? "Codex's own provider configuration"
