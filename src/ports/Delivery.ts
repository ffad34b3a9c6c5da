// Port: how replies reach the person on the other side (a chat channel, a terminal, a web page). The embedding gateway
// provides it; the harness decides what is visible (S18) and hands over text and media, never caring about the channel.
import { Context, type Effect, Schema } from "effect"

export interface ReplyMedia {
  readonly kind: "image"
  /** a local file the app-server saved (an image-generation item's savedPath) */
  readonly path: string
}

export interface Reply {
  readonly sessionId: string
  readonly text?: string | undefined
  readonly media: ReadonlyArray<ReplyMedia>
  /** final: the turn's final assistant text; message_tool: the agent's message(action=send); notice: the harness itself */
  readonly source: "final" | "message_tool" | "heartbeat" | "notice"
}

export class DeliveryFailed extends Schema.TaggedError<DeliveryFailed>()("DeliveryFailed", { reason: Schema.String }) {
  override get message() {
    return `reply delivery failed: ${this.reason}`
  }
}

/**
 * Required port: where the harness's replies go (a chat channel, a terminal, a web page). The harness decides what
 * is visible and calls `deliver` once per reply, in order.
 *
 * @example
 * ```ts
 * import { Console, Layer } from "effect"
 * import { Delivery } from "codex-harness"
 *
 * const ToChat = Layer.succeed(Delivery.Delivery, {
 *   deliver: (reply) => Console.log(`[${reply.sessionId}] (${reply.source}) ${reply.text ?? ""}`)
 * })
 * ```
 */
export class Delivery extends Context.Tag("codex-harness/Delivery")<
  Delivery,
  { readonly deliver: (reply: Reply) => Effect.Effect<void, DeliveryFailed> }
>() {}
