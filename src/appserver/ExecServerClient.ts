// Owns one typed JSON-RPC connection to a paired node's exec-server (S26) over the WebSocket transport: the
// `initialize` handshake (optionally resuming a node session whose link closed), requests typed by
// schemas/execServer.ts with decoded results, correlation of answers by id, and closing with the Scope. Frames the node
// sends unasked (process output, notifications) are not for this client and are dropped. A frame that does not decode
// fails every request in flight with that ExecWireError: the peer is not speaking the protocol, waiting would not help.
import { Deferred, Duration, Effect, Either, Option, type Redacted, type Scope, Stream } from "effect"
import { type ExecRpcError, ExecRpcError as RpcErrorClass, ExecServerUnavailable, type ExecWireError } from "./errors.js"
import * as Wire from "./ExecServerWire.js"
import * as WebSocketTransport from "./WebSocketTransport.js"

export interface ClientOptions {
  readonly url: string
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly clientName: string
  /** take over this node session (its processes) instead of opening a fresh one */
  readonly resumeSessionId?: string | undefined
  readonly requestTimeout?: Duration.DurationInput | undefined
}

export type ExecServerError = ExecServerUnavailable | ExecRpcError | ExecWireError

export interface ExecServerClient {
  /** the node session this connection holds */
  readonly sessionId: string
  readonly request: <M extends Wire.ExecClientMethod>(
    method: M,
    params: Wire.ExecParams<M>
  ) => Effect.Effect<Wire.ExecResult<M>, ExecServerError>
}

export const defaults = { requestTimeout: Duration.seconds(10) } as const

type Answer = { readonly result: unknown; readonly error: Wire.ExecError | undefined }

/** Connects and completes the handshake; the link closes with the Scope. */
export const connect = (options: ClientOptions): Effect.Effect<ExecServerClient, ExecServerError, Scope.Scope> =>
  Effect.gen(function* () {
    const unavailable = (reason: string) => new ExecServerUnavailable({ url: options.url, reason })
    const handle = yield* WebSocketTransport.connect({
      url: options.url,
      ...(Option.isSome(options.token) ? { token: options.token.value } : {})
    }).pipe(Effect.mapError((e) => unavailable(e.reason)))
    const pending = new Map<number, Deferred.Deferred<Answer, ExecServerError>>()
    let nextId = 1
    const failAll = (error: ExecServerError) =>
      Effect.suspend(() => {
        const all = [...pending.values()]
        pending.clear()
        return Effect.forEach(all, (d) => Deferred.fail(d, error), { discard: true })
      })

    // one reader fiber; when the link ends, whatever is still waiting learns how
    yield* handle.incoming.pipe(
      Stream.runForEach((line) => {
        if (line._tag === "Oversized") return failAll(unavailable(`the node sent an oversized frame (${line.bytes} bytes)`))
        const frame = Wire.decodeFromNode(line.text)
        if (Either.isLeft(frame)) return failAll(frame.left)
        if (frame.right._tag !== "Response" || typeof frame.right.id !== "number") return Effect.void
        const waiting = pending.get(frame.right.id)
        if (waiting === undefined) return Effect.void
        pending.delete(frame.right.id)
        return Deferred.succeed(waiting, { result: frame.right.result, error: frame.right.error })
      }),
      Effect.zipRight(handle.closed ?? Effect.never),
      Effect.flatMap((closed) => failAll(unavailable(`the link closed (${closed.closeCode ?? "no code"})`))),
      Effect.forkScoped
    )

    const timeout = options.requestTimeout ?? defaults.requestTimeout
    const request = <M extends Wire.ExecClientMethod>(method: M, params: Wire.ExecParams<M>) =>
      Effect.gen(function* () {
        const id = nextId++
        const answer = yield* Deferred.make<Answer, ExecServerError>()
        pending.set(id, answer)
        const sent = yield* handle.send(Wire.encodeRequest(id, method, params))
        if (!sent) return yield* unavailable(`the link closed before ${method} was sent`)
        const { error, result } = yield* Deferred.await(answer).pipe(
          Effect.timeoutFail({ duration: timeout, onTimeout: () => unavailable(`no answer to ${method} within ${Duration.format(timeout)}`) }),
          Effect.ensuring(Effect.sync(() => pending.delete(id)))
        )
        if (error !== undefined) return yield* new RpcErrorClass({ method, code: error.code, rpcMessage: error.message })
        return yield* Wire.decodeResult(method, result)
      })

    const opened = yield* request("initialize", {
      clientName: options.clientName,
      ...(options.resumeSessionId !== undefined ? { resumeSessionId: options.resumeSessionId } : {})
    })
    const sent = yield* handle.send(Wire.initialized)
    if (!sent) return yield* unavailable("the link closed during the handshake")
    return { sessionId: opened.sessionId, request } satisfies ExecServerClient
  })
