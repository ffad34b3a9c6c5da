// Port (optional): the tools the embedder registers for the agent (dynamic tools, S11, S21). The harness advertises
// them on thread/start (searchable ones in `openclaw`, direct-only ones in `openclaw_direct`) and runs their handlers
// when Codex asks for a call. Names are checked when the port is built: a bad or duplicate name is a typed error, never
// a skip. Without it the agent gets only the harness's own tools.
import { Context, Effect, Layer, Schema } from "effect"

export interface ToolCallContext {
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string
  readonly callId: string
}

/** What a tool gives back to the model; text is what Code Mode sees (S21). */
export interface ToolResult {
  readonly text: string
  readonly success: boolean
}

/** A tool the harness runs itself when Codex calls it. */
export interface HarnessTool<A = any, I = any> {
  readonly name: string
  readonly description: string
  readonly input: Schema.Schema<A, I>
  /** `searchable` (default): the `openclaw` namespace, found through tool search; `direct-only`: `openclaw_direct` */
  readonly catalogMode?: "searchable" | "direct-only" | undefined
  readonly handler: (args: A, call: ToolCallContext) => Effect.Effect<ToolResult>
}

/** Names the harness serves itself; an embedder tool cannot take them. */
export const reservedToolNames: ReadonlySet<string> = new Set(["message", "heartbeat_respond"])

/** Letters, digits, `_` and `-`, 1 to 64 characters (what the Responses API accepts for a function name). */
export const validToolName = /^[A-Za-z0-9_-]{1,64}$/

export class InvalidToolName extends Schema.TaggedError<InvalidToolName>()("InvalidToolName", {
  toolName: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid dynamic tool name ${JSON.stringify(this.toolName)}: ${this.reason}`
  }
}

export class DuplicateToolName extends Schema.TaggedError<DuplicateToolName>()("DuplicateToolName", { toolName: Schema.String }) {
  override get message() {
    return `dynamic tool ${JSON.stringify(this.toolName)} is registered more than once`
  }
}

export type ToolRegistrationError = InvalidToolName | DuplicateToolName

export interface DynamicToolsService {
  /** the embedder's tools, checked; read once per turn */
  readonly tools: Effect.Effect<ReadonlyArray<HarnessTool>>
}

/** The result text of a handler's value: strings as they are, anything else as JSON (Code Mode parses text, S21). */
export const toText = (value: unknown): string => {
  if (typeof value === "string") return value
  if (value === undefined) return ""
  try {
    const json = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? v.toString() : v))
    return json === undefined ? String(value) : json
  } catch {
    return String(value)
  }
}

const errorText = (error: unknown): string => {
  if (typeof error === "string") return error
  if (typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string") {
    return (error as { message: string }).message
  }
  return toText(error)
}

export interface ToolDefinition<S extends Schema.Schema<any, any, never>, O, E> {
  readonly name: string
  readonly description: string
  /** decodes the model's arguments; its JSON Schema is what the model sees */
  readonly input: S
  /** `searchable` (default): `openclaw`, found through tool search; `direct-only`: `openclaw_direct`, always visible */
  readonly catalogMode?: "searchable" | "direct-only" | undefined
  /**
   * Runs the call with the decoded arguments. A string is the result text; any other value goes back as JSON; a
   * failure becomes a failed result carrying its message. Defects and timeouts become failed results in the bridge.
   */
  readonly handler: (args: Schema.Schema.Type<S>, call: ToolCallContext) => Effect.Effect<O, E>
}

/** A dynamic tool, with its handler's arguments inferred from the input Schema. */
export const tool = <S extends Schema.Schema<any, any, never>, O, E = never>(
  definition: ToolDefinition<S, O, E>
): HarnessTool<Schema.Schema.Type<S>, Schema.Schema.Encoded<S>> => ({
  name: definition.name,
  description: definition.description,
  input: definition.input,
  catalogMode: definition.catalogMode,
  handler: (args, call) =>
    definition.handler(args, call).pipe(
      Effect.map((value): ToolResult => ({ text: toText(value), success: true })),
      Effect.catchAll((error) => Effect.succeed<ToolResult>({ text: `${definition.name} failed: ${errorText(error)}`, success: false }))
    )
})

/** Checks names: valid, not reserved, not repeated. */
export const validate = (
  tools: ReadonlyArray<HarnessTool>
): Effect.Effect<ReadonlyArray<HarnessTool>, ToolRegistrationError> =>
  Effect.suspend((): Effect.Effect<ReadonlyArray<HarnessTool>, ToolRegistrationError> => {
    const seen = new Set<string>()
    for (const t of tools) {
      if (!validToolName.test(t.name)) {
        return Effect.fail(new InvalidToolName({ toolName: t.name, reason: "use 1 to 64 letters, digits, '_' or '-'" }))
      }
      if (reservedToolNames.has(t.name)) return Effect.fail(new InvalidToolName({ toolName: t.name, reason: "reserved by the harness" }))
      if (seen.has(t.name)) return Effect.fail(new DuplicateToolName({ toolName: t.name }))
      seen.add(t.name)
    }
    return Effect.succeed([...tools])
  })

/** No embedder tools. */
export const noTools: DynamicToolsService = { tools: Effect.succeed([]) }

/**
 * Optional port: tools the agent can call, run inside the app (Codex's dynamic tools). `DynamicTools.layer` checks
 * the names when the layer is built. The default registers none.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { DynamicTools } from "codex-harness"
 *
 * const Tools = DynamicTools.DynamicTools.layer([
 *   DynamicTools.tool({
 *     name: "ticket_status",
 *     description: "the status of a support ticket",
 *     input: Schema.Struct({ id: Schema.Number }),
 *     handler: ({ id }) => Effect.succeed({ id, status: "open" })
 *   })
 * ])
 * ```
 */
export class DynamicTools extends Context.Reference<DynamicTools>()("codex-harness/DynamicTools", {
  defaultValue: (): DynamicToolsService => noTools
}) {
  /** the port over a fixed set of tools, checked when the layer is built */
  static readonly make = (tools: ReadonlyArray<HarnessTool>): Effect.Effect<DynamicToolsService, ToolRegistrationError> =>
    Effect.map(validate(tools), (checked) => ({ tools: Effect.succeed(checked) }))

  static readonly layer = (tools: ReadonlyArray<HarnessTool>): Layer.Layer<DynamicTools, ToolRegistrationError> =>
    Layer.effect(DynamicTools, DynamicTools.make(tools))

  /** no embedder tools */
  static readonly empty: Layer.Layer<DynamicTools> = Layer.succeed(DynamicTools, noTools)
}
