/**
 * A scripted stand-in for the OpenAI Responses API, served over real HTTP on
 * 127.0.0.1 so the real `codex app-server` can talk to it (tests, offline demo).
 *
 * Each `POST /v1/responses` is recorded, then answered with the first matching
 * rule, else the next queued reply, else the fallback. Replies are streamed as
 * server-sent events in the shape Codex parses (see APP-SERVER-FACTS.md).
 *
 * It also stands in for the Images API that Codex's native `image_gen` tool
 * calls: `POST /v1/images/generations` (and `/edits`) is recorded and answered
 * with one base64 image (`image`, default `onePixelPng`). `reply.imageGeneration`
 * is the model's call of that tool; Codex saves the image and reports an
 * `imageGeneration` item with its `savedPath` (codex 0.171 offers the tool only
 * with `features.image_generation` and a ChatGPT login; see APP-SERVER-FACTS.md).
 */
import { Effect, FiberSet } from "effect"
import type { Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo, Socket } from "node:net"
import * as Zlib from "node:zlib"

export * from "./ScriptedReplies.js"
import { type RecordedRequest, type Reply, reply, type ReplyStep, type ScriptedModel, type ScriptedModelOptions, type ScriptRule, onePixelPng } from "./ScriptedReplies.js"

/**
 * Cap on the request log. Codex request bodies carry the instructions and tool
 * list (tens of KB each), so an unbounded log in a long demo would grow without
 * limit; 1,000 (tens of MB at most) is far beyond what any test sends.
 */
const MAX_RECORDED_REQUESTS = 1_000

const USAGE = {
  input_tokens: 10,
  input_tokens_details: null,
  output_tokens: 5,
  output_tokens_details: null,
  total_tokens: 15
} as const


const DEFAULT_FALLBACK: Reply = reply.text("ok")

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const jsonError = (message: string): string => JSON.stringify({ error: { message, type: "scripted_model_error" } })

// Real clients may compress request bodies; decode the common encodings so rules and the log see plain text.
const decodeBody = (raw: Buffer, encoding: string | undefined): string => {
  try {
    switch (encoding?.trim().toLowerCase()) {
      case "gzip":
        return Zlib.gunzipSync(raw).toString("utf8")
      case "deflate":
        return Zlib.inflateSync(raw).toString("utf8")
      case "br":
        return Zlib.brotliDecompressSync(raw).toString("utf8")
      default:
        return raw.toString("utf8")
    }
  } catch {
    return raw.toString("utf8")
  }
}

// Resolves when the client goes away (or the socket is destroyed at shutdown), so a
// hanging or pausing stream stops instead of outliving its connection.
const awaitClientGone = (res: Http.ServerResponse): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (res.destroyed) {
      resume(Effect.void)
      return
    }
    const onClose = () => resume(Effect.void)
    res.once("close", onClose)
    return Effect.sync(() => res.off("close", onClose))
  })

// A real timer rather than Effect.sleep: the server talks to real processes, so a
// TestClock in the caller's context must not freeze it. Interruption clears the timer.
const realSleep = (ms: number): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), Math.max(0, ms))
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * A scripted OpenAI Responses API server on 127.0.0.1 (a random port) for the scope's life: point `providerUrl` at
 * `url`, and the real app-server's requests get the queued replies in order (rules first, then the queue, then the
 * fallback). Each request is recorded.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ScriptedModel } from "codex-harness/testing"
 *
 * const model = ScriptedModel.make({
 *   replies: [
 *     ScriptedModel.reply.steps({ type: "function_call", name: "ticket_status", arguments: { id: 42 } }),
 *     ScriptedModel.reply.text("Ticket 42 is open.")
 *   ]
 * })
 * const url = Effect.map(model, (m) => m.url) // settings.providerUrl
 * ```
 */
export const make = (options: ScriptedModelOptions = {}): Effect.Effect<ScriptedModel, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Plain mutable state: node callbacks and Effect code share one JS thread, so
    // every access below is atomic with respect to the others.
    const queue: Array<Reply> = [...(options.replies ?? [])]
    const rules: Array<ScriptRule> = [...(options.rules ?? [])]
    const fallback = options.fallback ?? DEFAULT_FALLBACK
    const log: Array<RecordedRequest> = []
    const imageLog: Array<RecordedRequest> = []
    let totalRequests = 0
    // Callbacks of waiters for more requests, called from the Node request callback: each re-checks the count itself.
    const arrivalWaiters = new Set<() => void>()
    let responseCounter = 0

    const record = (entry: RecordedRequest): void => {
      log.push(entry)
      if (log.length > MAX_RECORDED_REQUESTS) log.splice(0, log.length - MAX_RECORDED_REQUESTS)
      totalRequests++
      for (const wake of [...arrivalWaiters]) wake()
    }

    const chooseReply = (body: string): Reply => {
      const index = rules.findIndex((rule) => body.includes(rule.whenRequestIncludes))
      const rule = index >= 0 ? rules[index] : undefined
      if (rule !== undefined) {
        if (rule.once === true) rules.splice(index, 1)
        return rule.reply
      }
      return queue.shift() ?? fallback
    }

    const streamReply = (res: Http.ServerResponse, steps: ReadonlyArray<ReplyStep>): Effect.Effect<void> =>
      Effect.gen(function*() {
        const n = ++responseCounter
        const responseId = `resp_${n}`
        res.writeHead(200, {
          "content-type": "text/event-stream",
          "cache-control": "no-cache",
          connection: "keep-alive"
        })
        // Returns false once the client is gone, so the script stops early.
        const send = (type: string, data: Record<string, unknown>): boolean => {
          if (res.destroyed || res.writableEnded) return false
          res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`)
          return true
        }

        if (!send("response.created", { response: { id: responseId, status: "in_progress" } })) return
        let outputIndex = 0
        for (const step of steps) {
          const itemIndex = outputIndex
          const itemId = `${step.type}_${n}_${itemIndex}`
          const callId = `call_${n}_${itemIndex}`
          switch (step.type) {
            case "message": {
              outputIndex++
              const item = {
                type: "message",
                role: "assistant",
                id: itemId,
                status: "completed",
                content: [{ type: "output_text", text: step.text, annotations: [] }]
              }
              // `added` carries no text: the delta supplies it, as with the real API.
              send("response.output_item.added", {
                output_index: itemIndex,
                item: { ...item, status: "in_progress", content: [] }
              })
              const chunk = Math.max(1, step.chunk ?? step.text.length)
              for (let at = 0; at < step.text.length || at === 0; at += chunk) {
                send("response.output_text.delta", {
                  item_id: itemId,
                  output_index: itemIndex,
                  content_index: 0,
                  delta: step.text.slice(at, at + chunk)
                })
                if (step.text.length === 0) break
              }
              if (!send("response.output_item.done", { output_index: itemIndex, item })) return
              break
            }
            case "reasoning": {
              outputIndex++
              const item = { type: "reasoning", id: itemId, summary: [{ type: "summary_text", text: step.text }] }
              send("response.output_item.added", { output_index: itemIndex, item: { ...item, summary: [] } })
              send("response.reasoning_summary_text.delta", {
                item_id: itemId,
                output_index: itemIndex,
                summary_index: 0,
                delta: step.text
              })
              if (!send("response.output_item.done", { output_index: itemIndex, item })) return
              break
            }
            case "function_call": {
              outputIndex++
              const item = {
                type: "function_call",
                id: itemId,
                status: "completed",
                name: step.name,
                arguments: typeof step.arguments === "string" ? step.arguments : JSON.stringify(step.arguments ?? {}),
                call_id: step.callId ?? callId,
                ...(step.namespace === undefined ? {} : { namespace: step.namespace })
              }
              send("response.output_item.added", { output_index: itemIndex, item })
              if (!send("response.output_item.done", { output_index: itemIndex, item })) return
              break
            }
            case "custom_tool_call": {
              outputIndex++
              const item = {
                type: "custom_tool_call",
                id: itemId,
                status: "completed",
                name: step.name,
                input: step.input,
                call_id: step.callId ?? callId
              }
              send("response.output_item.added", { output_index: itemIndex, item })
              if (!send("response.output_item.done", { output_index: itemIndex, item })) return
              break
            }
            case "pause":
              yield* realSleep(step.ms)
              break
            case "wait":
              yield* step.until
              break
            case "hang":
              // Never completes; the race in answer() ends it when the client or the server goes.
              return yield* Effect.never
            case "keepalive":
              for (;;) {
                if (!res.write(": keepalive\n\n") && res.destroyed) return
                yield* realSleep(step.everyMs)
              }
            case "raw":
              if (!res.destroyed) res.end(step.data)
              return
            case "fail":
              send("response.failed", {
                response: {
                  id: responseId,
                  status: "failed",
                  error: { code: "server_error", message: step.message },
                  usage: null
                }
              })
              res.end()
              return
          }
        }
        send("response.completed", { response: { id: responseId, status: "completed", usage: USAGE } })
        res.end()
      })

    const answer = (res: Http.ServerResponse, body: string): Effect.Effect<void> => {
      const chosen = chooseReply(body)
      if ("httpStatus" in chosen) {
        return Effect.sync(() => {
          const text = chosen.body ?? jsonError(`scripted HTTP ${chosen.httpStatus}`)
          const isJson = chosen.body === undefined || parseJson(chosen.body) !== undefined
          res.writeHead(chosen.httpStatus, {
            "content-type": isJson ? "application/json" : "text/plain; charset=utf-8",
            "content-length": Buffer.byteLength(text)
          })
          res.end(text)
        })
      }
      return Effect.raceFirst(streamReply(res, chosen.steps), awaitClientGone(res))
    }

    // Handler fibers live in a FiberSet tied to this scope: closing it interrupts
    // every stream still running, which also clears pending pause timers.
    const run = yield* FiberSet.makeRuntime<never>()

    const sockets = new Set<Socket>()

    // the body as text (decoded), recorded with the request line and headers
    const readBody = (req: Http.IncomingMessage, then: (entry: RecordedRequest) => void): void => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("error", () => {})
      req.on("end", () => {
        const headerEncoding = req.headers["content-encoding"]
        const body = decodeBody(Buffer.concat(chunks), Array.isArray(headerEncoding) ? headerEncoding[0] : headerEncoding)
        // parsed only when a test looks: the log holds up to MAX_RECORDED_REQUESTS bodies of tens of KB each
        let parsed: { value: unknown } | undefined
        then({
          method: req.method ?? "POST",
          url: req.url ?? "/",
          body,
          headers: req.headers,
          get json() {
            parsed ??= { value: parseJson(body) }
            return parsed.value
          }
        })
      })
    }

    const onRequest = (req: Http.IncomingMessage, res: Http.ServerResponse): void => {
      res.on("error", () => {}) // a vanished client is normal here, not a crash
      const method = req.method ?? "GET"
      const url = req.url ?? "/"
      const pathname = url.split("?")[0] ?? url

      // Codex's built-in provider tries a WebSocket first; 426 makes it fall back to
      // HTTP at once (a 404 costs seconds of reconnect back-off).
      if (req.headers.upgrade !== undefined) {
        const text = jsonError("websocket not supported; use HTTP")
        res.writeHead(426, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
        res.end(text)
        req.resume()
        return
      }

      if (method === "POST" && /^\/v1\/images\/(generations|edits)$/.test(pathname)) return onImageRequest(req, res)

      if (method !== "POST" || pathname !== "/v1/responses") {
        const text = jsonError(`no route for ${method} ${pathname}`)
        res.writeHead(404, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
        res.end(text)
        req.resume()
        return
      }

      readBody(req, (entry) => {
        record(entry)
        options.onRequest?.(entry)
        run(answer(res, entry.body))
      })
    }

    // the Images API of Codex's native image_gen tool: one image per request
    const onImageRequest = (req: Http.IncomingMessage, res: Http.ServerResponse): void =>
      readBody(req, (entry) => {
        imageLog.push(entry)
        if (imageLog.length > MAX_RECORDED_REQUESTS) imageLog.splice(0, imageLog.length - MAX_RECORDED_REQUESTS)
        const prompt = (entry.json as { prompt?: unknown } | undefined)?.prompt
        const text = JSON.stringify({
          created: Math.floor(Date.now() / 1000),
          data: [{ b64_json: options.image ?? onePixelPng, revised_prompt: typeof prompt === "string" ? prompt : null }]
        })
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
        res.end(text)
      })

    // Requests that carry `Connection: Upgrade` bypass the request handler and arrive
    // here with the raw socket, so the 426 is written by hand.
    const onUpgrade = (_req: Http.IncomingMessage, socket: Socket): void => {
      const text = jsonError("websocket not supported; use HTTP")
      socket.on("error", () => {})
      socket.end(
        "HTTP/1.1 426 Upgrade Required\r\n" +
          "content-type: application/json\r\n" +
          `content-length: ${Buffer.byteLength(text)}\r\n` +
          "connection: close\r\n\r\n" +
          text
      )
    }

    const server = yield* Effect.acquireRelease(
      Effect.async<Http.Server, Error>((resume) => {
        const server = Http.createServer(onRequest)
        server.on("upgrade", onUpgrade)
        server.on("connection", (socket: Socket) => {
          sockets.add(socket)
          socket.once("close", () => sockets.delete(socket))
        })
        const onError = (error: Error) => resume(Effect.fail(error))
        server.once("error", onError)
        server.listen(0, "127.0.0.1", () => {
          server.off("error", onError)
          resume(Effect.succeed(server))
        })
      }),
      (server) =>
        Effect.async<void>((resume) => {
          // close() alone waits for open responses; destroying the sockets ends hanging
          // streams so shutdown (and the process) is never held up by them.
          server.close(() => resume(Effect.void))
          for (const socket of sockets) socket.destroy()
          server.closeAllConnections()
        })
    ).pipe(Effect.orDie) // binding an ephemeral loopback port only fails if the host is broken

    const port = (server.address() as AddressInfo).port

    // The count is checked again where the waiter registers, in one synchronous step, so a request arriving after the
    // first check cannot be missed.
    const arrivals = (n: number): Effect.Effect<void> =>
      Effect.async<void>((resume) => {
        if (totalRequests >= n) return resume(Effect.void)
        const wake = () => {
          if (totalRequests < n) return
          arrivalWaiters.delete(wake)
          resume(Effect.void)
        }
        arrivalWaiters.add(wake)
        return Effect.sync(() => void arrivalWaiters.delete(wake))
      })

    const waitForRequests = (n: number): Effect.Effect<ReadonlyArray<RecordedRequest>> =>
      Effect.suspend(() =>
        totalRequests >= n ? Effect.succeed(log.slice()) : arrivals(n).pipe(Effect.zipRight(Effect.sync(() => log.slice())))
      )

    return {
      port,
      url: `http://127.0.0.1:${port}/v1`,
      enqueue: (...replies) => Effect.sync(() => void queue.push(...replies)),
      addRule: (rule) => Effect.sync(() => void rules.push(rule)),
      requests: Effect.sync(() => log.slice()),
      imageRequests: Effect.sync(() => imageLog.slice()),
      waitForRequests
    } satisfies ScriptedModel
  })
