// The harness's own tools: `message` (the only visible path in message_tool mode, S18) and `heartbeat_respond`
// (a heartbeat turn records whether the wake stays quiet or notifies, S19). Their effects are supplied by the caller.
import { Effect, Schema } from "effect"
import type { HarnessTool, ToolCallContext } from "./ToolCatalog.js"

export const MessageInput = Schema.Struct({
  action: Schema.Literal("send").annotations({ description: "send: deliver `text` to the conversation" }),
  text: Schema.String.pipe(Schema.minLength(1)).annotations({ description: "what the person should see" })
})

export const messageTool = (
  send: (text: string, call: ToolCallContext) => Effect.Effect<void, { readonly message: string }>
): HarnessTool<typeof MessageInput.Type> => ({
  name: "message",
  description:
    "Send a message to the person in this conversation. Your final answer is NOT shown to them; only text sent with action=send is.",
  input: MessageInput,
  catalogMode: "direct-only",
  handler: (args, call) =>
    send(args.text, call).pipe(
      Effect.as({ text: "sent", success: true }),
      Effect.catchAll((error) => Effect.succeed({ text: `not sent: ${error.message}`, success: false }))
    )
})

export const HeartbeatInput = Schema.Struct({
  outcome: Schema.Literal("quiet", "notify").annotations({
    description: "quiet: nothing needs the person's attention; notify: send `message` to them"
  }),
  message: Schema.optional(Schema.String).annotations({ description: "required with notify" })
})

export const heartbeatRespondTool = (
  isHeartbeatTurn: (call: ToolCallContext) => boolean,
  respond: (outcome: "quiet" | "notify", message: string | undefined, call: ToolCallContext) => Effect.Effect<void>
): HarnessTool<typeof HeartbeatInput.Type> => ({
  name: "heartbeat_respond",
  description: "Answer a heartbeat wake: stay quiet, or notify the person with a short message.",
  input: HeartbeatInput,
  handler: (args, call) => {
    if (!isHeartbeatTurn(call)) return Effect.succeed({ text: "heartbeat_respond is only for heartbeat turns", success: false })
    if (args.outcome === "notify" && (args.message === undefined || args.message.trim() === "")) {
      return Effect.succeed({ text: "notify needs a message", success: false })
    }
    return respond(args.outcome, args.message, call).pipe(Effect.as({ text: `recorded: ${args.outcome}`, success: true }))
  }
})
