// Process lifetime on the real app-server: nothing outlives its scope, a killed app-server fails the turn with a typed
// error and the pool replaces it, a retired client fails its turn as retryable, and an approval nobody can answer is
// an explicit decline.
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Fiber, Layer, Schedule, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import { AppServerExited, ConnectionRetired } from "../../src/appserver/errors.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { fixture, groupAlive, isAlive, leaseSessionClient, ordinaryRuntime } from "../support/harness.js"

const hangingTurn = reply.steps({ type: "hang" })

/** Builds the live layer in a child scope the test closes itself; returns the harness, the pool and that scope. */
const openHarness = (settings: Parameters<typeof Live.layer>[0]) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(Live.layer(settings).pipe(Layer.provide(RecordingDelivery.layer)), scope)
    return { harness: Context.get(context, CodexHarness), pool: Context.get(context, ClientPool), scope }
  })

/** The pid of the pooled app-server, waiting until the harness has spawned it. */
const pooledPid = (pool: Context.Tag.Service<typeof ClientPool>, settings: HarnessSettings) =>
  Effect.scoped(Effect.map(leaseSessionClient(pool, settings), (c) => c.pid))

/** Polls a real process until it is gone (bounded: 60 s); true when it went. */
const awaitGone = (pid: number | undefined) =>
  Effect.sync(() => !isAlive(pid)).pipe(
    Effect.repeat({ until: (gone) => gone, schedule: Schedule.spaced("20 millis") }),
    Effect.timeoutTo({ duration: "60 seconds", onTimeout: () => false, onSuccess: () => true })
  )

describe("app-server process lifetime", () => {
  it.scopedLive("closing the scope leaves no codex process (the process group is gone too)", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("done")] })
      const { harness, pool, scope } = yield* openHarness(f.settings)
      yield* harness.runTurn({ sessionId: "s", prompt: "hi" })
      const pid = yield* pooledPid(pool, f.settings)
      expect(isAlive(pid)).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(pid)).toBe(false)
      expect(groupAlive(pid)).toBe(false)
    })
  )

  it.scopedLive("windDown after a turn: the app-server exits by itself (exit 0, nothing failed) while the pool is open; the next lease is a fresh process", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("done"), reply.text("again")] })
      const { harness, pool, scope } = yield* openHarness(f.settings)
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      yield* harness.runTurn({ sessionId: "s", prompt: "hi" })
      const connection = yield* Effect.scoped(leaseSessionClient(pool, f.settings))
      expect(isAlive(connection.pid)).toBe(true)
      yield* pool.windDown
      // the receipt: the connection ends because its process exited (not retired, not killed), with the scope still open
      const ended = yield* connection.terminated.pipe(Effect.timeout("60 seconds"))
      expect(ended).toBeInstanceOf(AppServerExited)
      expect(ended).toMatchObject({ exitCode: 0, signal: null })
      expect(yield* awaitGone(connection.pid)).toBe(true)
      // the session goes on, on a fresh process
      const next = yield* harness.runTurn({ sessionId: "s", prompt: "again" })
      expect(next.finalText).toBe("again")
      expect(yield* pooledPid(pool, f.settings)).not.toBe(connection.pid)
    })
  )

  it.scopedLive("interrupting a turn mid-stream closes everything and leaves no codex process", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [hangingTurn] })
      const { harness, pool, scope } = yield* openHarness(f.settings)
      const turn = yield* harness.runTurn({ sessionId: "s", prompt: "hang please" }).pipe(Effect.fork)
      yield* f.model.waitForRequests(1)
      const pid = yield* pooledPid(pool, f.settings)
      yield* Fiber.interrupt(turn)
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(pid)).toBe(false)
      expect(groupAlive(pid)).toBe(false)
    })
  )

  it.scopedLive("SIGKILL mid-turn fails the turn with AppServerExited, not a hang; the next lease is a fresh process", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [hangingTurn, reply.text("after the crash")] })
      const { harness, pool, scope } = yield* openHarness(f.settings)
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      const turn = yield* harness.runTurn({ sessionId: "s", prompt: "hang please" }).pipe(Effect.flip, Effect.fork)
      yield* f.model.waitForRequests(1)
      const pid = yield* pooledPid(pool, f.settings)
      process.kill(pid!, "SIGKILL")
      // the turn hangs for good otherwise (its model request never answers): the bound only ends such a run, and is
      // generous for a loaded machine (it was 1 s, which two busy loops can take from the exit's notice alone)
      const error = yield* Fiber.join(turn).pipe(Effect.timeout(Duration.seconds(30)))
      expect(error).toBeInstanceOf(AppServerExited)
      expect((error as AppServerExited).signal).toBe("SIGKILL")
      const outcome = yield* harness.runTurn({ sessionId: "s", prompt: "again" })
      expect(outcome.finalText).toBe("after the crash")
      const fresh = yield* pooledPid(pool, f.settings)
      expect(fresh).not.toBe(pid)
      expect(isAlive(pid)).toBe(false)
    })
  )

  it.scopedLive("[S37] retiring the client fails its in-flight turn with a retryable ConnectionRetired; a retry gets a fresh process", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [hangingTurn, reply.text("retried")] })
      const { harness, pool, scope } = yield* openHarness(f.settings)
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      const turn = yield* harness.runTurn({ sessionId: "s", prompt: "hang please" }).pipe(Effect.flip, Effect.fork)
      yield* f.model.waitForRequests(1)
      const pid = yield* pooledPid(pool, f.settings)
      yield* pool.retire(ordinaryRuntime(f.settings).poolKey, "test retirement")
      const error = yield* Fiber.join(turn)
      expect(error).toBeInstanceOf(ConnectionRetired)
      expect((error as ConnectionRetired).retryable).toBe(true)
      const outcome = yield* harness.runTurn({ sessionId: "s", prompt: "retry" })
      expect(outcome.finalText).toBe("retried")
      expect(yield* pooledPid(pool, f.settings)).not.toBe(pid)
      // the retired process exits on its own once stdin is closed
      expect(yield* awaitGone(pid)).toBe(true)
    })
  )

  it.scopedLive("without an approval port every app-server approval is an explicit decline, so Codex never waits and the command never runs", () =>
    Effect.gen(function* () {
      const f = yield* fixture(
        {
          replies: [
            reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch should_not_exist.txt" } }),
            reply.text("the command was not approved")
          ]
        },
        { approvalPolicy: "untrusted", sandbox: "workspace-write" }
      )
      const { harness, scope } = yield* openHarness(f.settings)
      yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
      const outcome = yield* harness.runTurn({ sessionId: "s", prompt: "touch a file" })
      expect(outcome.status).toBe("completed")
      expect(outcome.finalText).toBe("the command was not approved")
      const requests = yield* f.model.requests
      expect(requests.length).toBe(2)
      // Codex tells the model the command was rejected; it never ran
      expect(requests[1]!.body).toContain("rejected by user")
      expect(fs.existsSync(path.join(f.workDir, "should_not_exist.txt"))).toBe(false)
      const command = outcome.items.find((i) => i.type === "commandExecution") as { status?: string } | undefined
      expect(command?.status).not.toBe("completed")
    })
  )
})
