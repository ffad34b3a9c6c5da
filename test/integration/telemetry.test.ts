// Optional OpenTelemetry export (issue 18 item 5), on the real app-server: with Telemetry.layer provided, a turn's spans
// reach an OTLP/HTTP collector as one tree (the turn, its thread setup, its `turn/start` request and its delivery), and
// a collector that is down, or that takes a post and never answers, neither fails the turn nor holds up the close. The
// collector is this file's own: a node:http server on 127.0.0.1 keeping each JSON body posted to /v1/traces in memory.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Deferred, Effect, Either, Fiber, Logger, Option, Queue, TestClock, TestServices } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Telemetry from "../../src/control/Telemetry.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { RecordingDelivery } from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind, liveContext } from "../support/harness.js"
import { client, startServe } from "../support/serve.js"
import { Stream } from "effect"

interface OtlpValue { readonly stringValue?: string }
interface OtlpAttribute { readonly key: string; readonly value: OtlpValue }
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: ReadonlyArray<OtlpAttribute>
}
interface TracesBody {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource: { readonly attributes: ReadonlyArray<OtlpAttribute> }
    readonly scopeSpans: ReadonlyArray<{ readonly spans: ReadonlyArray<OtlpSpan> }>
  }>
}
interface Post { readonly url: string; readonly headers: Http.IncomingHttpHeaders; readonly body: TracesBody }

const attribute = (attributes: ReadonlyArray<OtlpAttribute>, key: string) => attributes.find((a) => a.key === key)?.value.stringValue

/**
 * The in-memory collector. `answer: false` takes each post and never answers it (a collector that hangs); `abandoned`
 * counts the posts whose client gave up on them. Every arrival and every abandonment is a receipt on `changes`.
 */
const collector = (answer = true) =>
  Effect.gen(function* () {
    const posts: Array<Post> = []
    let pending = 0
    let abandoned = 0
    const changes = yield* Queue.unbounded<void>()
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        posts.push({ url: req.url ?? "", headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as TracesBody })
        if (answer) {
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        } else {
          pending++
          res.on("close", () => {
            pending--
            abandoned++
            changes.unsafeOffer(undefined)
          })
        }
        changes.unsafeOffer(undefined)
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void))),
      () => Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
    )
    const spans = () => posts.flatMap((p) => p.body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)))
    /** waits (on arrivals, never a sleep) until the collector's state satisfies `check` */
    const waitFor = (check: () => boolean) =>
      Effect.gen(function* () {
        while (!check()) yield* Queue.take(changes)
      }).pipe(Effect.timeout("120 seconds"))
    const port = (server.address() as AddressInfo).port
    return {
      endpoint: `http://127.0.0.1:${port}/v1/traces`,
      posts,
      spans,
      waitFor,
      pending: () => pending,
      abandoned: () => abandoned
    }
  })

/** a port nothing listens on: bound, then closed again */
const closedPort = Effect.async<number>((resume) => {
  const server = Http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** the live harness built inside the telemetry layer, as the CLI should: the tracer outermost, flushed last */
const withHarness = <A, E>(
  settings: HarnessSettings,
  endpoint: string,
  use: (harness: Context.Tag.Service<typeof CodexHarness>, context: Context.Context<RecordingDelivery>) => Effect.Effect<A, E>
) =>
  Effect.scoped(Effect.flatMap(liveContext(settings), (context) => use(Context.get(context, CodexHarness), context))).pipe(
    Effect.provide(Telemetry.layer({ endpoint, headers: { authorization: "Bearer collector-token" } }))
  )

describe("OpenTelemetry export on the real app-server", () => {
  it.scopedLive("a turn's spans reach the collector as one tree: the turn, its thread setup, its turn/start and its delivery", () =>
    Effect.gen(function* () {
      const otlp = yield* collector()
      const f = yield* fixture({ replies: [reply.text("traced reply")] })
      const { delivered, result } = yield* withHarness(f.settings, otlp.endpoint, (harness, context) =>
        Effect.gen(function* () {
          const result = yield* harness.runTurn({ sessionId: "traced", prompt: "hi" })
          // the receipt is the periodic export (every second), taken while the layer is open: the flush at its close
          // may give up after 100 ms of real time (its bound), which a loaded machine can take for a post on loopback
          yield* otlp.waitFor(() => {
            const names = new Set(otlp.spans().map((s) => s.name))
            return ["CodexHarness.runTurn", "ThreadSetup.forSession", "Delivery.deliver", "SessionRuntime.lease"].every((n) => names.has(n))
          })
          return { result, delivered: yield* Context.get(context, RecordingDelivery).replies }
        }))
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      expect(result.status).toBe("completed")
      expect(delivered.map((r) => r.text)).toEqual(["traced reply"])

      const spans = otlp.spans()
      const byId = new Map(spans.map((s) => [s.spanId, s]))
      const turns = spans.filter((s) => s.name === "CodexHarness.runTurn")
      expect(turns).toHaveLength(1)
      const turn = turns[0]!
      expect(attribute(turn.attributes, "sessionId")).toBe("traced")
      /** true when `span` has the turn span up its chain of parents, every link in the turn's trace */
      const underTurn = (span: OtlpSpan) => {
        for (let at: OtlpSpan | undefined = span; at !== undefined; at = at.parentSpanId === undefined ? undefined : byId.get(at.parentSpanId)) {
          if (at.traceId !== turn.traceId) return false
          if (at.parentSpanId === turn.spanId) return true
        }
        return false
      }
      const named = (name: string) => spans.filter((s) => s.name === name)
      expect(named("ThreadSetup.forSession").filter(underTurn)).toHaveLength(1)
      expect(named("AppServer.request").filter((s) => attribute(s.attributes, "method") === "turn/start").filter(underTurn)).toHaveLength(1)
      expect(named("Delivery.deliver").filter(underTurn)).toHaveLength(1)
      expect(named("SessionRuntime.lease").filter(underTurn).length).toBeGreaterThanOrEqual(1)

      // OTLP/HTTP JSON to /v1/traces, with the configured headers, from service "codex-harness"
      for (const post of otlp.posts) {
        expect(post.url).toBe("/v1/traces")
        expect(post.headers["content-type"]).toBe("application/json")
        expect(post.headers.authorization).toBe("Bearer collector-token")
        expect(attribute(post.body.resourceSpans[0]!.resource.attributes, "service.name")).toBe("codex-harness")
      }
    }))

  it.scopedLive("a collector that is not listening fails nothing: the turn completes and the scope closes", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const f = yield* fixture({ replies: [reply.text("untraced reply")] })
      const result = yield* withHarness(f.settings, `http://127.0.0.1:${port}/v1/traces`, (harness) =>
        harness.runTurn({ sessionId: "unheard", prompt: "hi" }))
      expect(result.status).toBe("completed")
      expect(result.finalText).toBe("untraced reply")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a collector that takes a post and never answers holds up neither a turn nor the close, which abandons the post", () =>
    Effect.gen(function* () {
      const otlp = yield* collector(false)
      const f = yield* fixture({ replies: [reply.text("first"), reply.text("second")] })
      const second = yield* withHarness(f.settings, otlp.endpoint, (harness) =>
        Effect.gen(function* () {
          yield* harness.runTurn({ sessionId: "hung", prompt: "one" })
          // the first turn's spans are posted within the export interval, and the collector sits on the post
          yield* otlp.waitFor(() => otlp.pending() > 0)
          // a turn run while the export is stuck
          return yield* harness.runTurn({ sessionId: "hung", prompt: "two" })
        })).pipe(
          // generous: the close waits for the last post at most the layer's 100 ms shutdown bound; without that bound it
          // would wait out each post's own 10 s timeout, four tries (~44 s), and an unbounded client for ever
          Effect.timeoutFail({ duration: "25 seconds", onTimeout: () => new Error("the close waited for a collector that never answers") })
        )
      expect(second.finalText).toBe("second")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      // the close returned although no post was ever answered: the exporter gave every post up (its shutdown bound)
      yield* otlp.waitFor(() => otlp.pending() === 0)
      expect(otlp.abandoned()).toBe(otlp.posts.length)
      expect(otlp.posts.length).toBeGreaterThanOrEqual(1)
    }))
})

/** a real wait while the TestClock stands still: lets sockets and fetch make progress */
const realPause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/**
 * On the TestClock: a span ended inside Telemetry.layer, then the layer's close, forked. Returns the closing fiber, the
 * log lines (level and text) and `bounded`, which holds up to 20 s of real time (the TestClock never fires on its own).
 */
const closeOnTheClock = (endpoint: string) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) =>
      void lines.push(`${logLevel.label}: ${Array.isArray(message) ? message.map(String).join(" ") : String(message)}`))
    const worked = yield* Deferred.make<void>()
    const closing = yield* Effect.void.pipe(
      Effect.withSpan("traced work"),
      Effect.zipRight(Deferred.succeed(worked, undefined)),
      Effect.provide(Telemetry.layer({ endpoint })),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Effect.fork
    )
    yield* Deferred.await(worked)
    const bounded = <A, E>(effect: Effect.Effect<A, E>) =>
      TestServices.provideLive(Effect.timeoutFail(effect, { duration: "20 seconds", onTimeout: () => new Error("no receipt within 20 s") }))
    /** polled (at most 20 s of real time) until the close's wait for its last post is on the clock: a timer due 100 ms on */
    const boundSet = Effect.gen(function* () {
      for (let polls = 0; polls < 1000; polls++) {
        const now = yield* TestClock.currentTimeMillis
        if (Chunk.some(yield* TestClock.sleeps(), (at) => at === now + 100)) return
        yield* realPause(20)
      }
      return yield* Effect.fail(new Error("the close set no 100 ms bound within 20 s"))
    })
    return { closing, lines, bounded, boundSet }
  })

/** the exit's bound, on the clock: not over after 99 ms, over at 100 ms (an exit may wait 200 ms: the rest is slack) */
const closesAt100ms = (close: Effect.Effect.Success<ReturnType<typeof closeOnTheClock>>) =>
  Effect.gen(function* () {
    yield* close.boundSet
    yield* TestClock.adjust("99 millis")
    yield* realPause(100)
    expect(Option.isNone(yield* Fiber.poll(close.closing))).toBe(true)
    yield* TestClock.adjust("1 millis")
    yield* close.bounded(Fiber.join(close.closing))
    const dropped = close.lines.filter((line) => line.includes("dropped"))
    expect(dropped).toHaveLength(1)
    expect(dropped[0]).toMatch(/^INFO: telemetry: 1 of 1 span dropped: the collector at http:\/\/127\.0\.0\.1:\d+\/v1\/traces did not take them/)
  })

describe("telemetry at exit: bounded, and a loss is said once", () => {
  it.scoped("a collector that takes the last post and never answers holds the close up 100 ms of the clock, and the close says the span was dropped", () =>
    Effect.gen(function* () {
      const otlp = yield* collector(false)
      const close = yield* closeOnTheClock(otlp.endpoint)
      // the flush's post has reached the collector, which sits on it
      yield* close.bounded(otlp.waitFor(() => otlp.pending() > 0))
      yield* closesAt100ms(close)
      // the post was given up, not left open
      yield* close.bounded(otlp.waitFor(() => otlp.pending() === 0))
      expect(otlp.abandoned()).toBe(otlp.posts.length)
    }))

  it.scoped("a collector that is not listening holds the close up 100 ms of the clock (not its retries, a second apart), and the close says the span was dropped", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      yield* closesAt100ms(yield* closeOnTheClock(`http://127.0.0.1:${port}/v1/traces`))
    }))

  it.scoped("a collector that takes every span: the close ends as soon as it answered, with the clock still, and says nothing", () =>
    Effect.gen(function* () {
      const otlp = yield* collector()
      const close = yield* closeOnTheClock(otlp.endpoint)
      yield* close.bounded(Fiber.join(close.closing))
      expect(otlp.spans().map((s) => s.name)).toEqual(["traced work"])
      expect(close.lines.filter((line) => line.includes("dropped"))).toEqual([])
    }))
})

describe("serve --otlp", () => {
  it.scopedLive("with a collector listening, a turn through serve reaches it as the HTTP request's span, the control call's and the turn's", () =>
    Effect.gen(function* () {
      const c = yield* collector()
      const f = yield* fixture({ replies: [reply.text("traced")] })
      const s = yield* startServe(f, ["--otlp", c.endpoint])
      // the client's own scope: closing its WebSocket ends the upgrade request's span
      const events = yield* Effect.scoped(Effect.flatMap(client(s.url, s.token), (a) =>
        a.StartTurn({ session: "otlp-served", prompt: "hi" }).pipe(Stream.runCollect)))
      expect([...events].find((e) => e.type === "turn.completed")).toMatchObject({ final_text: "traced" })
      // the receipt is serve's periodic export, while it runs (its flush at exit has a 100 ms bound of real time,
      // which a loaded machine can take for one post): the WebSocket's upgrade request, the call on it, the turn
      const wanted = ["http.server GET", "Control.StartTurn", "CodexHarness.runTurn"]
      yield* c.waitFor(() => {
        const names = new Set(c.spans().map((span) => span.name))
        return wanted.every((name) => names.has(name))
      })
      s.serve.child.kill("SIGTERM")
      expect(yield* s.serve.exited.pipe(Effect.timeout("120 seconds"))).toEqual({ code: 143, signal: null })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("with a collector that is not listening, serve at --log-level info says once on stderr that spans were dropped, and exits", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const f = yield* fixture({ replies: [reply.text("served")] })
      const s = yield* startServe(f, ["--otlp", `http://127.0.0.1:${port}`], "127.0.0.1:0", "info")
      const a = yield* client(s.url, s.token)
      const events = yield* a.StartTurn({ session: "otlp-exit", prompt: "hi" }).pipe(Stream.runCollect)
      expect([...events].find((e) => e.type === "turn.completed")).toMatchObject({ final_text: "served" })
      s.serve.child.kill("SIGTERM")
      const exit = yield* s.serve.exited.pipe(Effect.timeout("120 seconds"))
      expect(exit).toEqual({ code: 143, signal: null })
      const dropped = s.serve.stderr().split("\n").filter((line) => line.includes("dropped"))
      expect(dropped).toHaveLength(1)
      expect(dropped[0]).toMatch(new RegExp(`^codex-harness: info: telemetry: \\d+ of \\d+ spans dropped: the collector at http://127\\.0\\.0\\.1:${port}/v1/traces did not take them`))
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})

describe("telemetry configuration", () => {
  const endpoint = (flag: string | undefined, env: NodeJS.ProcessEnv) => Either.getOrThrow(Telemetry.endpointFrom(flag, env))
  const refusal = (flag: string | undefined, env: NodeJS.ProcessEnv) =>
    Either.match(Telemetry.endpointFrom(flag, env), { onLeft: (e) => e.message, onRight: (url) => `accepted ${url}` })

  it("no flag and no OTel variable: telemetry is off", () => {
    expect(endpoint(undefined, {})).toBeUndefined()
    expect(endpoint("", { OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBeUndefined()
  })

  it("the flag wins over the variables; a base gets /v1/traces, the traces variable is used as is", () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/custom/path" }
    expect(endpoint("http://flag:4318", env)).toBe("http://flag:4318/v1/traces")
    expect(endpoint(undefined, env)).toBe("https://traces.example/custom/path")
    expect(endpoint(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318" })).toBe("http://base:4318/v1/traces")
    expect(endpoint(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "https://gw.example/otlp/" })).toBe("https://gw.example/otlp/v1/traces")
    // a flag that already names the traces path is taken as meant
    expect(endpoint("http://flag:4318/v1/traces", {})).toBe("http://flag:4318/v1/traces")
  })

  it("credentials in the URL are refused, and the message does not show them", () => {
    const message = refusal("https://alice:s3cret-token@collector.example:4318", {})
    expect(message).toContain("--otlp")
    expect(message).toContain("https://alice:***@collector.example:4318")
    expect(message).not.toContain("s3cret-token")
    expect(message.split("\n")).toHaveLength(1)
    const tokenOnly = refusal(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://tok-123456@collector:4318" })
    expect(tokenOnly).toContain("OTEL_EXPORTER_OTLP_ENDPOINT")
    expect(tokenOnly).not.toContain("tok-123456")
    // not even a URL: still nothing between "//" and "@" is shown
    const unparsed = refusal("http://us er:pa<ss@ho st", {})
    expect(unparsed).toBe("--otlp: not a URL (http://***@ho st)")
  })

  it("only http: and https: collectors, and OTLP over HTTP, are accepted", () => {
    expect(refusal("grpc://collector:4317", {})).toMatch(/only http: and https:/)
    expect(refusal("file:///tmp/traces", {})).toMatch(/only http: and https:/)
    expect(refusal("collector:4318", {})).toMatch(/only http: and https:|not a URL/)
    expect(refusal("not a url", {})).toMatch(/not a URL/)
    expect(refusal(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toMatch(/grpc is not supported/)
    // the flag is an HTTP collector whatever the variables say
    expect(endpoint("http://c:4318", { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toBe("http://c:4318/v1/traces")
  })

  it("headers come from OTEL_EXPORTER_OTLP_HEADERS (percent-decoded), the traces-only variable over it", () => {
    const headers = Telemetry.headersFrom({
      OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Bearer%20abc, x-tenant = one ,",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-tenant=two"
    })
    expect(Either.getOrThrow(headers)).toEqual({ authorization: "Bearer abc", "x-tenant": "two" })
    expect(Either.getOrThrow(Telemetry.headersFrom({}))).toEqual({})
    const bad = Either.match(Telemetry.headersFrom({ OTEL_EXPORTER_OTLP_HEADERS: "a=1,secret-without-key" }), {
      onLeft: (e) => e.message,
      onRight: () => "accepted"
    })
    expect(bad).toBe("OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value with a header name as key")
    const config = Either.getOrThrow(Telemetry.configFrom(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_HEADERS: "k=v" }))
    expect(config).toEqual({ endpoint: "http://c:4318/v1/traces", headers: { k: "v" } })
  })

  it.effect("layerFromEnv with nothing configured is no layer at all; a bad configuration fails it with the typed error", () =>
    Effect.gen(function* () {
      yield* Effect.provide(Effect.void, Telemetry.layerFromEnv(undefined, { env: {} }))
      const failed = yield* Effect.flip(Effect.provide(Effect.void, Telemetry.layerFromEnv("ftp://c", { env: {} })))
      expect(failed._tag).toBe("TelemetryConfigError")
    }))
})
