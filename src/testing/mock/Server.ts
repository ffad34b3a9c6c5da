// The mock app-server as a service: a `Transport` whose every spawn is a fresh scripted peer, and the `MockAppServer`
// handle a test uses to reach its peers, messages and script. It never starts a process; a failed spawn is one the
// test asked for (`failNextSpawn`, `onSpawn`).
import { Context, Effect, Layer, type Scope } from "effect"
import { SpawnFailed } from "../../appserver/errors.js"
import { Transport, type TransportHandle, type TransportOptions } from "../../appserver/Transport.js"
import { type ClientMessage, type ClientRequest, findNth, isRequest } from "./ClientMessages.js"
import { makePeer } from "./Peer.js"
import * as Replay from "./Replay.js"
import type { AwaitMessage, MockAppServerService, MockScript } from "./Script.js"
import { makeState } from "./ServerState.js"

const makeService = (script: MockScript = {}) =>
  Effect.map(makeState(script), (state) => {
    const spawn = (options: TransportOptions): Effect.Effect<TransportHandle, SpawnFailed, Scope.Scope> =>
      Effect.gen(function* () {
        const index = ++state.spawnCount
        const failure = state.spawnFailures.shift()
        yield* state.changed.fire
        if (failure !== undefined) return yield* new SpawnFailed({ command: "mock codex app-server", reason: failure })
        const replayConn = state.replay === undefined ? undefined : yield* Replay.admitSpawn(state.replay)
        if (script.onSpawn !== undefined) yield* script.onSpawn(options, index)
        const { handle, peer } = yield* makePeer(state, index, options, replayConn)
        state.peers.push(peer)
        yield* state.changed.fire
        return handle
      })

    const awaitMessage = ((predicate: (m: ClientMessage) => boolean, occurrence = 1) =>
      state.changed.waitFor(() => findNth(state.messages, predicate, occurrence))) as AwaitMessage

    const service: MockAppServerService = {
      spawnCount: Effect.sync(() => state.spawnCount),
      peers: Effect.sync(() => [...state.peers]),
      latest: Effect.suspend(() => {
        const peer = state.peers[state.peers.length - 1]
        return peer === undefined ? Effect.dieMessage("MockAppServer: nothing was spawned yet") : Effect.succeed(peer)
      }),
      awaitPeer: (n) => state.changed.waitFor(() => state.peers.find((p) => p.index === n)),
      messages: Effect.sync(() => [...state.messages]),
      requests: (method) =>
        Effect.sync(() =>
          state.messages.filter((m): m is ClientRequest => m._tag === "Request" && (method === undefined || m.method === method))
        ),
      awaitMessage,
      awaitRequest: (method, occurrence = 1) => awaitMessage(isRequest(method), occurrence),
      setHandler: (method, handler) =>
        Effect.sync(() => {
          if (handler === undefined) state.handlers.delete(method)
          else state.handlers.set(method, handler)
        }),
      setReplyText: (text) => Effect.sync(() => void (state.replyText = text)),
      setTurnMode: (mode) => Effect.sync(() => void (state.turnMode = mode)),
      failNextSpawn: (reason = "mock spawn failure") => Effect.sync(() => void state.spawnFailures.push(reason)),
      threads: Effect.sync(() => [...state.threads.keys()]),
      forgetThread: (threadId) => Effect.sync(() => void state.threads.delete(threadId)),
      verifyReplay: state.replay === undefined ? Effect.void : Replay.verify(state.replay)
    }
    return { service, spawn }
  })

/** `Transport` backed by scripted in-memory peers, plus the `MockAppServer` control handle. */
export const layer = (script?: MockScript): Layer.Layer<Transport | MockAppServer> =>
  Layer.effectContext(
    Effect.map(makeService(script), ({ service, spawn }) =>
      Context.make(MockAppServer, service).pipe(Context.add(Transport, { spawn }))
    )
  )

/**
 * The control handle of the in-memory app-server that `layers/Test` runs on: the peers it spawned, what the harness
 * sent, handlers and turn modes changed while a test runs.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Harness } from "codex-harness"
 * import { MockAppServer } from "codex-harness/testing"
 *
 * // a turn in which Codex asks to run a command, then completes
 * const askingTurn = Effect.gen(function* () {
 *   const mock = yield* MockAppServer.MockAppServer
 *   yield* mock.setHandler("turn/start", MockAppServer.duringTurn((turn, ctx) =>
 *     ctx.request("item/commandExecution/requestApproval", {
 *       ...turn, itemId: "call_1", command: "git status", cwd: "/mock/workspace", availableDecisions: ["accept", "cancel"]
 *     }).pipe(Effect.zipRight(ctx.finishTurn(turn.threadId, { status: "completed", text: "done" })))))
 *   return yield* (yield* Harness.Harness).runTurn({ sessionId: "t1", prompt: "status?" })
 * })
 * ```
 */
export class MockAppServer extends Context.Tag("codex-harness/testing/MockAppServer")<MockAppServer, MockAppServerService>() {}
