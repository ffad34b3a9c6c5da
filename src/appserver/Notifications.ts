// Decodes app-server notifications into the tagged union of schemas/protocol/notifications.ts, once, at the
// connection. Every decoder is compiled once. A method the harness does not read, or params that do not decode, become
// `Unknown` with the raw message (and the reason): a newer binary never breaks a turn.
import { Schema } from "effect"
import type { ParseOptions } from "effect/SchemaAST"
import {
  type KnownNotification,
  type NotificationOf,
  type NotificationTag,
  type ServerNotification,
  ServerNotifications,
  ThreadItem
} from "../../schemas/protocol.js"

export type { NotificationOf, NotificationTag, ServerNotification } from "../../schemas/protocol.js"

const preserve: ParseOptions = { onExcessProperty: "preserve", errors: "first" }

type Decoder = (method: string, params: unknown) => ServerNotification

const decoders = new Map<string, Decoder>(
  Object.entries(ServerNotifications).map(([method, entry]) => {
    // the table's schemas differ per method; each decoder pairs its method's schema with its tag, which is what
    // KnownNotification says, but TypeScript cannot follow that through Object.entries
    const decode = Schema.decodeUnknownEither(entry.schema as Schema.Schema<unknown>, preserve)
    const decoder: Decoder = (m, params) => {
      const decoded = decode(params)
      return decoded._tag === "Right"
        ? ({ _tag: entry.tag, method: m, params: decoded.right } as KnownNotification)
        : { _tag: "Unknown", method: m, params, problem: decoded.left.message.split("\n")[0] ?? "does not decode" }
    }
    return [method, decoder] as const
  })
)

/** The decoded notification; `Unknown` (with the raw params) when it is not one the harness reads or does not decode. */
export const decode = (method: string, params: unknown): ServerNotification => {
  const decoder = decoders.get(method)
  return decoder === undefined ? { _tag: "Unknown", method, params } : decoder(method, params)
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The thread a notification is about, if it names one. */
export const threadIdOf = (n: ServerNotification): string | undefined => {
  if (n._tag === "ThreadStarted") return n.params.thread.id
  // a sandboxed process's output belongs to no thread (S25)
  if (n._tag === "DroppedLine" || n._tag === "CommandExecOutputDelta") return undefined
  if (n._tag === "Unknown") return isRecord(n.params) && typeof n.params.threadId === "string" ? n.params.threadId : undefined
  // a thread-wide MCP server's startup names no thread (null)
  if (n._tag === "McpServerStartupStatus") return n.params.threadId ?? undefined
  return n.params.threadId
}

/** A dropped line over the size limit: it may have been about any thread, so every subscriber gets it. */
export const droppedLine = (bytes: number): ServerNotification => ({
  _tag: "DroppedLine",
  method: "codex-harness/droppedLine",
  params: { bytes }
})

/** The turn a notification is about, if it names one. */
export const turnIdOf = (n: ServerNotification): string | undefined => {
  switch (n._tag) {
    case "TurnStarted":
    case "TurnCompleted":
      return n.params.turn.id
    case "ItemStarted":
    case "ItemCompleted":
    case "AgentMessageDelta":
    case "TurnErrorReported":
    case "TokenUsageUpdated":
      return n.params.turnId
    case "HookStarted":
    case "HookCompleted":
      return n.params.turnId ?? undefined
    case "Unknown":
      return isRecord(n.params) && typeof n.params.turnId === "string" ? n.params.turnId : undefined
    default:
      return undefined
  }
}

/** A refinement by tag, for `Stream.filter` and friends. */
export const is =
  <T extends NotificationTag>(tag: T) =>
  (n: ServerNotification): n is NotificationOf<T> =>
    n._tag === tag

const encodeItem = Schema.encodeSync(ThreadItem, preserve)

/** A decoded item as the app-server sent it, every field kept (an `UnknownItem` gives back its raw item). */
export const wireItem = (item: ThreadItem): Readonly<Record<string, unknown>> => encodeItem(item)
