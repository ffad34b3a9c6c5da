// Public, types only: the app-server's wire types that reach an app through a turn's result and events (the items of
// a turn, the notifications it streams) and the policy values of the settings. They mirror the pinned @openai/codex
// (0.171.0): they change when the pinned binary's protocol does, and `npm run protocol:check` holds them to it.
export type * from "../../schemas/protocol.js"
export type { NativeHookEvent } from "../../schemas/config.js"
export type { RequestId } from "../../schemas/jsonrpc.js"
