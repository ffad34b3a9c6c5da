// One JSON-RPC session with an app-server over a transport: the initialize handshake, request/response correlation
// with per-request timeouts, server requests decoded and routed to typed handlers registered within a Scope,
// notifications decoded once into a tagged union and fanned out to subscribers, and a once-only termination that fails
// every pending request. It is the only code that reads or writes the wire; above it nothing parses a message or
// matches a method name. It never interprets turns or threads beyond routing by threadId.
import { Cause, Deferred, Duration, Effect, Exit, Mailbox, Option, Queue, Schema, Scope, Stream } from "effect"
import type { ParseOptions } from "effect/SchemaAST"
import { ErrorCodes, type RequestId, type RequestMessage } from "../../schemas/jsonrpc.js"
import {
  type ClientMethod,
  ClientMethods,
  type InitializeResponse,
  type ServerNotification,
  type ServerRequestMethod
} from "../../schemas/protocol.js"
import {
  AppServerExited,
  type ConnectionClosed,
  ConnectionRetired,
  ProtocolDecodeError,
  type RequestError,
  RequestTimedOut,
  RpcError
} from "./errors.js"
import { initializeParams } from "./InitializeRequest.js"
import type { FramedLine } from "./LineFramer.js"
import * as WireLog from "./WireLog.js"
import * as Notifications from "./Notifications.js"
import { registerForScope } from "./ScopedRegistration.js"
import { ThreadRoutes } from "./ThreadRoutes.js"
import { answeredByPeople, maskStrings } from "./Redaction.js"
import { type HandlerFailure, makeRouter, type ServerRequestRoute } from "./ServerRequestRoutes.js"
import type { TransportHandle } from "./Transport.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export type { HandlerFailure, ServerRequestRoute } from "./ServerRequestRoutes.js"

export interface ConnectionOptions {
  readonly clientName?: string | undefined
  readonly clientVersion?: string | undefined
  /** default timeout of a request; individual requests may override it */
  readonly requestTimeout?: Duration.DurationInput | undefined
  readonly notificationBuffer?: number | undefined
}

export const defaults = {
  requestTimeout: Duration.seconds(60),
  notificationBuffer: 4_096
} as const

export type Params<M extends ClientMethod> = (typeof ClientMethods)[M]["params"]["Type"]
export type Result<M extends ClientMethod> = (typeof ClientMethods)[M]["result"]["Type"]

export interface RequestOptions {
  readonly timeout?: Duration.DurationInput | undefined
}

export interface ConnectionStats {
  readonly malformedLines: number
  readonly oversizedLines: number
  readonly unmatchedResponses: number
  /** notifications of a method the harness reads whose params did not decode (passed on as `Unknown`) */
  readonly undecodedNotifications: number
  readonly pendingRequests: number
}

export interface AppServerConnection {
  readonly initialize: InitializeResponse
  /** a typed request from the protocol contract; the result is decoded, unknown fields kept */
  readonly request: <M extends ClientMethod>(
    method: M,
    params: Params<M>,
    options?: RequestOptions
  ) => Effect.Effect<Result<M>, RequestError>
  /** a method outside the contract (an embedder's own), untyped result */
  readonly requestRaw: (method: string, params: unknown, options?: RequestOptions) => Effect.Effect<unknown, RequestError>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void, ConnectionClosed>
  /**
   * Subscribes now (so nothing emitted after this returns is missed) and yields the decoded notifications as a stream,
   * optionally only those about this thread. Ends with the subscription's scope. Overflow policy is
   * backpressure: a subscriber that stops reading for `notificationBuffer` messages holds up the reader, so keep
   * reading (or close the scope) rather than losing a `turn/completed`.
   */
  readonly subscribe: (
    filter?: { readonly threadId?: string | undefined }
  ) => Effect.Effect<Stream.Stream<ServerNotification>, never, Scope.Scope>
  /**
   * The same subscription as a queue, for a consumer that must know how much it has yet to read (S25: a process's exit
   * is reported only after the output published before it has been taken). Same backpressure; ends with the scope.
   */
  readonly subscribeQueue: Effect.Effect<Queue.Dequeue<ServerNotification>, never, Scope.Scope>
  /**
   * `subscribe` as a queue (no stream stages between the reader and the consumer), optionally only one thread's
   * notifications (and every DroppedLine). Shut down when the connection ends, so a take is interrupted then.
   */
  readonly subscribeQueueFor: (
    filter?: { readonly threadId?: string | undefined }
  ) => Effect.Effect<Queue.Dequeue<ServerNotification>, never, Scope.Scope>
  /**
   * `subscribeQueueFor` into a mailbox of the caller's (bounded with the "suspend" strategy, for backpressure), which may
   * also carry its own messages (a turn's silence check); ended with the subscription's scope or the connection, so its
   * reader takes what is left and then sees it done. A turn reads its notifications this way: a mailbox's `takeAll` takes
   * a burst at once and wakes its reader once for the offers of one tick (150 run-loop steps fewer a warm turn than a
   * queue's takes, bench/turn-ops.ts)
   */
  readonly subscribeMailbox: <A>(
    mailbox: Mailbox.Mailbox<A | ServerNotification>,
    filter?: { readonly threadId?: string | undefined }
  ) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Watches now: runs `f` on each notification (of one thread, with a filter) on the connection's reader itself, until
   * the current Scope ends. The cheap way to watch (no queue, no fiber), and an ordered one: `f` has seen every
   * notification before the reader routes a server request that came after it on the wire. `f` holds up the reader
   * while it runs, so it must not wait (record, signal, hand over); a failure of `f` is logged and ignored.
   */
  readonly forEachNotification: (
    filter: { readonly threadId?: string | undefined } | undefined,
    f: (notification: ServerNotification) => Effect.Effect<void>
  ) => Effect.Effect<void, never, Scope.Scope>
  /** installs a typed server-request handler for the lifetime of the current Scope; newer routes win */
  readonly handle: <M extends ServerRequestMethod>(method: M, route: ServerRequestRoute<M>) => Effect.Effect<void, never, Scope.Scope>
  /** waits until the connection ends and yields why */
  readonly terminated: Effect.Effect<ConnectionClosed>
  readonly terminationCause: Effect.Effect<Option.Option<ConnectionClosed>>
  /** fails every current and future request with ConnectionRetired and lets the process exit */
  readonly retire: (reason: string) => Effect.Effect<void>
  readonly stats: Effect.Effect<ConnectionStats>
  readonly pid: number | undefined
}

interface Pending {
  readonly method: string
  readonly deferred: Deferred.Deferred<unknown, RequestError>
}

const preserve: ParseOptions = { onExcessProperty: "preserve", errors: "first" }

// compiled once: decoding a result is on the hot path of every request
const resultDecoders = new Map<string, (u: unknown) => Effect.Effect<unknown, ProtocolDecodeError>>(
  Object.entries(ClientMethods).map(([method, contract]) => {
    // one decoder per method in one map: typed per method again by `request`'s signature (Result<M>)
    const decode = Schema.decodeUnknown(contract.result as Schema.Schema<unknown>, preserve)
    return [
      method,
      (u: unknown) =>
        decode(u).pipe(Effect.mapError((e) => new ProtocolDecodeError({ method, detail: e.message.split("\n")[0] ?? "" })))
    ] as const
  })
)

/** a subscription's receiving end: a queue or a mailbox, offered each notification it asked for (waiting when full) */
interface Subscriber {
  readonly offer: (notification: ServerNotification) => Effect.Effect<unknown>
  /** the connection or the subscription ended: shuts a queue down, ends a mailbox (its reader takes what is left) */
  readonly close: Effect.Effect<unknown>
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isRequestId = (u: unknown): u is RequestId => typeof u === "string" || (typeof u === "number" && Number.isInteger(u))

/** Connects over an already-spawned transport and performs the handshake. The connection lives as long as the Scope. */
export const make = (
  transport: TransportHandle,
  options: ConnectionOptions = {}
): Effect.Effect<AppServerConnection, RequestError, Scope.Scope> =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const requestTimeout = options.requestTimeout ?? defaults.requestTimeout
    const pending = new Map<number, Pending>()
    let nextId = 0
    const router = makeRouter()
    let cause: ConnectionClosed | undefined
    const counters = { malformedLines: 0, oversizedLines: 0, unmatchedResponses: 0, undecodedNotifications: 0 }
    const terminatedDeferred = yield* Deferred.make<ConnectionClosed>()
    // Subscribers, routed by thread at the reader (ThreadRoutes), straight into each one's bounded queue (no PubSub
    // between). A full queue holds up the reader until it has room (backpressure, as documented on `subscribe`).
    // Observers (`forEachNotification`) run on the reader itself: no queue and no fiber to wake per message.
    const buffer = options.notificationBuffer ?? defaults.notificationBuffer
    const queues = new ThreadRoutes<Subscriber>()
    const observers = new ThreadRoutes<(n: ServerNotification) => Effect.Effect<void>>()
    let subscriptionsClosed = false
    yield* Scope.addFinalizer(
      scope,
      Effect.suspend(() => {
        subscriptionsClosed = true
        observers.drain()
        return Effect.forEach(queues.drain(), (subscriber) => subscriber.close, { discard: true })
      })
    )
    const subscribeWith = (subscriber: Subscriber, filter: { readonly threadId?: string | undefined } | undefined) =>
      Effect.acquireRelease(
        Effect.suspend(() => {
          if (subscriptionsClosed) return subscriber.close
          queues.add(filter?.threadId, subscriber)
          return Effect.void
        }),
        () =>
          Effect.suspend(() => {
            queues.remove(filter?.threadId, subscriber)
            return subscriber.close
          })
      ).pipe(Effect.asVoid)
    const subscribeInto = (queue: Queue.Queue<ServerNotification>, filter?: { readonly threadId?: string | undefined }) =>
      subscribeWith({ offer: (n) => Queue.offer(queue, n), close: Queue.shutdown(queue) }, filter)
    const subscribeMailbox = <A>(mailbox: Mailbox.Mailbox<A | ServerNotification>, filter?: { readonly threadId?: string | undefined }) =>
      subscribeWith({ offer: (n) => mailbox.offer(n), close: mailbox.end }, filter)
    const subscribeQueueFor = (filter?: { readonly threadId?: string | undefined }) =>
      Effect.flatMap(Queue.bounded<ServerNotification>(buffer), (queue) => Effect.as(subscribeInto(queue, filter), queue)) as Effect.Effect<
        Queue.Dequeue<ServerNotification>,
        never,
        Scope.Scope
      >
    const forEachNotification = (
      filter: { readonly threadId?: string | undefined } | undefined,
      f: (notification: ServerNotification) => Effect.Effect<void>
    ) => {
      // an observer's failure is its own: the reader logs it and goes on. Most notifications are nothing to an observer,
      // which then answers Effect.void: that is passed on as it is, so `publish` can skip it without running it
      const observer = (n: ServerNotification) => {
        const effect = f(n)
        return effect === Effect.void
          ? effect
          : Effect.catchAllCause(effect, (failure) => HarnessLog.warning(`a notification observer failed on ${n.method}`, failure))
      }
      return registerForScope(
        () => {
          if (!subscriptionsClosed) observers.add(filter?.threadId, observer)
        },
        Effect.sync(() => observers.remove(filter?.threadId, observer))
      )
    }
    /** observed, then offered to each subscriber that wants it, in turn; a full queue is waited on before the next message is read */
    const publish = (n: ServerNotification): Effect.Effect<void> => {
      const dropped = n._tag === "DroppedLine"
      const threadId = dropped ? undefined : Notifications.threadIdOf(n)
      const watching = observers.targets(threadId, dropped)
      const targets = queues.targets(threadId, dropped)
      const offered: Effect.Effect<void> = targets.length === 0
        ? Effect.void
        : targets.length === 1
        ? Effect.asVoid(targets[0]!.offer(n))
        : Effect.forEach(targets, (subscriber) => subscriber.offer(n), { discard: true })
      if (watching.length === 0) return offered
      // each observer is asked at once (an answer is a description, not yet run), and only the effects that do
      // something are run, in the observers' order, before the subscribers get the notification: on a warm turn most
      // answers are Effect.void, and running them cost the reader more than the rest of the notification
      let observed: Array<Effect.Effect<void>> | undefined
      for (const observe of watching) {
        const effect = observe(n)
        if (effect !== Effect.void) (observed ??= []).push(effect)
      }
      if (observed === undefined) return offered
      return Effect.zipRight(observed.length === 1 ? observed[0]! : Effect.all(observed, { discard: true }), offered)
    }

    const terminate = (why: ConnectionClosed) =>
      Effect.suspend(() => {
        if (cause !== undefined) return Effect.void
        cause = why
        const failing = [...pending.values()]
        pending.clear()
        return Effect.forEach(failing, (p) => Deferred.fail(p.deferred, why), { discard: true }).pipe(
          Effect.zipRight(Deferred.succeed(terminatedDeferred, why))
        )
      })

    const wireLog = yield* WireLog.make
    /** `logAs`: what the wire log shows instead of the message (a reply people's answers are in) */
    const write = (message: unknown, logAs?: unknown) =>
      Effect.suspend(() => {
        const line = JSON.stringify(message)
        if (!wireLog.logs) return transport.send(line)
        return Effect.zipRight(wireLog.sent(logAs === undefined ? line : JSON.stringify(logAs)), transport.send(line))
      })

    const reply = (id: RequestId, method: string, outcome: Exit.Exit<unknown, HandlerFailure>) =>
      write(
        Exit.isSuccess(outcome)
          ? { id, result: outcome.value ?? {} }
          : Option.match(Cause.failureOption(outcome.cause), {
              onSome: (f) => ({ id, error: f.data === undefined ? { code: f.code, message: f.message } : f }),
              onNone: () => ({ id, error: { code: ErrorCodes.internalError, message: "the harness handler was interrupted" } })
            }),
        Exit.isSuccess(outcome) && answeredByPeople.has(method) ? { id, result: maskStrings(outcome.value ?? {}) } : undefined
      )

    const routeServerRequest = (request: RequestMessage) =>
      // handlers may wait on people: never block the reader
      router.answer({ id: request.id, method: request.method, params: request.params }).pipe(
        Effect.exit,
        Effect.flatMap((exit) => reply(request.id, request.method, exit)),
        // no stack trace captured per span: it cost more than the rest of the span on every message
        Effect.withSpan("AppServer.serverRequest", { attributes: { method: request.method }, captureStackTrace: false }),
        Effect.forkIn(scope),
        Effect.asVoid
      )

    const settleResponse = (message: Record<string, unknown>) =>
      Effect.suspend(() => {
        const id = message.id
        const entry = typeof id === "number" ? pending.get(id) : undefined
        if (entry === undefined) {
          counters.unmatchedResponses++
          return HarnessLog.debug("response for an unknown request id").pipe(Effect.annotateLogs("id", String(id)))
        }
        if (typeof id === "number") pending.delete(id)
        const error = message.error
        if (isRecord(error)) {
          return Deferred.fail(
            entry.deferred,
            new RpcError({
              method: entry.method,
              code: typeof error.code === "number" ? error.code : ErrorCodes.internalError,
              rpcMessage: typeof error.message === "string" ? error.message : "unknown error",
              data: error.data
            })
          )
        }
        if (error !== undefined && error !== null) {
          return Deferred.fail(
            entry.deferred,
            new RpcError({ method: entry.method, code: ErrorCodes.internalError, rpcMessage: `malformed error: ${JSON.stringify(error)}` })
          )
        }
        return Deferred.succeed(entry.deferred, message.result)
      })

    const onLine = (line: FramedLine): Effect.Effect<void> =>
      wireLog.logs && line._tag !== "Oversized" ? Effect.zipRight(wireLog.received(line.text), handleLine(line)) : handleLine(line)

    const handleLine = (line: FramedLine): Effect.Effect<void> => {
      if (line._tag === "Oversized") {
        counters.oversizedLines++
        // the turn it belonged to must learn at once that it lost a message, not go silent
        return HarnessLog.warning(`dropped an oversized line from the app-server (${line.bytes} bytes)`).pipe(
          Effect.zipRight(publish(Notifications.droppedLine(line.bytes)))
        )
      }
      let message: unknown
      try {
        message = JSON.parse(line.text)
      } catch {
        counters.malformedLines++
        return HarnessLog.warning("ignored a line from the app-server that is not JSON")
      }
      if (!isRecord(message)) {
        counters.malformedLines++
        return HarnessLog.warning("ignored a JSON line from the app-server that is not an object")
      }
      const method = message.method
      if (typeof method === "string") {
        if ("id" in message) {
          if (!isRequestId(message.id)) {
            counters.malformedLines++
            return HarnessLog.warning(`ignored server request ${method} with an invalid id`)
          }
          return routeServerRequest({ id: message.id, method, params: message.params })
        }
        const decoded = Notifications.decode(method, message.params)
        if (decoded._tag === "Unknown" && decoded.problem !== undefined) {
          counters.undecodedNotifications++
          return HarnessLog.debug(`passing on an undecodable ${method} as Unknown: ${decoded.problem}`).pipe(
            Effect.zipRight(publish(decoded))
          )
        }
        return publish(decoded)
      }
      if ("id" in message && ("result" in message || "error" in message)) return settleResponse(message)
      counters.malformedLines++
      return HarnessLog.warning("ignored a message from the app-server that is neither request, response nor notification")
    }

    // one reader fiber for the whole connection; it ends when stdout closes
    const reader = yield* (transport.readLines !== undefined ? transport.readLines(onLine) : Stream.runForEach(transport.incoming, onLine)).pipe(
      Effect.forkIn(scope)
    )

    // termination: stdout closing or the process exiting, whichever comes first; give the other a moment
    yield* Effect.gen(function* () {
      const first = yield* Effect.raceFirst(
        reader.await.pipe(Effect.as("reader" as const)),
        transport.exited.pipe(Effect.as("exit" as const))
      )
      if (first === "exit") yield* reader.await.pipe(Effect.timeout(Duration.seconds(1)), Effect.ignore)
      const info = yield* transport.exited.pipe(Effect.timeoutOption(Duration.seconds(1)))
      const stderrTail = yield* transport.stderrTail
      // a closed WebSocket says how it closed; a process, how it exited
      const told = transport.closed === undefined ? Option.none() : yield* transport.closed.pipe(Effect.timeoutOption(Duration.seconds(1)))
      yield* terminate(
        Option.getOrElse(told, () =>
          new AppServerExited({
            exitCode: Option.match(info, { onNone: () => null, onSome: (i) => i.exitCode }),
            signal: Option.match(info, { onNone: () => null, onSome: (i) => i.signal }),
            stderrTail
          }))
      )
    }).pipe(Effect.forkIn(scope))
    // closing the scope means the harness is done with it: anyone still waiting gets a clear cause
    yield* Scope.addFinalizer(scope, terminate(new ConnectionRetired({ reason: "its scope closed" })))

    const requestRaw = (method: string, params: unknown, requestOptions?: RequestOptions) =>
      Effect.gen(function* () {
        if (cause !== undefined) return yield* Effect.fail(cause)
        const id = nextId++
        const deferred = yield* Deferred.make<unknown, RequestError>()
        pending.set(id, { method, deferred })
        const sent = yield* write({ id, method, params: params ?? {} })
        if (!sent) {
          pending.delete(id)
          return yield* Effect.fail(yield* terminatedCauseNow)
        }
        const timeout = requestOptions?.timeout ?? requestTimeout
        return yield* Deferred.await(deferred).pipe(
          // interruptible so the timeout still applies when called from a finalizer or an onInterrupt handler
          Effect.interruptible,
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () => new RequestTimedOut({ method, timeoutMs: Duration.toMillis(timeout) })
          }),
          Effect.ensuring(Effect.sync(() => pending.delete(id)))
        )
      })

    // stdin refused a write: the process is going away, so wait (briefly) for the real cause
    const terminatedCauseNow = Deferred.await(terminatedDeferred).pipe(
      Effect.timeoutOption(Duration.seconds(2)),
      Effect.map(Option.getOrElse(() => new AppServerExited({ exitCode: null, signal: null, stderrTail: "" }) as ConnectionClosed))
    )

    const request = <M extends ClientMethod>(method: M, params: Params<M>, requestOptions?: RequestOptions) =>
      requestRaw(method, params, requestOptions).pipe(
        Effect.flatMap((u) => resultDecoders.get(method)!(u)),
        Effect.withSpan("AppServer.request", { attributes: { method }, captureStackTrace: false })
      ) as Effect.Effect<Result<M>, RequestError>

    const notify = (method: string, params?: unknown) =>
      Effect.suspend(() => {
        if (cause !== undefined) return Effect.fail(cause)
        return write(params === undefined ? { method } : { method, params }).pipe(
          Effect.flatMap((sent) => (sent ? Effect.void : Effect.flatMap(terminatedCauseNow, Effect.fail)))
        )
      })

    const initialize = yield* request("initialize", initializeParams(options))
    yield* notify("initialized")

    return {
      initialize,
      request,
      requestRaw,
      notify,
      subscribe: (filter) => Effect.map(subscribeQueueFor(filter), (queue) => Stream.fromQueue(queue)),
      subscribeQueue: subscribeQueueFor(),
      subscribeQueueFor,
      subscribeMailbox,
      forEachNotification,
      handle: router.install,
      terminated: Deferred.await(terminatedDeferred),
      terminationCause: Effect.sync(() => Option.fromNullable(cause)),
      retire: (reason) =>
        terminate(new ConnectionRetired({ reason })).pipe(Effect.zipRight(transport.endInput)),
      stats: Effect.sync(() => ({ ...counters, pendingRequests: pending.size })),
      pid: transport.pid
    } satisfies AppServerConnection
  })
