// Answers the app-server's `item/tool/call` requests for one thread with the harness tools' handlers, for the life of
// the caller's Scope. Every call gets an answer: bad arguments, an unknown tool, a failure or a timeout become a failed
// result that says why, never silence (S21). The ToolCallHooks port sits around each call: `before` may rewrite the
// arguments (decoded like the model's) or refuse the call, `after` sees what the model gets back.
import { Duration, Effect, ParseResult, Schema, type Scope } from "effect"
import type { DynamicToolCallParams, DynamicToolCallResponse } from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import { type DynamicToolCall, none, refusedText, type ToolCallHooksService } from "../ports/ToolCallHooks.js"
import { type HarnessTool, namespaceOf, type ToolResult } from "./ToolCatalog.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export const defaults = {
  callTimeout: Duration.seconds(120),
  /** how long an `after` hook may hold the answer back; past it the model gets the result anyway */
  afterHookTimeout: Duration.seconds(10)
} as const

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
  /** plugin/middleware hooks around every call; default none */
  readonly hooks?: ToolCallHooksService | undefined
}

export const install = (
  connection: AppServerConnection,
  options: BridgeOptions
): Effect.Effect<void, never, Scope.Scope> => {
  const byKey = new Map(options.tools.map((tool) => [`${namespaceOf(tool)}/${tool.name}`, tool] as const))
  const byName = new Map(options.tools.map((tool) => [tool.name, tool] as const))
  const timeout = options.callTimeout ?? defaults.callTimeout
  const { after, before } = options.hooks ?? none

  /** the call's arguments after the `before` hook, or the failed result of a refusal (a failing hook refuses) */
  const admit = (toolCall: DynamicToolCall): Effect.Effect<DynamicToolCall, ToolResult> =>
    before === undefined ? Effect.succeed(toolCall) : before(toolCall).pipe(
      Effect.catchAllCause((cause) =>
        Effect.as(
          HarnessLog.warning(`dynamic tool ${toolCall.name}: the before-call hook failed; refusing the call`, cause),
          { _tag: "Refuse", reason: "the tool-call hook failed" } as const
        )
      ),
      Effect.flatMap((verdict) => {
        switch (verdict._tag) {
          case "Proceed":
            return Effect.succeed(toolCall)
          case "Rewrite":
            return Effect.succeed({ ...toolCall, arguments: verdict.arguments })
          case "Refuse":
            return Effect.fail(failed(refusedText(toolCall.name, verdict.reason)))
        }
      })
    )

  const run = (tool: HarnessTool, toolCall: DynamicToolCall): Effect.Effect<ToolResult, ToolResult> =>
    Schema.decodeUnknown(tool.input)(toolCall.arguments).pipe(
      Effect.mapError((error) => failed(`invalid arguments for ${tool.name}: ${ParseResult.TreeFormatter.formatErrorSync(error)}`)),
      Effect.flatMap((decoded) => tool.handler(decoded, toolCall.call))
    )

  /** tells the `after` hook what the model gets; it can neither change nor hold back the answer for long */
  const observe = (toolCall: DynamicToolCall, result: ToolResult): Effect.Effect<void> =>
    after === undefined ? Effect.void : after({ ...toolCall, result }).pipe(
      Effect.timeout(defaults.afterHookTimeout),
      Effect.catchAllCause((cause) => HarnessLog.warning(`dynamic tool ${toolCall.name}: the after-call hook failed`, cause))
    )

  const call = (params: DynamicToolCallParams): Effect.Effect<DynamicToolCallResponse> => {
    const { arguments: args, callId, namespace, tool: name, turnId } = params
    const tool = namespace != null ? byKey.get(`${namespace}/${name}`) : byName.get(name)
    if (tool === undefined) return Effect.succeed(respond(failed(`unknown tool ${namespace != null ? `${namespace}.` : ""}${name}`)))
    const proposed: DynamicToolCall = {
      name,
      namespace: namespace ?? undefined,
      arguments: args,
      call: { sessionId: options.sessionId, threadId: options.threadId, turnId, callId }
    }
    return admit(proposed).pipe(
      Effect.flatMap((admitted) =>
        run(tool, admitted).pipe(
          Effect.merge,
          Effect.catchAllDefect((defect) => Effect.succeed(failed(`${name} failed: ${String(defect)}`))),
          Effect.map((result) => [admitted, result] as const)
        )
      ),
      // a refusal is answered as the call the model proposed
      Effect.catchAll((refusal) => Effect.succeed([proposed, refusal] as const)),
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => [proposed, failed(`${name} timed out after ${Duration.format(Duration.decode(timeout))}`)] as const
      }),
      Effect.merge,
      Effect.tap(([toolCall, result]) => observe(toolCall, result)),
      Effect.map(([, result]) => respond(result)),
      Effect.withSpan("ToolBridge.call", { attributes: { tool: name, sessionId: options.sessionId } })
    )
  }

  return connection.handle("item/tool/call", {
    threadId: options.threadId,
    handle: call,
    invalid: () => Effect.succeed(respond(failed("malformed tool call")))
  })
}
