// Public: the settings the Live layer is built with (decoded at build: see Errors.InvalidSettings).
export type { AppsSettings, HarnessSettings, McpServer, Route, SupervisionSettings, VisibleReplies } from "../config/Settings.js"
