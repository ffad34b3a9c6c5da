// The subset of the codex app-server protocol (0.171) the harness speaks, one file per area under protocol/.
// `npm run protocol:check` holds every schema here to the JSON schema the pinned binary generates.
export * from "./protocol/apps.js"
export * from "./protocol/client.js"
export * from "./protocol/common.js"
export * from "./protocol/items.js"
export * from "./protocol/notifications.js"
export * from "./protocol/processes.js"
export * from "./protocol/serverRequests.js"
