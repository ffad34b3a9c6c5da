// Public: the optional port of tools the agent can call, run inside the app.
export {
  DuplicateToolName,
  DynamicTools,
  type DynamicToolsService,
  type HarnessTool,
  InvalidToolName,
  tool,
  type ToolCallContext,
  type ToolDefinition,
  type ToolRegistrationError,
  type ToolResult
} from "../ports/DynamicTools.js"
