// The shared-client pool against the in-memory app-server: sharing, retirement, dead and failed clients, the idle
// time-to-live (TestClock) and release on interruption.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, TestClock } from "effect"
import * as ClientPool from "../../src/appserver/ClientPool.js"
import { ConnectionRetired, RequestTimedOut, RpcError, SpawnFailed } from "../../src/appserver/errors.js"
import { type Handler, layer as mockLayer, MockAppServer, type MockScript } from "../../src/testing/MockAppServer.js"

const hang: Handler = () => Effect.never
const echo: Handler = (params) => Effect.succeed({ echo: params })

const withMock = (script: MockScript = {}) =>
  Effect.provide(mockLayer({ ...script, handlers: { "mock/hang": hang, "mock/echo": echo, ...script.handlers } }))

const ttl = "30 seconds"
const makePool = ClientPool.make({ idleTimeToLive: ttl })

describe("ClientPool", () => {
  it.scoped("[appserver] two leases of one key share one spawned client", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const [a, b] = yield* Effect.all([pool.lease("k", {}), pool.lease("k", {})], { concurrency: "unbounded" })
      expect(a).toBe(b)
      expect(yield* mock.spawnCount).toBe(1)
      const c = yield* pool.lease("k", {})
      expect(c).toBe(a)
      expect(yield* mock.spawnCount).toBe(1)
      expect(yield* pool.keys).toEqual(["k"])
      // one handshake only
      expect(yield* mock.requests("initialize")).toHaveLength(1)
    }).pipe(withMock()))

  it.scoped("[appserver] different keys get different clients", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const a = yield* pool.lease("a", { codexHome: "/homes/a" })
      const b = yield* pool.lease("b", { codexHome: "/homes/b" })
      expect(a).not.toBe(b)
      expect(yield* mock.spawnCount).toBe(2)
      expect(a.initialize.codexHome).toBe("/homes/a")
      expect(b.initialize.codexHome).toBe("/homes/b")
    }).pipe(withMock()))

  it.scoped("[S37] retire fails the leaseholder's in-flight request with ConnectionRetired; the next lease spawns a fresh peer; other keys are untouched", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const other = yield* pool.lease("b", {})
      const otherPeer = yield* mock.latest

      const inflight = yield* Effect.fork(
        Effect.scoped(Effect.flatMap(pool.lease("a", {}), (c) => c.requestRaw("mock/hang", {})))
      )
      const hung = yield* mock.awaitRequest("mock/hang")
      const retiredPeer = yield* mock.awaitPeer(hung.peer)
      expect(retiredPeer).not.toBe(otherPeer)

      yield* pool.retire("a", "interrupt was not confirmed")
      const error = yield* Fiber.join(inflight).pipe(Effect.flip)
      expect(error).toBeInstanceOf(ConnectionRetired)
      expect((error as ConnectionRetired).retryable).toBe(true)
      expect(error).toMatchObject({ reason: "interrupt was not confirmed" })
      expect(yield* retiredPeer.inputEnded).toBe(true)
      expect(yield* retiredPeer.released).toBe(true)

      const fresh = yield* pool.lease("a", {})
      expect(yield* mock.spawnCount).toBe(3)
      expect(Option.isNone(yield* fresh.terminationCause)).toBe(true)
      expect(yield* fresh.requestRaw("mock/echo", { n: 1 })).toEqual({ echo: { n: 1 } })
      const answered = yield* mock.awaitRequest("mock/echo")
      expect(answered.peer).toBe(3)

      // the other key's client saw nothing of it
      expect(Option.isNone(yield* other.terminationCause)).toBe(true)
      expect(yield* otherPeer.inputEnded).toBe(false)
      expect(yield* otherPeer.released).toBe(false)
      expect(yield* other.requestRaw("mock/echo", { n: 2 })).toEqual({ echo: { n: 2 } })
      expect((yield* mock.awaitRequest("mock/echo", 2)).peer).toBe(otherPeer.index)
    }).pipe(withMock()))

  it.scoped("[S37] retire of a key with no client is a no-op and spawns nothing", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      yield* pool.retire("nobody", "test")
      expect(yield* mock.spawnCount).toBe(0)
      expect(yield* pool.keys).toEqual([])
    }).pipe(withMock()))

  it.scoped("[appserver] a client whose peer died is not handed out again", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const first = yield* pool.lease("k", {})
      const firstPeer = yield* mock.latest
      yield* firstPeer.crash("SIGKILL")
      expect(yield* first.terminated).toMatchObject({ _tag: "AppServerExited", signal: "SIGKILL" })

      const second = yield* pool.lease("k", {})
      expect(second).not.toBe(first)
      expect(yield* mock.spawnCount).toBe(2)
      expect(Option.isNone(yield* second.terminationCause)).toBe(true)
      expect(yield* second.requestRaw("mock/echo", {})).toEqual({ echo: {} })
    }).pipe(withMock()))

  it.scoped("[appserver] an idle client whose peer died is replaced on the next lease", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const first = yield* Effect.scoped(pool.lease("k", {}))
      yield* (yield* mock.latest).exit(1)
      yield* first.terminated
      const second = yield* pool.lease("k", {})
      expect(second).not.toBe(first)
      expect(yield* mock.spawnCount).toBe(2)
      expect(yield* second.requestRaw("mock/echo", {})).toEqual({ echo: {} })
    }).pipe(withMock()))

  it.scoped("[appserver] a failed spawn is not cached: the next lease spawns again", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      yield* mock.failNextSpawn("no such file")
      const error = yield* Effect.scoped(pool.lease("k", {})).pipe(Effect.flip)
      expect(error).toBeInstanceOf(SpawnFailed)
      expect(error).toMatchObject({ reason: "no such file" })
      const client = yield* pool.lease("k", {})
      expect(yield* mock.spawnCount).toBe(2)
      expect(yield* client.requestRaw("mock/echo", {})).toEqual({ echo: {} })
    }).pipe(withMock()))

  it.scoped("[appserver] a failed handshake is not cached and its peer is released", () => {
    let attempts = 0
    const flakyInitialize: Handler = (_params, ctx) =>
      ++attempts === 1 ? Effect.fail({ code: -32603, message: "failed to load config" }) : ctx.fallback
    return Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const error = yield* Effect.scoped(pool.lease("k", {})).pipe(Effect.flip)
      expect(error).toBeInstanceOf(RpcError)
      expect(yield* (yield* mock.awaitPeer(1)).released).toBe(true)
      const client = yield* pool.lease("k", {})
      expect(yield* mock.spawnCount).toBe(2)
      expect(yield* client.requestRaw("mock/echo", {})).toEqual({ echo: {} })
    }).pipe(withMock({ handlers: { initialize: flakyInitialize } }))
  })

  it.scoped("[appserver] a handshake that never answers times out (TestClock), is not cached, and its peer is released", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const lease = yield* Effect.fork(Effect.scoped(pool.lease("k", { requestTimeout: "10 seconds" })))
      yield* mock.awaitRequest("initialize")
      yield* TestClock.adjust("10 seconds")
      const error = yield* Fiber.join(lease).pipe(Effect.flip)
      expect(error).toBeInstanceOf(RequestTimedOut)
      expect(yield* (yield* mock.awaitPeer(1)).released).toBe(true)
      yield* mock.setHandler("initialize", undefined)
      const client = yield* pool.lease("k", {})
      expect(yield* mock.spawnCount).toBe(2)
      expect(yield* client.requestRaw("mock/echo", {})).toEqual({ echo: {} })
    }).pipe(withMock({ handlers: { initialize: hang } })))

  it.scoped("[appserver] a lease interrupted during the handshake leaves no peer behind once the idle time-to-live passes", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const lease = yield* Effect.fork(Effect.scoped(pool.lease("k", {})))
      yield* mock.awaitRequest("initialize")
      yield* Fiber.interrupt(lease)
      const peer = yield* mock.awaitPeer(1)
      yield* TestClock.adjust(ttl)
      expect(yield* peer.released).toBe(true)
    }).pipe(withMock({ handlers: { initialize: hang } })))

  it.scoped("[appserver] an idle client is closed after the idle time-to-live and not before; a lease in between keeps it", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const first = yield* Effect.scoped(pool.lease("k", {}))
      const peer = yield* mock.latest
      yield* TestClock.adjust("29 seconds")
      expect(yield* peer.released).toBe(false)

      // leasing again within the TTL reuses the client and restarts the idle clock on release
      const again = yield* Effect.scoped(pool.lease("k", {}))
      expect(again).toBe(first)
      expect(yield* mock.spawnCount).toBe(1)
      yield* TestClock.adjust("29 seconds")
      expect(yield* peer.released).toBe(false)
      yield* TestClock.adjust("1 second")
      expect(yield* peer.released).toBe(true)
      expect(yield* peer.inputEnded).toBe(true)
      expect(yield* pool.keys).toEqual([])

      yield* Effect.scoped(pool.lease("k", {}))
      expect(yield* mock.spawnCount).toBe(2)
    }).pipe(withMock()))

  it.scoped("[appserver] a lease is released when its holder is interrupted mid-request", () =>
    Effect.gen(function* () {
      const pool = yield* makePool
      const mock = yield* MockAppServer
      const holder = yield* Effect.fork(
        Effect.scoped(Effect.flatMap(pool.lease("k", {}), (c) => c.requestRaw("mock/hang", {})))
      )
      yield* mock.awaitRequest("mock/hang")
      const peer = yield* mock.latest
      yield* Fiber.interrupt(holder)
      // the interrupted request left nothing pending on the shared client
      const stats = yield* Effect.scoped(Effect.flatMap(pool.lease("k", {}), (c) => c.stats))
      expect(stats.pendingRequests).toBe(0)
      expect(yield* mock.spawnCount).toBe(1)
      // nobody holds it any more: the idle time-to-live closes it
      yield* TestClock.adjust(ttl)
      expect(yield* peer.released).toBe(true)
    }).pipe(withMock()))
})
