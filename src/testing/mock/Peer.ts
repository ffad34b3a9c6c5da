// One spawn of the mock app-server: a scripted JSON-RPC peer behind a `TransportHandle`. It records what the client
// writes, serves requests (script handlers first, then the defaults), sends server requests and notifications framed
// like real stdout, and exits, crashes or is released with its Scope. It never reads the clock to wait, and once it
// has exited it must never write another line.
import { Cause, Deferred, Effect, Equal, Exit, Fiber, FiberSet, Mailbox, Option, Scope } from "effect"
import type { RequestId } from "../../../schemas/jsonrpc.js"
import { type FramedLine, LineFramer } from "../../appserver/LineFramer.js"
import { defaults as transportDefaults, type ExitInfo, type TransportHandle, type TransportOptions } from "../../appserver/Transport.js"
import {
  asRpcFailure,
  type ClientMessage,
  type ClientReply,
  type ClientRequest,
  findNth,
  idKey,
  invalidRequest,
  isRequest,
  MockPeerExited,
  parseClientLine,
  type RpcFailure
} from "./ClientMessages.js"
import { defaultHandlers } from "./DefaultHandlers.js"
import * as Replay from "./Replay.js"
import type { AwaitMessage, HandlerError, MockPeer, RequestContext } from "./Script.js"
import type { ServerState } from "./ServerState.js"
import { makeSignal } from "./Signal.js"
import { makeTurns } from "./Turns.js"

export interface PeerInternals {
  readonly peer: MockPeer
  readonly handle: TransportHandle
}

/** `replayConn`: in replay mode, the recorded connection this peer plays (it then serves nothing of its own) */
export const makePeer = (
  state: ServerState,
  index: number,
  options: TransportOptions,
  replayConn?: number | undefined
): Effect.Effect<PeerInternals, never, Scope.Scope> =>
  Effect.gen(function* () {
    const script = state.script
    const scope = yield* Effect.scope
    const fibers = yield* FiberSet.make<unknown, unknown>()
    const outgoing = yield* Mailbox.make<FramedLine>({ capacity: script.outputBuffer ?? 1024, strategy: "suspend" })
    const framer = new LineFramer(options.maxLineBytes ?? transportDefaults.maxLineBytes)
    const exitDeferred = yield* Deferred.make<ExitInfo>()
    const tailChars = options.stderrTailChars ?? transportDefaults.stderrTailChars
    const encoder = new TextEncoder()
    const changed = yield* makeSignal
    // a change a test may wait for on this peer or on the whole server
    const changedBoth = Effect.zipRight(changed.fire, state.changed.fire)

    let exitInfo: ExitInfo | undefined
    let inputEnded = false
    let released = false
    let initialized = false
    let stderr = (script.stderrTail ?? "").slice(-tailChars)
    let nextServerRequestId = 0
    const waiting = new Map<string, Deferred.Deferred<ClientReply, MockPeerExited>>()
    const messages: Array<ClientMessage> = []
    const loaded = new Set<string>()
    const codexHome = options.codexHome ?? "/mock/codex-home"

    const writeBytes = (bytes: Uint8Array) =>
      Effect.suspend(() => (exitInfo !== undefined ? Effect.void : Effect.asVoid(outgoing.offerAll(framer.push(bytes)))))
    const writeLine = (line: string) => writeBytes(encoder.encode(line + "\n"))
    const writeJson = (message: unknown) => writeLine(JSON.stringify(message))

    const die = (info: ExitInfo) =>
      Effect.suspend(() => {
        if (exitInfo !== undefined) return Effect.void
        exitInfo = info
        inputEnded = true
        const waiters = [...waiting.values()]
        waiting.clear()
        return Effect.gen(function* () {
          yield* Deferred.succeed(exitDeferred, info)
          // what was already written stays readable, then stdout ends
          yield* outgoing.end
          yield* Effect.forEach(waiters, (w) => Deferred.fail(w, new MockPeerExited({ peer: index })), { discard: true })
          // the process is gone, and its work with it; the caller (maybe a handler) finishes on its own
          yield* Effect.fiberIdWith((self) =>
            Effect.forEach(
              [...fibers].filter((f) => !Equal.equals(f.id(), self)),
              Fiber.interruptFork,
              { discard: true }
            )
          )
          yield* changedBoth
        })
      })

    const notify = (method: string, params?: unknown) => writeJson(params === undefined ? { method } : { method, params })

    const request = (method: string, params?: unknown, requestOptions?: { readonly id?: RequestId | undefined }) =>
      Effect.flatMap(Deferred.make<ClientReply, MockPeerExited>(), (deferred) =>
        // checked and registered in one step, so a death in between cannot leave the request waiting forever
        Effect.suspend(() => {
          if (exitInfo !== undefined) return Effect.fail(new MockPeerExited({ peer: index }))
          const id = requestOptions?.id ?? nextServerRequestId++
          waiting.set(idKey(id), deferred)
          return writeJson(params === undefined ? { id, method } : { id, method, params }).pipe(
            Effect.zipRight(Deferred.await(deferred)),
            Effect.ensuring(Effect.sync(() => waiting.get(idKey(id)) === deferred && waiting.delete(idKey(id))))
          )
        }))

    const replayer = replayConn === undefined || state.replay === undefined
      ? undefined
      : yield* Replay.makeReplayer(state.replay, replayConn, options, {
        writeLine,
        die,
        setStderr: (text) => Effect.sync(() => void (stderr = text.slice(-tailChars))),
        inputEnded: () => inputEnded
      })

    const turns = makeTurns(state, notify, changed)
    const defaults = defaultHandlers({ state, options, codexHome, loaded, turns, notify })

    const serve = (req: ClientRequest) =>
      Effect.gen(function* () {
        const after: Array<Effect.Effect<unknown, unknown>> = []
        const builtIn = defaults.get(req.method)
        const fallback: Effect.Effect<unknown, HandlerError> = Effect.suspend(() =>
          builtIn === undefined ? Effect.fail(defaults.unknownMethod(req.method)) : builtIn(req.params, ctx)
        )
        const ctx: RequestContext = {
          ...peer,
          requestId: req.id,
          method: req.method,
          afterReply: (effect) => Effect.sync(() => void after.push(effect)),
          fallback
        }
        const gate: RpcFailure | undefined =
          req.method === "initialize"
            ? initialized
              ? invalidRequest("Already initialized")
              : undefined
            : initialized
            ? undefined
            : invalidRequest("Not initialized")
        const custom = state.handlers.get(req.method)
        const run: Effect.Effect<unknown, HandlerError> =
          gate !== undefined
            ? Effect.fail(gate)
            : custom === undefined
            ? fallback
            : Effect.suspend(() => custom(req.params, ctx))
        const outcome = yield* Effect.exit(run)
        if (Exit.isSuccess(outcome)) {
          if (req.method === "initialize") initialized = true
          yield* writeJson({ id: req.id, result: outcome.value ?? {} })
        } else {
          const failure = Cause.failureOption(outcome.cause)
          if (Option.isSome(failure) && failure.value instanceof MockPeerExited) return
          if (Option.isNone(failure) && Cause.isInterruptedOnly(outcome.cause)) return
          const error = Option.flatMap(failure, (f) => Option.fromNullable(asRpcFailure(f))).pipe(
            Option.getOrElse(() => ({ code: -32603, message: `mock handler for ${req.method} failed: ${Cause.pretty(outcome.cause)}` }))
          )
          yield* writeJson({ id: req.id, error })
        }
        for (const effect of after) {
          yield* effect.pipe(Effect.catchAllCause((cause) => Effect.logWarning("mock afterReply effect failed", cause)))
        }
      })

    /** what a received message sets going: a request is served on its own fiber, a reply wakes its server request */
    const dispatch = (message: ClientMessage): Effect.Effect<void> => {
      if (replayer !== undefined) return replayer.received(message)
      switch (message._tag) {
        case "Request":
          // a fork inherits the caller's interruptibility, and the client may write from a finalizer: the peer's
          // work must stay interruptible so its scope can always close
          return Effect.asVoid(FiberSet.run(fibers, Effect.interruptible(serve(message))))
        case "Response": {
          const waiter = waiting.get(idKey(message.id))
          if (waiter === undefined) return Effect.void
          waiting.delete(idKey(message.id))
          const reply: ClientReply =
            message.error !== undefined
              ? { _tag: "Error", id: message.id, error: message.error }
              : { _tag: "Result", id: message.id, result: message.result }
          return Effect.asVoid(Deferred.succeed(waiter, reply))
        }
        default:
          return Effect.void
      }
    }

    const send = (line: string): Effect.Effect<boolean> =>
      Effect.suspend(() => {
        if (inputEnded || exitInfo !== undefined) return Effect.succeed(false)
        const message = parseClientLine(index, line)
        messages.push(message)
        state.messages.push(message)
        // the reply's waiter is taken now, in the same step as the check above, as if the line were handled at once
        const then = dispatch(message)
        return changedBoth.pipe(Effect.zipRight(then), Effect.as(true))
      })

    const awaitMessage = ((predicate: (m: ClientMessage) => boolean, occurrence = 1) =>
      changed.waitFor(() => findNth(messages, predicate, occurrence))) as AwaitMessage

    const peer: MockPeer = {
      index,
      options,
      messages: Effect.sync(() => [...messages]),
      requests: (method) =>
        Effect.sync(() => messages.filter((m): m is ClientRequest => m._tag === "Request" && (method === undefined || m.method === method))),
      awaitMessage,
      awaitRequest: (method, occurrence = 1) => awaitMessage(isRequest(method), occurrence),
      notify,
      request,
      sendRaw: writeLine,
      sendBytes: (bytes) => writeBytes(typeof bytes === "string" ? encoder.encode(bytes) : bytes),
      exit: (code = 0) => die({ exitCode: code, signal: null }),
      crash: (signal = "SIGKILL") => die({ exitCode: null, signal }),
      setStderrTail: (text) => Effect.sync(() => void (stderr = text.slice(-tailChars))),
      appendStderr: (text) => Effect.sync(() => void (stderr = (stderr + text).slice(-tailChars))),
      exitInfo: Effect.sync(() => Option.fromNullable(exitInfo)),
      awaitExit: Deferred.await(exitDeferred),
      inputEnded: Effect.sync(() => inputEnded),
      released: Effect.sync(() => released),
      awaitReleased: changed.waitFor(() => (released ? true : undefined)).pipe(Effect.asVoid),
      activeTurn: (threadId) => Effect.sync(() => Option.fromNullable(turns.active(threadId)?.turnId)),
      awaitActiveTurn: (threadId) => changed.waitFor(() => turns.active(threadId)?.turnId),
      finishTurn: turns.finish
    }

    // closing the spawn's Scope is the transport being released: stdin closes, the process exits (or is killed), and
    // every fiber of the peer stops (the FiberSet, made first, is finalized last)
    yield* Scope.addFinalizer(
      scope,
      Effect.suspend(() => {
        released = true
        inputEnded = true
        return die(script.exitOnEndInput === false ? { exitCode: null, signal: "SIGKILL" } : { exitCode: 0, signal: null }).pipe(
          Effect.zipRight(outgoing.shutdown),
          Effect.zipRight(changedBoth)
        )
      })
    )

    const handle: TransportHandle = {
      pid: undefined,
      incoming: Mailbox.toStream(outgoing),
      send,
      exited: Deferred.await(exitDeferred),
      stderrTail: Effect.sync(() => stderr),
      endInput: Effect.suspend(() => {
        if (inputEnded) return Effect.void
        inputEnded = true
        return changed.fire.pipe(
          Effect.zipRight(replayer === undefined ? Effect.void : replayer.closed),
          Effect.zipRight(script.exitOnEndInput === false ? Effect.void : die({ exitCode: 0, signal: null }))
        )
      })
    }
    if (replayer !== undefined) yield* FiberSet.run(fibers, Effect.interruptible(replayer.run))
    return { peer, handle }
  })
