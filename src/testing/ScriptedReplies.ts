// The script a ScriptedModel follows (its replies, rules and options) and what it records: the shapes a test writes,
// apart from the server that plays them (ScriptedModel.ts re-exports all of it).
import type { Effect } from "effect"
import type * as Http from "node:http"

export type ReplyStep =
  /** `chunk`: stream the text in deltas of at most this many characters (default: one delta), as real providers do */
  | { readonly type: "message"; readonly text: string; readonly chunk?: number }
  | { readonly type: "reasoning"; readonly text: string }
  | {
    readonly type: "function_call"
    readonly name: string
    /** An object is JSON-encoded; a string is sent as is (lets tests send malformed JSON). */
    readonly arguments: unknown
    readonly callId?: string
    readonly namespace?: string
  }
  | { readonly type: "custom_tool_call"; readonly name: string; readonly input: string; readonly callId?: string }
  | { readonly type: "pause"; readonly ms: number }
  /** a pause that ends on a receipt (say, a Deferred the test completes once it has seen what it waits for), never on
   * the clock: a loaded machine cannot make the step end early */
  | { readonly type: "wait"; readonly until: Effect.Effect<void> }
  | { readonly type: "hang" }
  /** never completes, but writes an SSE comment every `everyMs`: the connection stays alive and says nothing */
  | { readonly type: "keepalive"; readonly everyMs: number }
  | { readonly type: "fail"; readonly message: string }
  /** writes `data` to the stream as it is (a malformed event, say) and ends the response without completing it */
  | { readonly type: "raw"; readonly data: string }

export type Reply =
  | { readonly steps: ReadonlyArray<ReplyStep> }
  | { readonly httpStatus: number; readonly body?: string }

/**
 * A reply chosen by what the request says rather than by its place in the queue.
 *
 * A rule stays in force: it answers EVERY later request whose body contains `whenRequestIncludes`, and Codex resends
 * the whole conversation with each request, so a rule keyed on an early message keeps matching the requests after it
 * (a tool call answered by a rule is then made again and again). Give `once: true` unless that is what you want.
 *
 * @example
 * ```ts
 * import { ScriptedModel } from "codex-harness/testing"
 *
 * const rule: ScriptedModel.ScriptRule = {
 *   whenRequestIncludes: "ticket 42",
 *   once: true,
 *   reply: ScriptedModel.reply.steps({ type: "function_call", name: "ticket_status", arguments: { id: 42 } })
 * }
 * ```
 */
export interface ScriptRule {
  /** a substring of the raw request body (the whole conversation so far, the instructions and the tools) */
  readonly whenRequestIncludes: string
  readonly reply: Reply
  /** true: the rule is removed after its first match; default false: it answers every match */
  readonly once?: boolean
}

export interface ScriptedModelOptions {
  /** FIFO queue, one reply consumed per POST. */
  readonly replies?: ReadonlyArray<Reply>
  /** Checked before the queue, in order; the first whose substring occurs in the raw body wins. */
  readonly rules?: ReadonlyArray<ScriptRule>
  /** Used when no rule matched and the queue is empty. Default: one message "ok". */
  readonly fallback?: Reply
  /** The base64 image every Images API request gets. Default: `onePixelPng`. */
  readonly image?: string
  /**
   * Told of every POST /v1/responses as it arrives, before its reply is chosen: a test that sends more requests than the
   * log keeps (MAX_RECORDED_REQUESTS) counts what it needs here.
   */
  readonly onRequest?: (request: RecordedRequest) => void
}

export interface RecordedRequest {
  readonly method: string
  readonly url: string
  readonly body: string
  /** The request's headers as Node gives them (names in lower case), e.g. `authorization` with the provider key. */
  readonly headers: Readonly<Http.IncomingHttpHeaders>
  /** The parsed body, or undefined when it is not JSON. */
  readonly json: unknown
}

export interface ScriptedModel {
  readonly port: number
  /** Base URL for a provider's `base_url`, e.g. "http://127.0.0.1:PORT/v1". */
  readonly url: string
  readonly enqueue: (...replies: ReadonlyArray<Reply>) => Effect.Effect<void>
  readonly addRule: (rule: ScriptRule) => Effect.Effect<void>
  /** Every POST /v1/responses, oldest first; only the last MAX_RECORDED_REQUESTS are kept. */
  readonly requests: Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Waits until at least n POSTs have arrived in total, then returns the log as `requests` does. */
  readonly waitForRequests: (n: number) => Effect.Effect<ReadonlyArray<RecordedRequest>>
  /** Every Images API request (`POST /v1/images/generations` or `/edits`), oldest first. */
  readonly imageRequests: Effect.Effect<ReadonlyArray<RecordedRequest>>
}

export const reply: {
  readonly text: (text: string) => Reply
  readonly steps: (...steps: ReadonlyArray<ReplyStep>) => Reply
  readonly httpError: (status: number, body?: string) => Reply
  /** The model calls Codex's native image tool (`imagegen` in the `image_gen` namespace) with this prompt. */
  readonly imageGeneration: (prompt: string, callId?: string) => Reply
} = {
  text: (text) => ({ steps: [{ type: "message", text }] }),
  steps: (...steps) => ({ steps }),
  imageGeneration: (prompt, callId) => ({
    steps: [{
      type: "function_call",
      name: "imagegen",
      namespace: "image_gen",
      arguments: { prompt },
      ...(callId === undefined ? {} : { callId })
    }]
  }),
  httpError: (status, body) => (body === undefined ? { httpStatus: status } : { httpStatus: status, body })
}

/** A valid 1x1 RGBA PNG, base64: the image the Images API stand-in returns by default. */
export const onePixelPng =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
