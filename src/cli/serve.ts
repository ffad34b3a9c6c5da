// `codex-harness serve`: the harness as one long-lived process that owns the app-server pool, with the control API
// (src/control/) for many clients: the CLI (`--connect`, or found through serve.json), the Control UI, a bot.
// Loaded when the command runs; its flags are in commands/serve.ts.
//
// Start-up refuses in one line: a second serve on the state dir (serve.lock), a non-loopback address without TLS or
// --insecure-remote, a half-given TLS pair. Shutdown (SIGTERM, SIGINT): new turns are refused, running ones get
// --shutdown-grace seconds to finish and are then interrupted (Codex is told), the listener closes, every app-server
// exits with the pool's scope.
import { Headers, HttpMiddleware, HttpServer } from "@effect/platform"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Console, Duration, Effect, identity, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import * as net from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Live from "../../layers/internal/Live.js"
import * as ConfigSchema from "../../schemas/config.js"
import { isLoopbackHost } from "../appserver/AppServerUrl.js"
import * as ClusterDatabase from "../cluster/ClusterDatabase.js"
import * as ClusterRouter from "../cluster/ClusterRouter.js"
import * as ClusterRunner from "../cluster/ClusterRunner.js"
import * as HubObserver from "../control/HubObserver.js"
import { SessionWork } from "../harness/SessionWork.js"
import * as ControlServer from "../control/ControlServer.js"
import * as EventHub from "../control/EventHub.js"
import * as Handlers from "../control/Handlers.js"
import * as Interactions from "../control/Interactions.js"
import * as ServeFiles from "../control/ServeFiles.js"
import * as Telemetry from "../control/Telemetry.js"
import * as WebSocketFrameBound from "../control/WebSocketFrameBound.js"
import { parseHostPort } from "../platform/hostPort.js"
import * as Supervision from "../supervision/layer.js"
import * as ClusterCli from "./cluster.js"
import type { ServeOptions } from "./commands/serve.js"
import { UsageError } from "./errors.js"
import { toSettingsAndFile } from "./settings.js"
import { packageVersion } from "./version.js"

export type Listen =
  | { readonly _tag: "Tcp"; readonly host: string; readonly port: number; readonly loopback: boolean }
  | { readonly _tag: "Unix"; readonly path: string }

/** `--listen`: HOST:PORT ([V6]:PORT) or unix:PATH. Pure. */
export const parseListen = (text: string): Listen | string => {
  if (text.startsWith("unix:")) {
    const file = text.slice(5)
    return file === "" ? "unix: needs a path (unix:/run/codex-harness.sock)" : { _tag: "Unix", path: path.resolve(file) }
  }
  const parsed = parseHostPort(text)
  if (typeof parsed === "string") return parsed.startsWith("expected") ? `expected HOST:PORT or unix:PATH, got ${JSON.stringify(text)}` : parsed
  return { _tag: "Tcp", ...parsed, loopback: isLoopbackHost(parsed.host) }
}

/** The Control UI's page and script, built by `npm run build` into dist/bundle/ (found from here, tsc or bundle). */
const loadUi = (): ControlServer.UiAssets | undefined => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 5; i++) {
    const html = path.join(dir, "dist", "bundle", "control-ui.html")
    const local = path.join(dir, "control-ui.html")
    for (const candidate of [local, html]) {
      try {
        return { html: fs.readFileSync(candidate, "utf8"), script: fs.readFileSync(candidate.replace(/\.html$/, ".js"), "utf8") }
      } catch {
        // not here: the next candidate, then one level up
      }
    }
    dir = path.dirname(dir)
  }
  return undefined
}

/** `--cluster URL` with its runner address; the password comes from $PGPASSWORD, never from argv. */
const clusterOptions = (options: ServeOptions) =>
  Effect.gen(function* () {
    const given = Option.getOrUndefined(options.cluster)
    if (given === undefined) {
      if (
        Option.isSome(options.runnerListen) || Option.isSome(options.runnerAdvertise) || Option.isSome(options.retention) ||
        Option.isSome(options.databaseConnections)
      ) {
        return yield* new UsageError({ line: "--runner-listen, --runner-advertise, --retention and --database-connections go with --cluster" })
      }
      return undefined
    }
    const databaseUrl = ClusterCli.databaseUrl(given)
    if (typeof databaseUrl !== "string") return yield* databaseUrl
    const listenText = Option.getOrUndefined(options.runnerListen)
    if (listenText === undefined) return yield* new UsageError({ line: "--cluster needs --runner-listen HOST:PORT (where the other runners reach this one)" })
    const listen = ClusterRunner.parseRunnerListen(listenText)
    if (typeof listen === "string") return yield* new UsageError({ line: `--runner-listen: ${listen}` })
    const advertiseText = Option.getOrUndefined(options.runnerAdvertise)
    const advertise = advertiseText === undefined ? undefined : ClusterRunner.parseRunnerListen(advertiseText)
    if (typeof advertise === "string") return yield* new UsageError({ line: `--runner-advertise: ${advertise}` })
    const hours = Option.getOrUndefined(options.retention)
    if (hours !== undefined && !(hours > 0 && hours <= 24 * 3650)) {
      return yield* new UsageError({ line: `--retention must be a number of hours above 0, got ${hours}` })
    }
    const connections = Option.getOrUndefined(options.databaseConnections)
    if (connections !== undefined && !(connections >= ClusterDatabase.minimumRunnerConnections && connections <= 1_000)) {
      return yield* new UsageError({
        line: `--database-connections must be a whole number from ${ClusterDatabase.minimumRunnerConnections} to 1000 (two connections hold a runner's locks), got ${connections}`
      })
    }
    return {
      databaseUrl,
      listen,
      advertise,
      ...(hours === undefined ? {} : { retention: Duration.millis(Math.round(hours * 3_600_000)) }),
      ...(connections === undefined ? {} : { databaseConnections: connections })
    }
  })

/**
 * A Unix socket path is taken over only from a serve that is gone: a socket nobody answers on is removed; a socket in
 * use, or anything that is not a socket (a mistyped path to a file), is refused in one line.
 */
const clearSocketPath = (file: string) =>
  Effect.gen(function* () {
    const info = fs.statSync(file, { throwIfNoEntry: false })
    if (info === undefined) return
    if (!info.isSocket()) return yield* new UsageError({ line: `--listen unix:${file}: it exists and is not a socket` })
    const answered = yield* Effect.async<boolean>((resume) => {
      const probe = net.connect(file)
      probe.once("connect", () => (probe.destroy(), resume(Effect.succeed(true))))
      probe.once("error", () => resume(Effect.succeed(false)))
      return Effect.sync(() => probe.destroy())
    }).pipe(Effect.timeoutTo({ duration: "2 seconds", onTimeout: () => true, onSuccess: (a) => a }))
    if (answered) return yield* new ServeFiles.ServeFilesError({ path: file, reason: "another process serves on this socket" })
    yield* Effect.sync(() => fs.rmSync(file, { force: true }))
  })

const readPem = (flag: string, file: string) =>
  Effect.try({
    try: () => fs.readFileSync(file),
    catch: (e) => new UsageError({ line: `--${flag} ${file}: ${e instanceof Error ? e.message : String(e)}` })
  })

/** `--max-request-bytes` when given (it wins over the config's `serve.maxRequestBytes`); out of range is a usage error. */
const maxRequestBytesFlag = (options: ServeOptions) =>
  Effect.gen(function* () {
    const flag = Option.getOrUndefined(options.maxRequestBytes)
    const { max, min } = ConfigSchema.maxRequestBytesRange
    if (flag !== undefined && (flag < min || flag > max)) {
      return yield* new UsageError({ line: `--max-request-bytes must be from ${min} to ${max}, got ${flag}` })
    }
    return flag
  })

export const serve = (options: ServeOptions) =>
  Effect.gen(function* () {
    const listen = parseListen(options.listen)
    if (typeof listen === "string") return yield* new UsageError({ line: `--listen: ${listen}` })
    const cert = Option.getOrUndefined(options.tlsCert)
    const key = Option.getOrUndefined(options.tlsKey)
    if ((cert === undefined) !== (key === undefined)) return yield* new UsageError({ line: "--tls-cert and --tls-key go together" })
    const tls = cert !== undefined && key !== undefined ? { cert: yield* readPem("tls-cert", cert), key: yield* readPem("tls-key", key) } : undefined
    if (listen._tag === "Tcp" && !listen.loopback && tls === undefined && !options.insecureRemote) {
      return yield* new UsageError({
        line: `--listen ${options.listen} is not a loopback address: give --tls-cert and --tls-key, or --insecure-remote to send the token in clear`
      })
    }
    if (options.answerTimeout <= 0 || options.shutdownGrace < 0) {
      return yield* new UsageError({ line: "--answer-timeout must be positive and --shutdown-grace not negative" })
    }
    const maxRequestFlag = yield* maxRequestBytesFlag(options)
    const telemetry = yield* Telemetry.configFrom(Option.getOrUndefined(options.otlp), process.env).pipe(
      Effect.mapError((e) => new UsageError({ line: e.message }))
    )
    // every flag is checked before the state dir is touched
    const cluster = yield* clusterOptions(options)
    const { file, settings } = yield* toSettingsAndFile(options)
    const maxRequestBytes = maxRequestFlag ?? file.serve?.maxRequestBytes ?? ConfigSchema.Defaults.serve.maxRequestBytes
    yield* ServeFiles.lock(settings.stateDir)
    const token = yield* ServeFiles.ensureToken(settings.stateDir)
    const version = packageVersion()
    let clients = 0

    const interactions = Interactions.layer({ answerTimeout: `${options.answerTimeout} seconds` })
    const shared = EventHub.layer
    // every run of the session work registry, whoever sent its message, is published to the clients (HubObserver)
    const harness = Supervision.layer.pipe(
      Layer.provideMerge(
        Live.layer(settings, undefined, { probeCodex: false }).pipe(
          Layer.provide(Layer.mergeAll(EventHub.deliveryLayer, Interactions.portsLayer, HubObserver.layer).pipe(Layer.provide(interactions)))
        )
      )
    )
    const info = { version, stateDir: settings.stateDir, startedAt: new Date(), clients: () => clients }
    const services = cluster === undefined
      ? Handlers.layer(info).pipe(
        Layer.provideMerge(harness),
        Layer.provideMerge(interactions),
        Layer.provideMerge(shared),
        Layer.provideMerge(ControlServer.serialization)
      )
      // a runner: the sessions live in PostgreSQL and run on whichever runner owns them
      : Handlers.layer(info).pipe(
        Layer.provide(ClusterRouter.layer),
        Layer.provideMerge(ClusterRunner.layer(settings, { ...cluster, drainGrace: `${options.shutdownGrace} seconds`, answerTimeout: `${options.answerTimeout} seconds` })),
        Layer.provideMerge(ControlServer.serialization)
      )
    let listener: http.Server | undefined
    const evaluate = (): http.Server =>
      // an https.Server takes the same requests and upgrades; NodeHttpServer types its argument as http.Server
      (listener = tls === undefined ? http.createServer() : (https.createServer(tls) as unknown as http.Server))
    const listenOptions = listen._tag === "Unix" ? { path: listen.path } : { host: listen.host, port: listen.port }
    if (listen._tag === "Unix") yield* clearSocketPath(listen.path)

    yield* Effect.scoped(Effect.gen(function* () {
      const context = yield* Layer.build(Layer.mergeAll(services, NodeHttpServer.layer(evaluate, listenOptions)))
      const address = yield* HttpServer.addressWith(Effect.succeed).pipe(Effect.provide(context))
      const hostPort = address._tag === "TcpAddress"
        ? `${address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname}:${address.port}`
        : undefined
      const hosts = hostPort === undefined || listen._tag !== "Tcp" || !listen.loopback
        ? []
        : [hostPort, `localhost:${(address as HttpServer.TcpAddress).port}`, `127.0.0.1:${(address as HttpServer.TcpAddress).port}`, `[::1]:${(address as HttpServer.TcpAddress).port}`]
      const app = yield* ControlServer.makeApp({
        token,
        ui: loadUi(),
        hosts,
        onClient: (delta) => void (clients += delta),
        maxRequestBytes,
        tracing: telemetry !== undefined
      }).pipe(Effect.provide(context))
      yield* WebSocketFrameBound.bound(maxRequestBytes)
      // the platform's span per HTTP request likewise, only for a tracer that exports it
      yield* HttpServer.serveEffect()(app).pipe(
        Effect.provide(context),
        telemetry === undefined ? HttpMiddleware.withTracerDisabledWhenEffect(() => true) : identity
      )
      const scheme = tls === undefined ? "" : "s"
      const url = hostPort === undefined ? `ws+unix:${listen._tag === "Unix" ? listen.path : ""}:/rpc` : `ws${scheme}://${hostPort}/rpc`
      const ui = hostPort === undefined ? undefined : `http${scheme}://${hostPort}/`
      yield* ServeFiles.announce(settings.stateDir, { pid: process.pid, url, ...(ui !== undefined ? { ui } : {}), started_at: new Date().toISOString(), version })
      // registered last, so it runs first: turns drain while the listener still carries their events
      const work = yield* Effect.provide(SessionWork, context)
      const hub = yield* Effect.provide(EventHub.EventHub, context)
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          const { interrupted } = yield* work.drain(`${options.shutdownGrace} seconds`, "10 seconds")
          // the drained turns' streams end with their terminal events: let their clients read them before the
          // listener closes the connections (bounded: a client that stopped reading is not waited for long)
          yield* hub.delivered.pipe(Effect.interruptible, Effect.timeoutOption("3 seconds"))
          yield* Console.error(`codex-harness serve: stopping${interrupted > 0 ? ` (${interrupted} running turn${interrupted === 1 ? "" : "s"} interrupted)` : ""}`)
          // what is still open now carries nothing (a client that sent half a request and stopped): the listener's close
          // waits for every connection, so without this one such client held the serve's exit for good
          yield* Effect.sync(() => listener?.closeAllConnections())
        }))
      yield* Console.error(`codex-harness serve: listening on ${url} for ${settings.stateDir}`)
      if (ui !== undefined) {
        // the token goes in the fragment (never sent to the server, never in a log) and only to a person's terminal
        yield* Console.error(
          process.stderr.isTTY === true
            ? `control UI: ${ui}#token=${token}`
            : `control UI: ${ui} (its token is in ${ServeFiles.files(settings.stateDir).token})`
        )
      }
      return yield* Effect.never
    })).pipe(
      // outermost, so every fiber of the service (the listener's, each call's, each turn's) reports to the collector;
      // the CLI makes no spans otherwise (main.ts), so they are turned back on for it
      Effect.provide(telemetry === undefined ? Layer.empty : Telemetry.layer({ ...telemetry, serviceVersion: version })),
      telemetry === undefined ? identity : Effect.withTracerEnabled(true),
      // @effect/platform puts every request header on the request's span; the WebSocket subprotocol carries the bearer
      // token (ControlClient), so it is redacted like Authorization, for every fiber the listener forks
      Effect.locallyWith(Headers.currentRedactedNames, (names) => [...names, "sec-websocket-protocol"])
    )
  }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer))
