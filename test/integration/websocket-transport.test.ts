// The app-server connection over a WebSocket, on the real peer: a separate `codex app-server --listen ws://127.0.0.1:PORT`
// process (its own CODEX_HOME, the ScriptedModel as provider) that the harness only connects to. The same
// AppServerConnection runs over it; the session records the websocket runtime; a remote app-server that dies mid-turn
// fails the turn with a typed, retryable error and detaches the binding (S37 remote clause); after a restart the next
// turn starts a fresh thread. Nothing is left running.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import * as Connection from "../../src/appserver/AppServerConnection.js"
import * as Compaction from "../../src/compaction/Compaction.js"
import { CompactionFence } from "../../src/compaction/CompactionFence.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { AppServerExited, AppServerUnreachable } from "../../src/appserver/errors.js"
import { NodeTransportLive, Transport } from "../../src/appserver/Transport.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { TranscriptMirror } from "../../src/session/TranscriptMirror.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind } from "../support/harness.js"
import * as Remote from "../support/remoteAppServer.js"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"

/** The live harness in a child scope the test closes itself (so leftBehind can look after it). */
const openHarness = (settings: HarnessSettings) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer)), scope)
    return {
      delivered: Context.get(context, RecordingDelivery.RecordingDelivery).replies,
      harness: Context.get(context, CodexHarness),
      compaction: Context.get(context, Compaction.Compaction),
      fence: Context.get(context, CompactionFence),
      mirror: Context.get(context, TranscriptMirror),
      pool: Context.get(context, ClientPool),
      scope
    }
  })

/** A fixture whose sessions use a remote app-server under the state dir (so leftBehind sees it), on a free port. */
const remoteFixture = (replies: Parameters<typeof fixture>[0]) =>
  Effect.gen(function* () {
    const f = yield* fixture(replies)
    const port = yield* Remote.freePort
    const codexHome = path.join(f.stateDir, "remote-codex-home")
    const options = { codexHome, modelUrl: f.model.url, port }
    const url = `ws://127.0.0.1:${port}`
    // the harness starts nothing: no provider URL, no CODEX_HOME of its own for these sessions
    const settings: HarnessSettings = { ...f.settings, providerUrl: undefined, appServerUrl: url }
    return { f, options, url, codexHome, settings }
  })

const hang = reply.steps({ type: "hang" })

describe("[S37] app-server over WebSocket (real `codex app-server --listen ws://`)", () => {
  it.scopedLive("a turn runs over the socket; the session records transport websocket, the URL and the remote CODEX_HOME", () =>
    Effect.gen(function* () {
      const { codexHome, f, options, settings, url } = yield* remoteFixture({ replies: [reply.text("over the socket")] })
      const remote = yield* Remote.start(options)
      const { harness, mirror, scope } = yield* openHarness(settings)
      const outcome = yield* harness.runTurn({ sessionId: "ws-1", prompt: "hello over ws" })
      expect(outcome.finalText).toBe("over the socket")
      const { state } = yield* mirror.read("ws-1")
      expect(state.binding?.threadId).toBe(outcome.threadId)
      expect(state.binding?.runtime).toEqual({
        transport: "websocket",
        url,
        codexHome,
        poolKey: `websocket|${url}`,
        locked: false
      })
      // the harness spawned nothing: the only app-server is the test's, and it is still running
      expect(remote.stderr()).toContain(`listening on: ${url}`)
      yield* Scope.close(scope, Exit.void)
      yield* remote.kill
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive(
    "killing the remote app-server mid-turn fails the turn with a retryable AppServerExited naming the URL and detaches the binding; after a restart the next turn starts a fresh thread",
    () =>
      Effect.gen(function* () {
        const { f, options, settings, url } = yield* remoteFixture({
          replies: [reply.text("first"), hang, reply.text("after the restart")]
        })
        const remote = yield* Remote.start(options)
        const { harness, mirror, scope } = yield* openHarness(settings)
        yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
        const first = yield* harness.runTurn({ sessionId: "ws-2", prompt: "first" })
        expect(first.finalText).toBe("first")

        const turn = yield* harness.runTurn({ sessionId: "ws-2", prompt: "hang please" }).pipe(Effect.flip, Effect.fork)
        yield* f.model.waitForRequests(2)
        yield* remote.kill
        const error = yield* Fiber.join(turn)
        expect(error).toBeInstanceOf(AppServerExited)
        expect((error as AppServerExited).url).toBe(url)
        expect((error as AppServerExited).retryable).toBe(true)
        expect(error.message).toContain(`the connection to the codex app-server at ${url} closed`)

        const { contents, state } = yield* mirror.read("ws-2")
        expect(state.binding).toBeUndefined()
        expect(state.detached?.threadId).toBe(first.threadId)
        expect(state.detached?.reason).toContain("its remote app-server connection ended")
        // the session stays on its remote runtime
        expect(state.runtime?.transport).toBe("websocket")
        expect(contents.records.filter((r) => r._tag === "turn").map((r) => (r as { status: string }).status)).toEqual([
          "completed",
          "failed"
        ])

        // restarted on the same port (its CODEX_HOME still has the old thread): the next turn does not resume it
        const again = yield* Remote.start(options)
        const next = yield* harness.runTurn({ sessionId: "ws-2", prompt: "after the restart" })
        expect(next.finalText).toBe("after the restart")
        expect(next.threadId).not.toBe(first.threadId)
        const after = (yield* mirror.read("ws-2")).state
        expect(after.binding?.threadId).toBe(next.threadId)
        expect(after.binding?.runtime?.url).toBe(url)
        // the model saw a fresh conversation: no earlier prompt in the last request
        const last = (yield* f.model.requests).at(-1)!
        expect(last.body).toContain("after the restart")
        expect(last.body).not.toContain("hang please")

        yield* Scope.close(scope, Exit.void)
        yield* again.kill
        expect(yield* leftBehind(f.stateDir)).toEqual([])
      })
  )

  it.scopedLive("a session made on a local app-server is not moved to --app-server (RuntimeMismatch, nothing sent); one made on the remote one follows its record when the flag is left out", () =>
    Effect.gen(function* () {
      const { f, options, settings, url } = yield* remoteFixture({ replies: [reply.text("local"), reply.text("remote"), reply.text("followed")] })
      const remote = yield* Remote.start(options)
      const local = yield* openHarness(f.settings)
      yield* local.harness.runTurn({ sessionId: "ws-local", prompt: "on stdio" })
      yield* Scope.close(local.scope, Exit.void)

      const { harness, scope } = yield* openHarness(settings)
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      const refused = yield* harness.runTurn({ sessionId: "ws-local", prompt: "move me" }).pipe(Effect.flip)
      expect(refused._tag).toBe("RuntimeMismatch")
      expect(refused.message).toContain(`was made on app-server stdio (CODEX_HOME`)
      expect(refused.message).toContain(`not ${url}`)
      expect((yield* f.model.requests).length).toBe(1)

      yield* harness.runTurn({ sessionId: "ws-remote", prompt: "on the socket" })
      yield* Scope.close(scope, Exit.void)
      // without --app-server (these settings would start a local app-server): the record wins, with a notice
      const plain = yield* openHarness(f.settings)
      const followed = yield* plain.harness.runTurn({ sessionId: "ws-remote", prompt: "follow" })
      expect(followed.finalText).toBe("followed")
      expect((yield* plain.mirror.read("ws-remote")).state.binding?.runtime?.transport).toBe("websocket")
      const delivered = yield* plain.delivered
      expect(delivered.some((r) => r.source === "notice" && r.text?.includes(`the app-server at ${url}`))).toBe(true)
      yield* Scope.close(plain.scope, Exit.void)
      yield* remote.kill
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("--ws-auth capability-token: the token goes from $VAR into the Authorization header; without it the connection is refused as AppServerUnreachable", () =>
    Effect.gen(function* () {
      const { f, options, url } = yield* remoteFixture({})
      const tokenFile = path.join(f.stateDir, "ws-token")
      const token = `tok-${Math.random().toString(36).slice(2)}`
      fs.writeFileSync(tokenFile, token, { mode: 0o600 })
      const remote = yield* Remote.start({ ...options, listenArgs: ["--ws-auth", "capability-token", "--ws-token-file", tokenFile] })
      const variable = "CODEX_HARNESS_TEST_WS_TOKEN"
      const transport = yield* Effect.provide(Transport, NodeTransportLive.pipe(Layer.provide(NodeFileSystem.layer)))

      delete process.env[variable]
      const refused = yield* transport.spawn({ url, tokenEnv: variable }).pipe(Effect.scoped, Effect.flip)
      expect(refused).toBeInstanceOf(AppServerUnreachable)
      expect(refused.message).toBe(`could not connect to the codex app-server at ${url}: the app-server wants a token (HTTP 401): put it in $${variable}`)

      process.env[variable] = "wrong"
      const wrong = yield* transport.spawn({ url, tokenEnv: variable }).pipe(Effect.scoped, Effect.flip)
      expect(wrong.message).toContain(`refused the token in $${variable} (HTTP 401)`)
      expect(wrong.message).not.toContain("wrong")

      process.env[variable] = token
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[variable]))
      const init = yield* Effect.scoped(
        Effect.gen(function* () {
          const handle = yield* transport.spawn({ url, tokenEnv: variable })
          expect(handle.pid).toBeUndefined()
          const connection = yield* Connection.make(handle)
          const listed = yield* connection.request("thread/list", {})
          expect(listed.data).toEqual([])
          return connection.initialize
        })
      )
      expect(init.codexHome).toBe(options.codexHome)
      yield* remote.kill
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )

  it.scopedLive("a compaction whose remote app-server dies fails typed, releases the fence and detaches the binding", () =>
    Effect.gen(function* () {
      const { f, options, settings } = yield* remoteFixture({
        rules: [{ whenRequestIncludes: "CONTEXT CHECKPOINT COMPACTION", reply: hang, once: true }],
        replies: [reply.text("first")]
      })
      const remote = yield* Remote.start(options)
      const { compaction, fence, harness, mirror, scope } = yield* openHarness(settings)
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      const first = yield* harness.runTurn({ sessionId: "ws-c", prompt: "first" })
      const compacting = yield* compaction.compact("ws-c").pipe(Effect.flip, Effect.fork)
      yield* f.model.waitForRequests(2)
      yield* remote.kill
      const error = yield* Fiber.join(compacting)
      expect(error).toBeInstanceOf(Compaction.CompactionClientClosed)
      // the harness cannot stop a remote app-server: the session's binding is detached so no later turn overlaps it
      expect((error as Compaction.CompactionClientClosed).detached).toBe(true)
      expect(yield* fence.isHeld(first.threadId)).toBe(false)
      const { state } = yield* mirror.read("ws-c")
      expect(state.binding).toBeUndefined()
      expect(state.detached?.threadId).toBe(first.threadId)
      yield* Scope.close(scope, Exit.void)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    })
  )
})
