// Pure rules of connected-apps admission (S2-S5): which plugins to read, which apps are provisionally admitted and why
// not, the deny-by-default thread config, and what a thread's app/installed answer must show. No I/O here; the
// service that applies them is AppAdmission.
import type { InstalledApp, PluginDetail, PluginInstalledResponse, PluginSummary } from "../../schemas/protocol.js"

export interface AppsSettings {
  /** plugin id ("<name>@<marketplace>") -> the app ids it may contribute */
  readonly plugins: Readonly<Record<string, { readonly allow: ReadonlyArray<string> }>>
  /** plugin ids whose apps stay off whatever account-wide access says (S5) */
  readonly disabledPlugins: ReadonlyArray<string>
}

export const hasAppsConfig = (apps: AppsSettings | undefined): apps is AppsSettings =>
  apps !== undefined && (Object.keys(apps.plugins).length > 0 || apps.disabledPlugins.length > 0)

export interface LocatedPlugin {
  readonly summary: PluginSummary
  readonly marketplaceName: string
  readonly marketplacePath: string | undefined
}

/** The configured plugin as the snapshot lists it, if it does. */
export const locate = (snapshot: PluginInstalledResponse, pluginId: string): LocatedPlugin | undefined => {
  for (const marketplace of snapshot.marketplaces) {
    const summary = marketplace.plugins.find((p) => p.id === pluginId)
    if (summary !== undefined) return { summary, marketplaceName: marketplace.name, marketplacePath: marketplace.path ?? undefined }
  }
  return undefined
}

/** The exact plugins worth a plugin/read: configured (allowed or disabled) and present in the snapshot. */
export const pluginsToRead = (apps: AppsSettings, snapshot: PluginInstalledResponse): ReadonlyArray<LocatedPlugin> => {
  const ids = [...new Set([...Object.keys(apps.plugins), ...apps.disabledPlugins])]
  return ids.flatMap((id) => {
    const located = locate(snapshot, id)
    return located === undefined ? [] : [located]
  })
}

export interface Decision {
  readonly pluginId: string
  readonly appId: string
  readonly admitted: boolean
  readonly reason: string
}

/** Proof of ownership: the details are that plugin's own (same id and marketplace) and list the app. */
export const owns = (detail: PluginDetail, located: LocatedPlugin, appId: string): boolean =>
  detail.summary.id === located.summary.id &&
  detail.marketplaceName === located.marketplaceName &&
  detail.apps.some((app) => app.id === appId)

/**
 * Provisional admission (S2, S5): an app is admitted only when the config allows it for that plugin, the plugin is
 * installed and enabled in Codex, not disabled in config, and its own details list the app.
 */
export const decide = (
  apps: AppsSettings,
  snapshot: PluginInstalledResponse,
  details: ReadonlyMap<string, PluginDetail>
): ReadonlyArray<Decision> => {
  const decisions: Array<Decision> = []
  for (const [pluginId, { allow }] of Object.entries(apps.plugins)) {
    const located = locate(snapshot, pluginId)
    const detail = details.get(pluginId)
    for (const appId of allow) {
      const no = (reason: string) => decisions.push({ pluginId, appId, admitted: false, reason })
      if (apps.disabledPlugins.includes(pluginId)) no("the plugin is disabled in config")
      else if (located === undefined) no("the plugin is not in Codex's installed inventory")
      else if (!located.summary.installed) no("the plugin is not installed")
      else if (!located.summary.enabled) no("the plugin is disabled in Codex")
      else if (detail === undefined) no("the plugin's details could not be read")
      else if (!owns(detail, located, appId)) no("the plugin's own details do not list this app")
      else decisions.push({ pluginId, appId, admitted: true, reason: "allowed in config and owned by the plugin" })
    }
  }
  // S5: the apps of a disabled plugin are listed as refused, whatever else the account grants
  for (const pluginId of apps.disabledPlugins) {
    for (const app of details.get(pluginId)?.apps ?? []) {
      if (!decisions.some((d) => d.pluginId === pluginId && d.appId === app.id)) {
        decisions.push({ pluginId, appId: app.id, admitted: false, reason: "the plugin is disabled in config" })
      }
    }
  }
  return decisions
}

export const admittedApps = (decisions: ReadonlyArray<Decision>): ReadonlyArray<string> => [
  ...new Set(decisions.filter((d) => d.admitted).map((d) => d.appId))
]

/**
 * The thread config that makes a native thread deny-by-default for apps: `apps._default.enabled = false`, the admitted
 * apps on, and every other app the harness knows of explicitly off (a per-app entry in CODEX_HOME's config.toml
 * outranks `_default`, so only an explicit entry keeps a disabled plugin's app off, S5).
 */
export const threadConfig = (decisions: ReadonlyArray<Decision>): Record<string, unknown> => {
  const admitted = new Set(admittedApps(decisions))
  const entries: Record<string, { enabled: boolean }> = { _default: { enabled: false } }
  for (const d of decisions) {
    if (!admitted.has(d.appId)) entries[d.appId] = { enabled: false }
  }
  for (const id of admitted) entries[id] = { enabled: true }
  return { apps: entries }
}

/** What app/installed for the thread must show: every admitted app enabled and callable, nothing else enabled (S3). */
export const verify = (admitted: ReadonlyArray<string>, reported: ReadonlyArray<InstalledApp>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  for (const id of admitted) {
    const app = reported.find((a) => a.id === id)
    if (app === undefined) problems.push(`${id} is not reported for the thread`)
    else if (!app.enabled || !app.callable) problems.push(`${id} is not enabled and callable (enabled=${app.enabled}, callable=${app.callable})`)
  }
  for (const app of reported) {
    if (!admitted.includes(app.id) && app.enabled) problems.push(`${app.id} is enabled on the thread though not admitted`)
  }
  return problems
}
