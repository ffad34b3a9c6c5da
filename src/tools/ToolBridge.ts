// Answers the app-server's `item/tool/call` requests for one thread with the harness tools' handlers, for the life of
// the caller's Scope. Every call gets an answer: bad arguments, an unknown tool, a failure or a timeout become a failed
// result that says why, never silence (S21).
import { Duration, Effect, ParseResult, Schema, type Scope } from "effect"
import type { DynamicToolCallParams, DynamicToolCallResponse } from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import { type HarnessTool, namespaceOf, type ToolResult } from "./ToolCatalog.js"

export const defaults = { callTimeout: Duration.seconds(120) } as const

const respond = (result: ToolResult): DynamicToolCallResponse => ({
  contentItems: [{ type: "inputText", text: result.text }],
  success: result.success
})

const failed = (text: string): ToolResult => ({ text, success: false })

export interface BridgeOptions {
  readonly sessionId: string
  readonly threadId: string
  readonly tools: ReadonlyArray<HarnessTool>
  readonly callTimeout?: Duration.DurationInput | undefined
}

export const install = (
  connection: AppServerConnection,
  options: BridgeOptions
): Effect.Effect<void, never, Scope.Scope> => {
  const byKey = new Map(options.tools.map((tool) => [`${namespaceOf(tool)}/${tool.name}`, tool] as const))
  const byName = new Map(options.tools.map((tool) => [tool.name, tool] as const))
  const timeout = options.callTimeout ?? defaults.callTimeout

  const call = (params: DynamicToolCallParams): Effect.Effect<DynamicToolCallResponse> => {
    const { arguments: args, callId, namespace, tool: name, turnId } = params
    const tool = namespace != null ? byKey.get(`${namespace}/${name}`) : byName.get(name)
    if (tool === undefined) return Effect.succeed(respond(failed(`unknown tool ${namespace != null ? `${namespace}.` : ""}${name}`)))
    return Schema.decodeUnknown(tool.input)(args).pipe(
      Effect.mapError((error) => failed(`invalid arguments for ${name}: ${ParseResult.TreeFormatter.formatErrorSync(error)}`)),
      Effect.flatMap((decoded) =>
        tool.handler(decoded, { sessionId: options.sessionId, threadId: options.threadId, turnId, callId }).pipe(
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () => failed(`${name} timed out after ${Duration.format(Duration.decode(timeout))}`)
          })
        )
      ),
      Effect.merge,
      Effect.catchAllDefect((defect) => Effect.succeed(failed(`${name} failed: ${String(defect)}`))),
      Effect.map(respond),
      Effect.withSpan("ToolBridge.call", { attributes: { tool: name, sessionId: options.sessionId } })
    )
  }

  return connection.handle("item/tool/call", {
    threadId: options.threadId,
    handle: call,
    invalid: () => Effect.succeed(respond(failed("malformed tool call")))
  })
}
