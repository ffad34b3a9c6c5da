// Connected apps (S2-S5): the plugin inventory, one plugin's details, and a thread's effective app state. Only the
// fields admission reads are declared; the rest is kept as it comes (decoding preserves unknown fields).
import { Schema } from "effect"
import { optionalNullable } from "./common.js"

export const PluginInstalledParams = Schema.Struct({
  /** working directories whose repo marketplaces are discovered too */
  cwds: optionalNullable(Schema.Array(Schema.String))
})
export const PluginSummary = Schema.Struct({
  /** "<name>@<marketplace>" */
  id: Schema.String,
  name: Schema.String,
  installed: Schema.Boolean,
  enabled: Schema.Boolean
})
export type PluginSummary = typeof PluginSummary.Type
export const PluginMarketplaceEntry = Schema.Struct({
  name: Schema.String,
  /** the marketplace file, for a local marketplace */
  path: optionalNullable(Schema.String),
  plugins: Schema.Array(PluginSummary)
})
export const PluginInstalledResponse = Schema.Struct({
  marketplaces: Schema.Array(PluginMarketplaceEntry),
  marketplaceLoadErrors: Schema.optional(Schema.Array(Schema.Struct({ marketplacePath: Schema.String, message: Schema.String })))
})
export type PluginInstalledResponse = typeof PluginInstalledResponse.Type

export const PluginReadParams = Schema.Struct({
  pluginName: Schema.String,
  marketplacePath: optionalNullable(Schema.String),
  remoteMarketplaceName: optionalNullable(Schema.String)
})
export const AppSummary = Schema.Struct({ id: Schema.String, name: Schema.String })
export const PluginDetail = Schema.Struct({
  marketplaceName: Schema.String,
  marketplacePath: optionalNullable(Schema.String),
  summary: PluginSummary,
  apps: Schema.Array(AppSummary)
})
export type PluginDetail = typeof PluginDetail.Type
export const PluginReadResponse = Schema.Struct({ plugin: PluginDetail })

export const AppsInstalledParams = Schema.Struct({
  threadId: optionalNullable(Schema.String),
  forceRefresh: Schema.optional(Schema.Boolean)
})
export const InstalledApp = Schema.Struct({
  id: Schema.String,
  enabled: Schema.Boolean,
  callable: Schema.Boolean,
  runtimeName: optionalNullable(Schema.String)
})
export type InstalledApp = typeof InstalledApp.Type
export const AppsInstalledResponse = Schema.Struct({ apps: Schema.Array(InstalledApp) })
