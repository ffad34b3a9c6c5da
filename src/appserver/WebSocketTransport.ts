// Owns a WebSocket to an app-server the harness did not start (`codex app-server --listen ws://...`, reached directly on
// loopback, through an SSH forward or a wss:// proxy): opening it with the bearer token in a header (read from the
// environment, never argv or the URL), one JSON-RPC message per text frame each way, a frame-size cap, a bounded
// receive buffer that pauses the socket instead of growing, and closing it with the Scope. It hands the connection the
// same TransportHandle a child process does, so AppServerConnection runs unchanged over either. It never parses
// JSON-RPC, and it cannot stop the remote process: closing the socket is all `endInput` can do.
import * as Socket from "@effect/platform/Socket"
import { Cause, Config, Deferred, Duration, Effect, Exit, Fiber, Option, Redacted, type Scope } from "effect"
// @ts-expect-error `ws` (the WebSocket @effect/platform-node itself uses on Node 20) ships no type declarations
import { WebSocket as WsImpl } from "ws"
import * as AppServerUrl from "./AppServerUrl.js"
import * as CodexArgs from "./CodexArgs.js"
import { AppServerExited, AppServerUnreachable } from "./errors.js"
import type { FramedLine } from "./LineFramer.js"
import * as LineInbox from "./LineInbox.js"
import type { ExitInfo, TransportHandle } from "./Transport.js"

/** The part of a `ws` WebSocket used here beyond the WHATWG interface the platform Socket drives. */
interface NodeWebSocket {
  pause(): void
  resume(): void
  close(code?: number): void
  terminate(): void
}
const WS = WsImpl as new (
  url: string,
  protocols: string | Array<string> | undefined,
  options: {
    readonly headers: Record<string, string>
    readonly maxPayload: number
    readonly followRedirects: boolean
    readonly perMessageDeflate: boolean
  }
) => NodeWebSocket

export interface WebSocketOptions {
  readonly url: string
  /** the variable the bearer token is read from (a name); unset or empty: no Authorization header */
  readonly tokenEnv?: string | undefined
  /** the bearer token itself (a paired node's, read from its 0600 file); wins over `tokenEnv` */
  readonly token?: Redacted.Redacted<string> | undefined
  /** the largest frame accepted; a bigger one closes the connection (code 1009), it cannot be skipped like a line */
  readonly maxFrameBytes?: number | undefined
  readonly openTimeout?: Duration.DurationInput | undefined
  /** frames held for the reader before the socket is paused (TCP then holds the rest on the server's side) */
  readonly receiveHighWater?: number | undefined
}

export const defaults = {
  maxFrameBytes: 8 * 1024 * 1024,
  openTimeout: Duration.seconds(10),
  receiveHighWater: 1_024,
  closeGrace: Duration.seconds(2)
} as const

/** What a failed open said, in words an operator can act on. */
const describeOpenFailure = (event: unknown, tokenEnv: string, tokenSent: boolean): string => {
  // the socket's "error" event (an ErrorEvent) carries the Node error
  const cause = (event as { error?: unknown } | undefined)?.error ?? event
  const message = (cause as { message?: unknown } | undefined)?.message
  const text = typeof message === "string" ? message : typeof cause === "string" ? cause : ""
  const status = /Unexpected server response: (\d+)/.exec(text)?.[1]
  if (status === "401") {
    return tokenSent
      ? `the app-server refused the token in $${tokenEnv} (HTTP 401)`
      : `the app-server wants a token (HTTP 401): put it in $${tokenEnv}`
  }
  if (status === "403") return "the app-server refused the connection (HTTP 403)"
  if (status !== undefined) return `unexpected HTTP ${status} instead of a WebSocket upgrade`
  const code = (cause as { code?: unknown } | undefined)?.code
  if (code === "ECONNREFUSED") return "connection refused (is `codex app-server --listen` running there?)"
  if (code === "ENOTFOUND") return "no such host"
  return text === "" ? "the connection failed" : text
}

/** Opens the socket and completes the handshake's transport part; the socket closes with the Scope. */
export const connect = (options: WebSocketOptions): Effect.Effect<TransportHandle, AppServerUnreachable, Scope.Scope> =>
  Effect.gen(function* () {
    const parsed = AppServerUrl.parse(options.url)
    // the refused URL may carry the credentials it is refused for
    if ("problem" in parsed) return yield* new AppServerUnreachable({ url: CodexArgs.redactUrl(options.url), reason: parsed.problem })
    const url = parsed.endpoint.url
    const tokenEnv = options.tokenEnv ?? AppServerUrl.defaultTokenEnv
    const token = options.token !== undefined ? Option.some(options.token) : yield* Config.redacted(tokenEnv).pipe(
      Config.option,
      Config.map(Option.filter((t) => Redacted.value(t) !== "")),
      Effect.orElseSucceed(() => Option.none<Redacted.Redacted>())
    )
    const maxFrameBytes = options.maxFrameBytes ?? defaults.maxFrameBytes
    const highWater = options.receiveHighWater ?? defaults.receiveHighWater

    let socket: NodeWebSocket | undefined
    // the platform Socket asks for a WHATWG-style constructor; `ws` is one that also takes headers and a payload cap
    const construct = (target: string, protocols?: string | Array<string>) => {
      socket = new WS(target, protocols, {
        headers: Option.match(token, { onNone: () => ({}), onSome: (t) => ({ Authorization: `Bearer ${Redacted.value(t)}` }) }),
        maxPayload: maxFrameBytes,
        // the token must not follow a redirect to another host
        followRedirects: false,
        perMessageDeflate: false
      })
      return socket as unknown as globalThis.WebSocket
    }
    const platformSocket = yield* Socket.makeWebSocket(url, {
      openTimeout: options.openTimeout ?? defaults.openTimeout,
      // every close ends the run with its code, so the connection can say how it ended
      closeCodeIsError: () => true
    }).pipe(Effect.provideService(Socket.WebSocketConstructor, construct))

    const inbox = yield* LineInbox.make({ pause: () => socket?.pause(), resume: () => socket?.resume() }, highWater)
    // called once per frame from the socket's message callback; it must not wait, so it hands the lines over at once
    const onFrame = (data: string | Uint8Array) => {
      const text = typeof data === "string" ? data : Buffer.from(data).toString("utf8")
      // one message per frame (0.171.0); tolerate a sender that puts newline-separated messages in one
      const lines = text.includes("\n") ? text.split("\n") : [text]
      inbox.offer(lines.flatMap((line): Array<FramedLine> => (line.trim() !== "" ? [{ _tag: "Line", text: line }] : [])))
    }

    const opened = yield* Deferred.make<void>()
    const ended = yield* Deferred.make<AppServerExited>()
    let closed = false
    const run = yield* platformSocket.runRaw(onFrame, { onOpen: Deferred.succeed(opened, undefined) }).pipe(
      Effect.exit,
      Effect.flatMap((exit) =>
        Effect.gen(function* () {
          closed = true
          const error = Exit.isFailure(exit) ? socketErrorOf(exit.cause) : undefined
          const closeCode = error?.reason === "Close" ? error.code : undefined
          const closeReason = error?.reason === "Close" ? error.closeReason : error !== undefined ? describeOpenFailure(error.cause, tokenEnv, false) : undefined
          inbox.end()
          yield* Deferred.succeed(ended, new AppServerExited({
            exitCode: null,
            signal: null,
            stderrTail: "",
            url,
            ...(closeCode !== undefined ? { closeCode } : { closeCode: 1006 }),
            ...(closeReason !== undefined && closeReason !== "" ? { closeReason } : {})
          }))
          return exit
        })
      ),
      Effect.forkScoped
    )

    // open, or the reason it did not
    const outcome = yield* Effect.raceFirst(
      Deferred.await(opened).pipe(Effect.as(undefined)),
      Fiber.join(run).pipe(Effect.map((exit) => (Exit.isFailure(exit) ? exit : undefined)))
    )
    if (outcome !== undefined || closed) {
      const error = outcome !== undefined ? socketErrorOf(outcome.cause) : undefined
      const reason = error === undefined
        ? "the connection closed during the handshake"
        : error.reason === "Close"
        ? `closed during the handshake (code ${error.code})`
        : error.reason === "OpenTimeout"
        ? `no WebSocket handshake within ${Duration.format(Duration.decode(options.openTimeout ?? defaults.openTimeout))}`
        : describeOpenFailure(error.cause, tokenEnv, Option.isSome(token))
      return yield* new AppServerUnreachable({ url, reason })
    }

    const write = yield* platformSocket.writer
    // the remote peer may be gone without a close handshake: the close wait is bounded, then the socket is dropped
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        if (!closed) socket?.close(1000)
        const done = yield* Deferred.await(ended).pipe(Effect.interruptible, Effect.timeoutOption(defaults.closeGrace))
        if (Option.isNone(done)) socket?.terminate()
      })
    )

    const exitInfo: Effect.Effect<ExitInfo> = Deferred.await(ended).pipe(Effect.as({ exitCode: null, signal: null }))
    const handle: TransportHandle = {
      pid: undefined,
      incoming: inbox.stream,
      readLines: inbox.readLines,
      send: (line) =>
        Effect.suspend(() =>
          closed
            ? Effect.succeed(false)
            : write(line).pipe(
              Effect.as(true),
              Effect.catchAll(() => Effect.succeed(false)),
              // a write waits while the socket is not open: a socket closing meanwhile answers it. Both sides are
              // interruptible on purpose: a send made in an uninterruptible region (turn/start is one) forks them
              // uninterruptible, and raceFirst waits for the loser's interruption, so the close wait would hang it
              Effect.interruptible,
              Effect.raceFirst(Deferred.await(ended).pipe(Effect.as(false), Effect.interruptible))
            )
        ),
      exited: exitInfo,
      stderrTail: Effect.succeed(""),
      endInput: Effect.sync(() => {
        if (!closed) socket?.close(1000)
      }),
      closed: Deferred.await(ended)
    }
    return handle
  })

/** The socket error a run failed with, if that is why it ended. */
const socketErrorOf = (cause: Cause.Cause<unknown>): Socket.SocketError | undefined =>
  Option.getOrUndefined(Option.filter(Cause.failureOption(cause), Socket.isSocketError))
