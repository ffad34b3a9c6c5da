// Public: the optional port around each dynamic tool call (before: allow, rewrite or refuse; after: observe).
export { type BeforeToolCallVerdict, type DynamicToolCall, ToolCallHooks, type ToolCallHooksService } from "../ports/ToolCallHooks.js"
