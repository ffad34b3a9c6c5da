// Tools the harness executes itself (dynamic tools), and how they are advertised on thread/start: searchable tools in
// the `openclaw` namespace (deferred, found through Codex's tool search), `catalogMode: "direct-only"` tools in
// `openclaw_direct` (always visible to the model, kept out of nested Code Mode) (S11). Pure.
import { JSONSchema } from "effect"
import type { DynamicToolFunction, DynamicToolSpec } from "../../schemas/protocol.js"
import type { HarnessTool } from "../ports/DynamicTools.js"

export type { HarnessTool, ToolCallContext, ToolResult } from "../ports/DynamicTools.js"

export const searchableNamespace = "openclaw"
export const directNamespace = "openclaw_direct"

export const namespaceOf = (tool: HarnessTool): string =>
  tool.catalogMode === "direct-only" ? directNamespace : searchableNamespace

const toFunction = (tool: HarnessTool, deferLoading: boolean): DynamicToolFunction => ({
  type: "function",
  name: tool.name,
  description: tool.description,
  inputSchema: JSONSchema.make(tool.input),
  ...(deferLoading ? { deferLoading: true } : {})
})

/** The `dynamicTools` of thread/start for these tools; empty namespaces are left out. */
export const dynamicToolSpecs = (tools: ReadonlyArray<HarnessTool>): ReadonlyArray<DynamicToolSpec> => {
  const searchable = tools.filter((t) => namespaceOf(t) === searchableNamespace)
  const direct = tools.filter((t) => namespaceOf(t) === directNamespace)
  const specs: Array<DynamicToolSpec> = []
  if (searchable.length > 0) {
    specs.push({
      type: "namespace",
      name: searchableNamespace,
      description: "Tools of the harness that hosts this agent (delivery, sessions, heartbeats). Search to load them.",
      tools: searchable.map((t) => toFunction(t, true))
    })
  }
  if (direct.length > 0) {
    specs.push({
      type: "namespace",
      name: directNamespace,
      description: "Harness tools that are always available to call directly.",
      tools: direct.map((t) => toFunction(t, false))
    })
  }
  return specs
}
