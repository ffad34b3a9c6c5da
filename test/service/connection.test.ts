// The JSON-RPC connection against the in-memory app-server: handshake, correlation, timeouts, server-request routes,
// bad input, notifications and termination. Time is the TestClock's.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, FiberId, Logger, Option, Queue, Scope, Stream, TestClock } from "effect"
import * as Connection from "../../src/appserver/AppServerConnection.js"
import { AppServerExited, ConnectionRetired, ProtocolDecodeError, RequestTimedOut, RpcError } from "../../src/appserver/errors.js"
import { Transport, type TransportOptions } from "../../src/appserver/Transport.js"
import { type Handler, layer as mockLayer, MockAppServer, type MockScript } from "../../src/testing/MockAppServer.js"

const connect = (options: TransportOptions & Connection.ConnectionOptions = {}) =>
  Effect.gen(function* () {
    const transport = yield* Transport
    const handle = yield* transport.spawn(options)
    return yield* Connection.make(handle, options)
  })

/** a Deferred the test completes by hand (created outside any fiber, so handlers and the test share it) */
const gate = <A = void>() => Deferred.unsafeMake<A>(FiberId.none)

/** a handler that never answers */
const hang: Handler = () => Effect.never
/** answers with its params */
const echo: Handler = (params) => Effect.succeed({ echo: params })

/** well-formed server-request params (the connection decodes them before any handler sees them) */
const toolCall = (threadId: string, tool = "lookup") => ({ threadId, turnId: "u1", callId: "c1", tool, arguments: {} })
const commandApproval = (threadId: string) => ({ threadId, turnId: "u1", itemId: "i1", command: "ls", cwd: "/w" })
const done = { contentItems: [], success: true } as const

const withMock = (script: MockScript = {}) =>
  Effect.provide(mockLayer({ ...script, handlers: { "mock/hang": hang, "mock/echo": echo, ...script.handlers } }))

describe("AppServerConnection", () => {
  it.scoped("[appserver] the handshake sends initialize with experimentalApi, then the initialized notification", () =>
    Effect.gen(function* () {
      const connection = yield* connect({ clientName: "test-client", clientVersion: "9.9.9", codexHome: "/tmp/ch-home" })
      const mock = yield* MockAppServer
      const messages = yield* mock.messages
      expect(messages.map((m) => `${m._tag} ${"method" in m ? m.method : ""}`)).toEqual([
        "Request initialize",
        "Notification initialized"
      ])
      const init = messages[0]!
      expect(init._tag === "Request" && init.id).toBe(0)
      expect(init._tag === "Request" && init.params).toMatchObject({
        clientInfo: { name: "test-client", version: "9.9.9" },
        capabilities: { experimentalApi: true, extensions: { "openai/form": {} } }
      })
      expect(connection.initialize).toEqual({
        userAgent: expect.stringContaining("test-client/"),
        codexHome: "/tmp/ch-home",
        platformFamily: "unix",
        platformOs: "linux"
      })
    }).pipe(withMock()))

  it.scoped("[appserver] a failed initialize fails the connection with the RpcError", () =>
    Effect.gen(function* () {
      const error = yield* connect().pipe(Effect.flip)
      expect(error).toBeInstanceOf(RpcError)
      expect(error).toMatchObject({ method: "initialize", code: -32603, rpcMessage: "config is broken" })
      const mock = yield* MockAppServer
      expect((yield* mock.messages).some((m) => m._tag === "Notification")).toBe(false)
    }).pipe(withMock({ handlers: { initialize: () => Effect.fail({ code: -32603, message: "config is broken" }) } })))

  it.scoped("[appserver] concurrent requests answered out of order each get their own result", () => {
    const gates = { a: gate(), b: gate(), c: gate() }
    const gated: Handler = (params: { name: "a" | "b" | "c" }) =>
      Deferred.await(gates[params.name]).pipe(Effect.as({ name: params.name }))
    return Effect.gen(function* () {
      const connection = yield* connect()
      const mock = yield* MockAppServer
      const fa = yield* Effect.fork(connection.requestRaw("mock/gated", { name: "a" }))
      const fb = yield* Effect.fork(connection.requestRaw("mock/gated", { name: "b" }))
      const fc = yield* Effect.fork(connection.requestRaw("mock/gated", { name: "c" }))
      yield* mock.awaitRequest("mock/gated", 3)
      expect((yield* connection.stats).pendingRequests).toBe(3)

      yield* Deferred.succeed(gates.c, undefined)
      expect(yield* Fiber.join(fc)).toEqual({ name: "c" })
      expect(Option.isNone(yield* Fiber.poll(fa))).toBe(true)
      yield* Deferred.succeed(gates.b, undefined)
      expect(yield* Fiber.join(fb)).toEqual({ name: "b" })
      yield* Deferred.succeed(gates.a, undefined)
      expect(yield* Fiber.join(fa)).toEqual({ name: "a" })
      expect((yield* connection.stats).pendingRequests).toBe(0)
      // distinct integer ids on the wire
      const ids = (yield* mock.requests("mock/gated")).map((r) => r.id)
      expect(new Set(ids).size).toBe(3)
      expect(ids.every((id) => typeof id === "number")).toBe(true)
    }).pipe(withMock({ handlers: { "mock/gated": gated } }))
  })

  it.scoped("[appserver] a response with the string form of a pending integer id does not settle it", () => {
    const answer = gate()
    return Effect.gen(function* () {
      const connection = yield* connect()
      const mock = yield* MockAppServer
      const peer = yield* mock.latest
      const fiber = yield* Effect.fork(connection.requestRaw("mock/gated", {}))
      const sent = yield* mock.awaitRequest("mock/gated")
      expect(typeof sent.id).toBe("number")
      yield* peer.sendRaw(JSON.stringify({ id: String(sent.id), result: { wrong: true } }))
      // a later request's answer proves the stray line was read
      yield* connection.requestRaw("mock/echo", {})
      expect(yield* connection.stats).toMatchObject({ unmatchedResponses: 1, pendingRequests: 1 })
      yield* Deferred.succeed(answer, undefined)
      expect(yield* Fiber.join(fiber)).toEqual({ right: true })
    }).pipe(withMock({ handlers: { "mock/gated": () => Deferred.await(answer).pipe(Effect.as({ right: true })) } }))
  })

  it.scoped("[appserver] server requests with string and integer ids get replies echoing the exact id", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const mock = yield* MockAppServer
      const peer = yield* mock.latest
      yield* connection.handle("item/tool/call", {
        handle: (_params, request) => Effect.succeed({ sawId: request.id, idType: typeof request.id } as never)
      })
      const [asString, asNumber] = yield* Effect.all(
        [
          peer.request("item/tool/call", toolCall("t"), { id: "200" }),
          peer.request("item/tool/call", toolCall("t"), { id: 200 })
        ],
        { concurrency: "unbounded" }
      )
      expect(asString).toEqual({ _tag: "Result", id: "200", result: { sawId: "200", idType: "string" } })
      expect(asNumber).toEqual({ _tag: "Result", id: 200, result: { sawId: 200, idType: "number" } })
      const responses = (yield* mock.messages).filter((m) => m._tag === "Response")
      expect(responses.map((r) => (r._tag === "Response" ? typeof r.id : ""))).toEqual(
        expect.arrayContaining(["string", "number"])
      )
      expect(responses).toHaveLength(2)
    }).pipe(withMock()))

  it.scoped("[appserver] a request times out after 60 s of TestClock time and its pending entry is removed", () => {
    const answer = gate()
    return Effect.gen(function* () {
      const connection = yield* connect()
      const mock = yield* MockAppServer
      const fiber = yield* Effect.fork(connection.requestRaw("mock/gated", {}))
      yield* mock.awaitRequest("mock/gated")
      expect((yield* connection.stats).pendingRequests).toBe(1)
      yield* TestClock.adjust("59 seconds")
      expect(Option.isNone(yield* Fiber.poll(fiber))).toBe(true)
      yield* TestClock.adjust("1 second")
      const error = yield* Fiber.join(fiber).pipe(Effect.flip)
      expect(error).toBeInstanceOf(RequestTimedOut)
      expect(error).toMatchObject({ method: "mock/gated", timeoutMs: 60_000 })
      expect((yield* connection.stats).pendingRequests).toBe(0)
      // the late answer is counted as unmatched, not delivered anywhere
      yield* Deferred.succeed(answer, undefined)
      yield* connection.requestRaw("mock/echo", {})
      expect((yield* connection.stats).unmatchedResponses).toBe(1)
    }).pipe(withMock({ handlers: { "mock/gated": () => Deferred.await(answer).pipe(Effect.as({})) } }))
  })

  it.scoped("[appserver] a per-request timeout overrides the connection default", () =>
    Effect.gen(function* () {
      const connection = yield* connect({ requestTimeout: "10 seconds" })
      const mock = yield* MockAppServer
      const short = yield* Effect.fork(connection.requestRaw("mock/hang", {}, { timeout: "2 seconds" }))
      const long = yield* Effect.fork(connection.requestRaw("mock/hang", {}))
      yield* mock.awaitRequest("mock/hang", 2)
      yield* TestClock.adjust("2 seconds")
      expect(yield* Fiber.join(short).pipe(Effect.flip)).toMatchObject({ _tag: "RequestTimedOut", timeoutMs: 2_000 })
      expect(Option.isNone(yield* Fiber.poll(long))).toBe(true)
      yield* TestClock.adjust("8 seconds")
      expect(yield* Fiber.join(long).pipe(Effect.flip)).toMatchObject({ _tag: "RequestTimedOut", timeoutMs: 10_000 })
      expect((yield* connection.stats).pendingRequests).toBe(0)
    }).pipe(withMock()))

  it.scoped("[appserver] a JSON-RPC error answer becomes RpcError with code, message and data", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const error = yield* connection.requestRaw("turn/steer", { threadId: "t" }).pipe(Effect.flip)
      expect(error).toBeInstanceOf(RpcError)
      expect(error).toMatchObject({
        method: "turn/steer",
        code: -32600,
        rpcMessage: "cannot steer a compact turn",
        data: { codexErrorInfo: { activeTurnNotSteerable: { turnKind: "compact" } } }
      })
      const unknown = yield* connection.requestRaw("no/such/method", {}).pipe(Effect.flip)
      expect(unknown).toMatchObject({ _tag: "RpcError", code: -32600 })
      expect((unknown as RpcError).rpcMessage).toMatch(/^Invalid request: unknown variant `no\/such\/method`/)
      expect((yield* connection.stats).pendingRequests).toBe(0)
    }).pipe(
      withMock({
        handlers: {
          "turn/steer": () =>
            Effect.fail({
              code: -32600,
              message: "cannot steer a compact turn",
              data: { codexErrorInfo: { activeTurnNotSteerable: { turnKind: "compact" } } }
            })
        }
      })
    ))

  it.scoped("[appserver] a typed request whose result has the wrong shape fails with ProtocolDecodeError", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const error = yield* connection
        .request("turn/start", { threadId: "t", input: [{ type: "text", text: "hi" }] })
        .pipe(Effect.flip)
      expect(error).toBeInstanceOf(ProtocolDecodeError)
      expect(error).toMatchObject({ method: "turn/start" })
    }).pipe(withMock({ handlers: { "turn/start": () => Effect.succeed({ turn: { id: 7 } }) } })))

  it.scoped("[appserver] a server request with no handler gets an error reply; a scoped handler answers only while its Scope is open", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      const ask = peer.request("item/tool/call", toolCall("t1"))

      const unhandled = yield* ask
      expect(unhandled._tag).toBe("Error")
      expect(unhandled._tag === "Error" && unhandled.error).toMatchObject({
        code: -32601,
        message: expect.stringContaining("item/tool/call")
      })

      const scope = yield* Scope.make()
      yield* connection.handle("item/tool/call", { handle: () => Effect.succeed(done) }).pipe(Scope.extend(scope))
      expect(yield* ask).toMatchObject({ _tag: "Result", result: { contentItems: [], success: true } })

      yield* Scope.close(scope, Exit.void)
      expect(yield* ask).toMatchObject({ _tag: "Error", error: { code: -32601 } })
    }).pipe(withMock()))

  it.scoped("[appserver] a handler still working when its Scope closes is answered with an error, never left silent", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      const scope = yield* Scope.make()
      const started = gate()
      yield* connection
        .handle("item/tool/call", { handle: () => Deferred.succeed(started, undefined).pipe(Effect.zipRight(Effect.never)) })
        .pipe(Scope.extend(scope))
      const answer = yield* peer.request("item/tool/call", toolCall("t1", "slow")).pipe(Effect.fork)
      yield* Deferred.await(started)
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.join(answer)).toMatchObject({
        _tag: "Error",
        error: { code: -32603, message: expect.stringContaining("removed before it answered") }
      })
    }).pipe(withMock()))

  it.scoped("[appserver] an error member that is not an object still fails the request as RpcError", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      const pending = yield* connection.requestRaw("mock/hang", {}).pipe(Effect.flip, Effect.fork)
      const request = yield* peer.awaitRequest("mock/hang")
      yield* peer.sendRaw(JSON.stringify({ id: request.id, error: "boom" }))
      const error = yield* Fiber.join(pending)
      expect(error).toBeInstanceOf(RpcError)
      expect(error).toMatchObject({ method: "mock/hang", rpcMessage: expect.stringContaining("boom") })
    }).pipe(withMock()))

  it.scoped("[appserver] a failing handler's failure becomes the error reply; a handler failing without a typed error still answers", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      yield* connection.handle("item/commandExecution/requestApproval", {
        handle: () => Effect.fail({ code: -32000, message: "denied by policy", data: { rule: "no-rm" } })
      })
      expect(yield* peer.request("item/commandExecution/requestApproval", commandApproval("t"))).toEqual({
        _tag: "Error",
        id: 0,
        error: { code: -32000, message: "denied by policy", data: { rule: "no-rm" } }
      })
      yield* connection.handle("item/fileChange/requestApproval", { handle: () => Effect.interrupt })
      const interrupted = yield* peer.request("item/fileChange/requestApproval", { threadId: "t", turnId: "u", itemId: "i" })
      expect(interrupted).toMatchObject({ _tag: "Error", id: 1, error: { code: -32603 } })
    }).pipe(withMock()))

  it.scoped("[appserver] newer routes win, routes match by thread and typed params, and the older route returns when the newer Scope closes", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      const says = (who: string) => () => Effect.succeed({ who } as never)
      yield* connection.handle("item/tool/call", { handle: says("outer") })
      const inner = yield* Scope.make()
      yield* connection.handle("item/tool/call", { handle: says("inner") }).pipe(Scope.extend(inner))
      yield* connection.handle("item/tool/call", { threadId: "special", handle: says("special") }).pipe(Scope.extend(inner))
      yield* connection
        .handle("item/tool/call", { threadId: "special", when: (params) => params.tool === "picky", handle: says("picky") })
        .pipe(Scope.extend(inner))
      expect(yield* peer.request("item/tool/call", toolCall("t"))).toMatchObject({ result: { who: "inner" } })
      expect(yield* peer.request("item/tool/call", toolCall("special"))).toMatchObject({ result: { who: "special" } })
      expect(yield* peer.request("item/tool/call", toolCall("special", "picky"))).toMatchObject({ result: { who: "picky" } })
      yield* Scope.close(inner, Exit.void)
      expect(yield* peer.request("item/tool/call", toolCall("special", "picky"))).toMatchObject({ result: { who: "outer" } })
    }).pipe(withMock()))

  it.scoped("[appserver] server-request params are decoded once: handlers get typed params with unknown fields kept", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      const seen = yield* Deferred.make<unknown>()
      yield* connection.handle("item/tool/call", {
        handle: (params) => Deferred.succeed(seen, params).pipe(Effect.as(done))
      })
      const sent = { ...toolCall("t", "lookup"), namespace: null, arguments: { city: "Paris" }, futureField: 1 }
      expect(yield* peer.request("item/tool/call", sent)).toMatchObject({ _tag: "Result", result: done })
      expect(yield* Deferred.await(seen)).toEqual(sent)
    }).pipe(withMock()))

  it.scoped("[appserver] params that do not decode get the route's own answer, else an invalid-params error; other methods get method-not-found", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      yield* connection.handle("item/tool/call", {
        threadId: "t",
        handle: () => Effect.succeed(done),
        invalid: (_raw, problem) => Effect.succeed({ contentItems: [{ type: "inputText", text: `bad: ${problem}` }], success: false })
      })
      yield* connection.handle("item/fileChange/requestApproval", { handle: () => Effect.succeed({ decision: "accept" }) })
      const bad = yield* peer.request("item/tool/call", { threadId: "t", tool: 7 })
      expect(bad).toMatchObject({ _tag: "Result", result: { success: false, contentItems: [{ text: expect.stringContaining("bad: ") }] } })
      expect(yield* peer.request("item/fileChange/requestApproval", { threadId: "t" })).toMatchObject({
        _tag: "Error",
        error: { code: -32602, message: expect.stringContaining("invalid item/fileChange/requestApproval params") }
      })
      expect(yield* peer.request("item/tool/call", toolCall("other-thread"))).toMatchObject({ _tag: "Error", error: { code: -32601 } })
      expect(yield* peer.request("account/chatgptAuthTokens/refresh", {})).toMatchObject({ _tag: "Error", error: { code: -32601 } })
    }).pipe(withMock()))

  it.scoped("[appserver] a handler waiting on a person does not block the reader", () => {
    const decision = gate<string>()
    return Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      yield* connection.handle("item/commandExecution/requestApproval", {
        handle: () => Deferred.await(decision).pipe(Effect.map((d) => ({ decision: d as "accept" })))
      })
      const approval = yield* Effect.fork(peer.request("item/commandExecution/requestApproval", commandApproval("t")))
      // a client request still round-trips while the approval waits
      expect(yield* connection.requestRaw("mock/echo", { n: 1 })).toEqual({ echo: { n: 1 } })
      yield* Deferred.succeed(decision, "accept")
      expect(yield* Fiber.join(approval)).toMatchObject({ _tag: "Result", result: { decision: "accept" } })
    }).pipe(withMock())
  })

  it.scoped("[appserver] malformed and oversized lines are counted and skipped; the connection keeps working", () =>
    Effect.gen(function* () {
      const connection = yield* connect({ maxLineBytes: 1024 })
      const mock = yield* MockAppServer
      const peer = yield* mock.latest
      const malformed = [
        "this is not json",
        "{\"truncated\":",
        "[1,2]",
        "42",
        "{}",
        "{\"foo\":1}",
        JSON.stringify({ id: 14.5, method: "item/tool/call", params: {} }),
        JSON.stringify({ id: null, method: "item/tool/call", params: {} })
      ]
      const unmatched = [JSON.stringify({ id: 999, result: {} }), JSON.stringify({ id: 14.5, result: {} })]
      for (const line of [...malformed, ...unmatched]) yield* peer.sendRaw(line)
      yield* peer.sendRaw("")
      yield* peer.sendRaw(JSON.stringify({ method: "x/y", params: { pad: "p".repeat(2_000) } }))
      expect(yield* connection.requestRaw("mock/echo", { still: "alive" })).toEqual({ echo: { still: "alive" } })
      expect(yield* connection.stats).toEqual({
        malformedLines: malformed.length,
        oversizedLines: 1,
        unmatchedResponses: unmatched.length,
        undecodedNotifications: 0,
        pendingRequests: 0
      })
      // nothing was answered to the bogus server requests
      expect((yield* mock.messages).filter((m) => m._tag === "Response")).toEqual([])
      expect(Option.isNone(yield* connection.terminationCause)).toBe(true)
    }).pipe(withMock()))

  it.scoped("[appserver] notifications are decoded once into tags; unknown methods and unknown fields reach subscribers untouched; subscribe({threadId}) filters", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      const all = yield* connection.subscribe()
      const t1 = yield* connection.subscribe({ threadId: "t1" })
      const sent = [
        { method: "future/feature", params: { threadId: "t1", nested: { list: [1, "two", null] }, emittedAtMs: 5 } },
        { method: "item/completed", params: { threadId: "t2", turnId: "u", item: { type: "brandNewItem", id: "i", extra: true } } },
        { method: "configWarning", params: { summary: "heads up" } },
        { method: "turn/started", params: { threadId: "t1", turn: { id: "u1", status: "inProgress", items: [], newField: 1 } } },
        { method: "thread/started", params: { thread: { id: "t1", modelProvider: "p", preview: "", ephemeral: false, cwd: "/w" } } }
      ]
      for (const n of sent) yield* peer.notify(n.method, n.params)
      const got = Array.from(yield* all.pipe(Stream.take(5), Stream.runCollect))
      expect(got.map((n) => n._tag)).toEqual(["Unknown", "ItemCompleted", "Unknown", "TurnStarted", "ThreadStarted"])
      // an item of a kind the harness has no schema for is the Unknown item, the raw item kept whole
      const newItem = { type: "brandNewItem", id: "i", extra: true }
      const unknownItem = { type: "unknown", itemType: "brandNewItem", id: "i", raw: newItem }
      expect(got.map((n) => ({ method: n.method, params: n.params }))).toEqual(
        sent.map((n) => (n.method === "item/completed" ? { ...n, params: { ...n.params, item: unknownItem } } : n))
      )
      expect(Array.from(yield* t1.pipe(Stream.take(3), Stream.runCollect)).map((n) => n.method)).toEqual([
        "future/feature",
        "turn/started",
        "thread/started"
      ])
    }).pipe(withMock()))

  it.scoped("observers run on the reader in their order, before a subscriber gets the notification; one that fails is logged and the others go on", () => {
    const logged: Array<string> = []
    // the reader logs in the connection's own fibers: the logger is the whole test's
    const logger = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void logged.push(String(message))))
    return Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      const seen: Array<string> = []
      // answers Effect.void to all but turn/started: the reader then has nothing of it to run
      yield* connection.forEachNotification({ threadId: "t1" }, (n) =>
        n._tag === "TurnStarted" ? Effect.sync(() => void seen.push(`first ${n.method}`)) : Effect.void)
      yield* connection.forEachNotification({ threadId: "t1" }, (n) =>
        n._tag === "TurnStarted" ? Effect.dieMessage("an observer's bug") : Effect.void)
      yield* connection.forEachNotification({ threadId: "t1" }, (n) => Effect.sync(() => void seen.push(`third ${n.method}`)))
      // one of no thread sees what belongs to none
      yield* connection.forEachNotification(undefined, (n) =>
        n._tag === "TurnStarted" ? Effect.void : Effect.sync(() => void seen.push(`any ${n.method}`)))
      const all = yield* connection.subscribeQueueFor()
      yield* peer.notify("turn/started", { threadId: "t1", turn: { id: "u1", status: "inProgress", items: [] } })
      yield* peer.notify("configWarning", { summary: "heads up" })
      // the subscriber's receipt: by the time it has a notification, every observer has seen it (the reader may
      // have gone on to the next one meanwhile)
      const first = yield* Queue.take(all)
      expect(first.method).toBe("turn/started")
      expect(seen.slice(0, 2)).toEqual(["first turn/started", "third turn/started"])
      const second = yield* Queue.take(all)
      expect(second.method).toBe("configWarning")
      expect(seen).toEqual(["first turn/started", "third turn/started", "any configWarning"])
      expect(logged.filter((line) => line.includes("a notification observer failed on turn/started"))).toHaveLength(1)
    }).pipe(withMock(), Effect.provide(logger))
  })

  it.scoped("[appserver] a notification of a known method that does not decode arrives as Unknown with the raw params and a reason, and is counted", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const peer = yield* (yield* MockAppServer).latest
      const all = yield* connection.subscribe()
      const broken = { threadId: "t1", turn: { id: 42 } }
      yield* peer.notify("turn/completed", broken)
      yield* peer.notify("turn/completed", { threadId: "t1", turn: { id: "u1", status: "completed", items: [] } })
      const [first, second] = Array.from(yield* all.pipe(Stream.take(2), Stream.runCollect))
      expect(first).toMatchObject({ _tag: "Unknown", method: "turn/completed", params: broken, problem: expect.any(String) })
      expect(second).toMatchObject({ _tag: "TurnCompleted", params: { turn: { id: "u1", status: "completed" } } })
      expect((yield* connection.stats).undecodedNotifications).toBe(1)
    }).pipe(withMock()))

  it.scoped("[appserver] the peer crashing mid-request fails every pending request once with AppServerExited (signal, stderr tail)", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const mock = yield* MockAppServer
      const peer = yield* mock.latest
      const first = yield* Effect.fork(connection.requestRaw("mock/hang", { n: 1 }))
      const second = yield* Effect.fork(connection.requestRaw("mock/hang", { n: 2 }))
      yield* mock.awaitRequest("mock/hang", 2)
      // and a server request the harness is still working on
      const handling = yield* Deferred.make<void>()
      yield* connection.handle("item/tool/call", {
        handle: () => Deferred.succeed(handling, undefined).pipe(Effect.zipRight(Effect.never))
      })
      const serverRequest = yield* Effect.fork(peer.request("item/tool/call", toolCall("t")))
      yield* Deferred.await(handling)
      yield* peer.setStderrTail("WARN codex_core: slow\nthread 'main' panicked at core/src/lib.rs:1: boom\n")
      yield* peer.crash("SIGSEGV")
      expect(yield* Fiber.join(serverRequest).pipe(Effect.flip)).toMatchObject({ _tag: "MockPeerExited", peer: 1 })

      const error = yield* Fiber.join(first).pipe(Effect.flip)
      expect(error).toBeInstanceOf(AppServerExited)
      expect(error).toMatchObject({
        exitCode: null,
        signal: "SIGSEGV",
        stderrTail: "WARN codex_core: slow\nthread 'main' panicked at core/src/lib.rs:1: boom\n"
      })
      expect(error.message).toBe("the codex app-server killed by SIGSEGV: thread 'main' panicked at core/src/lib.rs:1: boom")
      expect(yield* Fiber.join(second).pipe(Effect.flip)).toBe(error)
      expect(yield* connection.terminated).toBe(error)
      expect(yield* connection.terminationCause).toEqual(Option.some(error))
      expect((yield* connection.stats).pendingRequests).toBe(0)
      // once only: later requests fail with the same cause, and a retire does not replace it
      expect(yield* connection.requestRaw("mock/echo", {}).pipe(Effect.flip)).toBe(error)
      yield* connection.retire("too late")
      expect(yield* connection.terminated).toBe(error)
      expect(yield* connection.notify("initialized").pipe(Effect.flip)).toBe(error)
    }).pipe(withMock()))

  it.scoped("[appserver] the peer exiting with a code fails the pending request with that code", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const mock = yield* MockAppServer
      const pending = yield* Effect.fork(connection.requestRaw("mock/hang", {}))
      yield* mock.awaitRequest("mock/hang")
      yield* (yield* mock.latest).exit(101)
      expect(yield* Fiber.join(pending).pipe(Effect.flip)).toMatchObject({
        _tag: "AppServerExited",
        exitCode: 101,
        signal: null,
        stderrTail: "boot log"
      })
    }).pipe(withMock({ stderrTail: "boot log" })))

  it.scoped("[appserver] retire fails pending requests with ConnectionRetired and closes stdin; the peer exits", () =>
    Effect.gen(function* () {
      const connection = yield* connect()
      const mock = yield* MockAppServer
      const peer = yield* mock.latest
      const pending = yield* Effect.fork(connection.requestRaw("mock/hang", {}))
      yield* mock.awaitRequest("mock/hang")
      yield* connection.retire("interrupt was not confirmed")
      const error = yield* Fiber.join(pending).pipe(Effect.flip)
      expect(error).toBeInstanceOf(ConnectionRetired)
      expect(error).toMatchObject({ reason: "interrupt was not confirmed", retryable: true })
      expect(yield* peer.inputEnded).toBe(true)
      expect(yield* peer.awaitExit).toEqual({ exitCode: 0, signal: null })
      expect(yield* connection.terminated).toBe(error)
      expect(yield* connection.requestRaw("mock/echo", {}).pipe(Effect.flip)).toBe(error)
    }).pipe(withMock()))

  it.scoped("[appserver] closing the connection's Scope fails waiters with ConnectionRetired and releases the peer", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const scope = yield* Scope.make()
      const connection = yield* connect().pipe(Scope.extend(scope))
      const peer = yield* mock.latest
      const pending = yield* Effect.fork(connection.requestRaw("mock/hang", {}))
      yield* mock.awaitRequest("mock/hang")
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.join(pending).pipe(Effect.flip)).toMatchObject({ _tag: "ConnectionRetired", reason: "its scope closed" })
      expect(yield* peer.released).toBe(true)
      expect(yield* peer.exitInfo).toEqual(Option.some({ exitCode: 0, signal: null }))
    }).pipe(withMock()))

  it.scoped("[appserver] MockAppServer gates on initialize like the real server and ends everything when its spawn Scope closes", () =>
    Effect.gen(function* () {
      const transport = yield* Transport
      const mock = yield* MockAppServer
      const scope = yield* Scope.make()
      const handle = yield* transport.spawn({}).pipe(Scope.extend(scope))
      const clientInfo = { name: "raw", version: "1" }
      yield* handle.send(JSON.stringify({ id: "early", method: "thread/start", params: {} }))
      yield* handle.send(JSON.stringify({ id: 1, method: "initialize", params: { clientInfo } }))
      const answers = yield* handle.incoming.pipe(Stream.take(2), Stream.runCollect)
      yield* handle.send(JSON.stringify({ id: 2, method: "initialize", params: { clientInfo } }))
      yield* handle.send("garbage")
      yield* handle.send(JSON.stringify({ method: "no/such/notification" }))
      yield* handle.send(JSON.stringify({ id: 3, method: "mock/hang", params: {} }))
      const more = yield* handle.incoming.pipe(Stream.take(1), Stream.runCollect)
      const parsed = [...answers, ...more].map((l) => (l._tag === "Line" ? JSON.parse(l.text) : l))
      expect(parsed).toEqual(
        expect.arrayContaining([
          { id: "early", error: { code: -32600, message: "Not initialized" } },
          { id: 1, result: expect.objectContaining({ platformOs: "linux" }) },
          { id: 2, error: { code: -32600, message: "Already initialized" } }
        ])
      )
      const peer = yield* mock.latest
      expect((yield* peer.messages).map((m) => m._tag)).toEqual([
        "Request",
        "Request",
        "Request",
        "Invalid",
        "Notification",
        "Request"
      ])
      expect(yield* peer.released).toBe(false)
      yield* Scope.close(scope, Exit.void)
      expect(yield* peer.released).toBe(true)
      expect(yield* handle.exited).toEqual({ exitCode: 0, signal: null })
      expect(yield* handle.send(JSON.stringify({ id: 4, method: "mock/echo", params: {} }))).toBe(false)
      // stdout ended: the hung request never got an answer
      expect(Array.from(yield* handle.incoming.pipe(Stream.runCollect))).toEqual([])
    }).pipe(withMock()))
})
