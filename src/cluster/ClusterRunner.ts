// What a `serve --cluster postgres://...` process is: a runner of @effect/cluster 0.60.2 over PostgreSQL (no shard
// manager: runners share the shards through advisory locks, CLUSTER-NOTES (a)) that hosts Session entities with its own
// harness (its own app-server pool, the PostgreSQL session store, the control layers' Delivery and Interactions), and a
// client of the other runners for the sessions it does not host.
//
// Why it is composed by hand instead of with NodeClusterSocket.layer: that layer reads its ShardingConfig from the
// environment even when options are given (HOST, PORT, SHARDS_PER_GROUP, ...; PORT=abc fails it, an HTTP service's PORT
// becomes the runner's port: trap 3). This is the same composition (SocketRunner over a Node socket server and client
// protocol, ping health, msgpack, SQL message and runner storage) with ShardingConfig.layer: the runner's address and
// every setting come from the options (`--runner-listen HOST:PORT`), never from the environment. Its runner storage
// (the runners table and the shard locks) is the harness's own PgShardLocks under LockRenewal, so a database hiccup
// shorter than the fence does not drop the runner's shards, and a runner that cannot renew them fences itself
// (Fencing: its turns stop before the database lets another runner take its sessions).
//
// The sharding config is the same on every runner and client (trap 4): 300 shards per group and the timings of
// ClusterDatabase.fastTimings, with RunnerLiveness marking a runner whose database connection is gone unhealthy at once.
//
// Graceful drain (SIGTERM, or the layer's scope closing): running turns end first, then the shards are handed off. It
// has to happen in that order, before @effect/cluster's own shutdown: once a runner unregisters, its shards leave its
// assignment at once while its entities are still finishing, and from then on the acknowledgements a streamed reply
// waits for after every chunk are refused (EntityNotAssignedToRunner), so a Turn's stream stalls until
// entityTerminationTimeout and the client sees it interrupted (seen here with 0.60.2). So a finalizer that runs before
// the entity layer closes drains the session work registry: new turns are refused with `shutting_down` (the ClusterClient tries them
// again, and they reach the new owner once the shards move), running ones get `drainGrace` to end and are then
// interrupted (their streams say so), and only then does the cluster shut down and release the shard locks.
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as RunnerHealth from "@effect/cluster/RunnerHealth"
import * as Runners from "@effect/cluster/Runners"
import type { Sharding } from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as SocketRunner from "@effect/cluster/SocketRunner"
import * as SqlMessageStorage from "@effect/cluster/SqlMessageStorage"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as NodeSocketServer from "@effect/platform-node/NodeSocketServer"
import * as Socket from "@effect/platform/Socket"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import { Console, Context, Duration, Effect, ExecutionStrategy, Layer, Option, Scope } from "effect"
import type { ClientPoolOptions } from "../appserver/ClientPool.js"
import { NodeTransportLive, type Transport } from "../appserver/Transport.js"
import type { HarnessSettings } from "../config/Settings.js"
import * as HubObserver from "../control/HubObserver.js"
import { SessionWork } from "../harness/SessionWork.js"
import * as EventHub from "../control/EventHub.js"
import * as Interactions from "../control/Interactions.js"
import * as TurnStream from "../control/TurnStream.js"
import * as Composition from "../harness/Composition.js"
import { type HostPort, parseHostPort } from "../platform/hostPort.js"
import * as PgSessionStore from "../session/PgSessionStore.js"
import * as Supervision from "../supervision/layer.js"
import * as ClusterClient from "./ClusterClient.js"
import * as ClusterDatabase from "./ClusterDatabase.js"
import * as ClusterViews from "./ClusterViews.js"
import * as Deliveries from "./Deliveries.js"
import * as Fencing from "./Fencing.js"
import * as LockRenewal from "./LockRenewal.js"
import * as PgShardLocks from "./PgShardLocks.js"
import * as Prewarm from "./Prewarm.js"
import * as Retention from "./Retention.js"
import * as RunnerLiveness from "./RunnerLiveness.js"
import { defaultShardsPerGroup, fastTimings, fenceAfter } from "./ClusterDatabase.js"
import * as SessionEntity from "./SessionEntity.js"
import * as TurnLedger from "./TurnLedger.js"

export { defaultShardsPerGroup, fastTimings } from "./ClusterDatabase.js"

export type { HostPort }

/** `--runner-listen`: HOST:PORT or [V6]:PORT, a port from 1 to 65535 (peers connect to it, so never 0). Pure. */
export const parseRunnerListen = (text: string): HostPort | string => {
  const parsed = parseHostPort(text)
  if (typeof parsed === "string") return parsed
  if (parsed.port < 1) return `port ${parsed.port} is out of range (1-65535: other runners connect to it)`
  return parsed
}

export const addressText = (a: HostPort) => `${a.host}:${a.port}`

/** What every process of one cluster must agree on. */
export interface ClusterOptions {
  /** postgres://USER:PASSWORD@HOST:PORT/DB */
  readonly databaseUrl: string
  /** default 300; the same on every runner and client */
  readonly shardsPerGroup?: number | undefined
  /** over the FAST timings; the same on every runner and client */
  readonly timings?: Partial<ShardingConfig.ShardingConfig["Type"]> | undefined
  readonly client?: ClusterClient.ClusterClientOptions | undefined
  /** the most database connections this process opens (`--database-connections`); default 12 */
  readonly databaseConnections?: number | undefined
}

export interface RunnerOptions extends ClusterOptions {
  /** where this runner listens for its peers (`--runner-listen HOST:PORT`) */
  readonly listen: HostPort
  /** the address peers are told, when it differs from `listen` (listening on 0.0.0.0, say) */
  readonly advertise?: HostPort | undefined
  /** on SIGTERM, how long running turns get before they are interrupted and the shards handed off; default 30 s */
  readonly drainGrace?: Duration.DurationInput | undefined
  /** how long an approval or question waits for a client (serve's --answer-timeout); default 300 s */
  readonly answerTimeout?: Duration.DurationInput | undefined
  /** TurnLedger bounds: waiting for a message another live runner started, and for one this runner runs */
  readonly ownerWait?: Duration.DurationInput | undefined
  readonly localWait?: Duration.DurationInput | undefined
  /** how long ledger rows, processed cluster messages and transcript records behind a snapshot are kept; default 24 h */
  readonly retention?: Duration.DurationInput | undefined
  /** how often the retention job runs (on one runner of the cluster); default 1 minute */
  readonly retentionEvery?: Duration.DurationInput | undefined
}

/** The ShardingConfig of a runner (`runner` given) or of a client-only process. Nothing is read from the environment. */
export const shardingConfig = (
  options: ClusterOptions & { readonly runner?: HostPort | undefined; readonly listen?: HostPort | undefined }
): ShardingConfig.ShardingConfig["Type"] => ({
  ...ShardingConfig.defaults,
  ...fastTimings,
  // @effect/cluster's default encodes and decodes every message to an entity on this same runner, as if it went to
  // another one (a check for its tests): each Turn and each acknowledgement of a turn's streamed events paid for it.
  // Messages between runners are still encoded for real, and the cluster tests run sessions on other runners
  simulateRemoteSerialization: false,
  ...options.timings,
  shardsPerGroup: options.shardsPerGroup ?? defaultShardsPerGroup,
  runnerAddress: options.runner === undefined ? Option.none() : Option.some(RunnerAddress.make(options.runner.host, options.runner.port)),
  runnerListenAddress: options.listen === undefined ? Option.none() : Option.some(RunnerAddress.make(options.listen.host, options.listen.port))
})

/**
 * The runner-to-runner sockets, as NodeClusterSocket's, with Nagle's algorithm off (`noDelay`): with it on, every small
 * request and reply waited for a delayed ACK, about 85 ms per unary message between processes here instead of a few.
 */
const clientProtocol: Layer.Layer<Runners.RpcClientProtocol, never, RpcSerialization.RpcSerialization> = Layer.effect(
  Runners.RpcClientProtocol,
  Effect.gen(function* () {
    const serialization = yield* RpcSerialization.RpcSerialization
    return (address: RunnerAddress.RunnerAddress) =>
      NodeSocket.makeNet({ openTimeout: 1000, timeout: 5500, host: address.host, port: address.port, noDelay: true }).pipe(
        Effect.flatMap((socket) =>
          RpcClient.makeProtocolSocket().pipe(
            Effect.provideService(Socket.Socket, socket),
            Effect.provideService(RpcSerialization.RpcSerialization, serialization)
          )
        ),
        Effect.orDie
      )
  })
)

const socketServer = Layer.unwrapEffect(
  Effect.map(ShardingConfig.ShardingConfig, (config) => {
    const listen = Option.getOrThrow(Option.orElse(config.runnerListenAddress, () => config.runnerAddress))
    return NodeSocketServer.layer({ host: listen.host, port: listen.port, noDelay: true })
  })
)

const storage = (config: ShardingConfig.ShardingConfig["Type"]) =>
  Layer.mergeAll(Layer.orDie(SqlMessageStorage.layer), PgShardLocks.layer).pipe(
    Layer.provideMerge(ShardingConfig.layer(config)),
    Layer.provideMerge(RpcSerialization.layerMsgPack)
  )

/** a runner's storage: the shard-lock storage wrapped so a database hiccup does not drop its shards (LockRenewal) */
const runnerStorage = (config: ShardingConfig.ShardingConfig["Type"], renewal: LockRenewal.LockRenewalOptions) =>
  Layer.mergeAll(Layer.orDie(SqlMessageStorage.layer), LockRenewal.layer(PgShardLocks.layer, renewal)).pipe(
    Layer.provideMerge(ShardingConfig.layer(config)),
    Layer.provideMerge(RpcSerialization.layerMsgPack)
  )

/**
 * Sharding for a runner: NodeClusterSocket.layer({ storage: "sql" }) without its environment reading, and LockRenewal
 * (the fence). Needs SqlClient. Nothing else of its storage goes out (its msgpack RpcSerialization would replace the
 * control API's).
 */
export const runnerClusterLayer = (config: ShardingConfig.ShardingConfig["Type"], renewal?: Partial<LockRenewal.LockRenewalOptions>) => {
  // one instance for both (a layer is built once per reference)
  const stored = runnerStorage(config, {
    runner: Option.match(config.runnerAddress, { onNone: () => "(client)", onSome: (a) => `${a.host}:${a.port}` }),
    tolerance: fenceAfter,
    ...renewal
  })
  return Layer.merge(
    Layer.provide(SocketRunner.layer, [socketServer, clientProtocol]).pipe(
      Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(clientProtocol))),
      Layer.provide(stored)
    ),
    Layer.effect(LockRenewal.LockRenewal, LockRenewal.LockRenewal).pipe(Layer.provide(stored))
  )
}

/** Sharding for a process that only sends messages to runners. Needs SqlClient. */
export const clientClusterLayer = (config: ShardingConfig.ShardingConfig["Type"]) =>
  Layer.provide(SocketRunner.layerClientOnly, clientProtocol).pipe(Layer.provide(storage(config)))

/**
 * The harness of a runner: Live.layer's composition with the PostgreSQL session store in place of the file store. Needs
 * SqlClient and Delivery (and reads the optional ports when given), as Live.layer needs Delivery.
 */
export const harnessLayer = (settings: HarnessSettings, pool?: ClientPoolOptions, store?: PgSessionStore.PgStoreOptions, transport?: Layer.Layer<Transport>) =>
  Composition.layer(settings, pool).pipe(
    // a session stays held (its lock, its working set in memory) as long as its entity stays here without a message
    Layer.provideMerge(PgSessionStore.pgStoreLayer({ heldIdleTimeToLive: SessionEntity.entityIdleTime, ...store })),
    Layer.provideMerge(transport ?? NodeTransportLive),
    Layer.provideMerge(NodeFileSystem.layer)
  )

/** The process's PgClient, with every table in place: the bootstrap runs under its lock before anything else uses it. */
export const databaseLayer = (options: ClusterOptions, config: ShardingConfig.ShardingConfig["Type"], runner: string | undefined) => {
  const connections = options.databaseConnections ?? ClusterDatabase.defaultConnections
  return Layer.effectDiscard(
    ClusterDatabase.bootstrap(config, runner === undefined ? Effect.void : Effect.asVoid(Layer.build(PgSessionStore.pgStoreLayer()))).pipe(
      Effect.zipRight(runner === undefined ? Effect.void : ClusterDatabase.warnWhenShort(connections))
    )
  ).pipe(Layer.provideMerge(ClusterDatabase.pgLayer(options.databaseUrl, runner, connections)))
}

/**
 * Everything a `serve --cluster` process needs, in one layer: the services serve's control handlers use (CodexHarness,
 * SessionStore, SessionWork, supervision, EventHub, Interactions), the cluster (Sharding, its SQL storage),
 * the Session entity registered on this runner, and the ClusterClient the control API sends sessions' messages with.
 */
export const layer = (settings: HarnessSettings, options: RunnerOptions, pool?: ClientPoolOptions, transport?: Layer.Layer<Transport>) => {
  const advertised = options.advertise ?? options.listen
  const runner = addressText(advertised)
  const config = shardingConfig({
    ...options,
    runner: advertised,
    listen: options.advertise === undefined ? undefined : options.listen
  })
  const interactions = Interactions.layer({ answerTimeout: options.answerTimeout ?? Duration.seconds(300) })
  const shared = Layer.mergeAll(EventHub.layer, TurnStream.followScopeLayer, Deliveries.layer())
  const ports = Layer.mergeAll(EventHub.deliveryLayer, Interactions.portsLayer, HubObserver.layer).pipe(Layer.provide(interactions))
  const retention = options.retention ?? Retention.defaultRetention
  const harness = Supervision.layer.pipe(Layer.provideMerge(harnessLayer(settings, pool, { retention }, transport).pipe(Layer.provide(ports))))
  const ledger = TurnLedger.layer({
    address: runner,
    heartbeatExpiry: config.shardLockExpiration,
    ownerWait: options.ownerWait,
    localWait: options.localWait
  })
  // a dead runner's shards move as soon as its database connection is gone, whatever the lock expiry
  // and starts the app-servers its sessions will need while their shards move
  const liveness = Layer.scopedDiscard(
    Effect.flatMap(Prewarm.make(), (onAbsent) =>
      Effect.forkScoped(RunnerLiveness.watch({ self: runner, heartbeatExpiry: config.shardLockExpiration, onAbsent })))
  )
  // a runner that cannot renew its shard locks stops its turns before another runner may take its sessions
  const fencing = Fencing.layer(runner)
  // what waits for an answer here, mirrored for Pending and Answer from any serve
  const views = Layer.scopedDiscard(Effect.forkScoped(ClusterViews.mirrorInteractions(runner)))
  // what every turn writes is kept for `retention`, on one runner of the cluster
  const retentionJob = Layer.scopedDiscard(Effect.forkScoped(Retention.run({ retention, every: options.retentionEvery })))
  // Turns end while the shards are still this runner's: the drain runs before anything of the runner is released, and
  // the streams of the turns it waited for reach their clients (a turn's last events wait for its ledger write) before
  // the cluster shuts down. Not a layer of the composition below: Layer.merge and provideMerge release their parts in
  // parallel, so a drain among them ran beside the cluster's own shutdown (which unregisters the runner at once), and a
  // drained turn's last events had no runner left to carry them (its client waited out its bound, seen under load)
  const drain = (context: Context.Context<SessionWork | Deliveries.Deliveries>) =>
    Context.get(context, SessionWork).drain(options.drainGrace ?? Duration.seconds(30), Duration.seconds(10)).pipe(
      Effect.flatMap(({ interrupted }) =>
        interrupted > 0 ? Effect.logWarning(`cluster runner ${runner}: drained; ${interrupted} running turn(s) interrupted`) : Effect.void
      ),
      Effect.zipRight(Context.get(context, Deliveries.Deliveries).settled(Duration.seconds(10)))
    )
  const parts = fencing.pipe(
    Layer.provideMerge(SessionEntity.layer),
    Layer.provideMerge(ClusterClient.layer(options.client)),
    Layer.provideMerge(ledger),
    Layer.provideMerge(liveness),
    Layer.provideMerge(retentionJob),
    Layer.provideMerge(views),
    Layer.provideMerge(runnerClusterLayer(config)),
    Layer.provideMerge(harness),
    Layer.provideMerge(interactions),
    Layer.provideMerge(shared),
    Layer.provideMerge(databaseLayer(options, config, runner))
  )
  return Layer.scopedContext(
    Effect.gen(function* () {
      // a sequential scope of its own: closed, it drains first (registered last), then releases the runner
      const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      const context = yield* Layer.buildWithScope(parts, scope)
      yield* Scope.addFinalizer(scope, drain(context))
      return context
    })
  )
}

/** A process that sends sessions' messages to the runners and hosts none (`cluster` commands, tests). */
export const clientLayer = (options: ClusterOptions): Layer.Layer<ClusterClient.ClusterClient | Sharding, unknown> => {
  const config = shardingConfig(options)
  return ClusterClient.layer(options.client).pipe(
    Layer.provideMerge(clientClusterLayer(config)),
    Layer.provide(databaseLayer(options, config, undefined))
  )
}

/**
 * A runner as a whole process (a child process in tests; `serve --cluster` uses `layer` beside its control API): joins,
 * says so on stderr in one line, and runs until interrupted (SIGTERM into NodeRuntime.runMain), when it drains.
 */
export const run = (settings: HarnessSettings, options: RunnerOptions) =>
  Effect.scoped(Effect.gen(function* () {
    const started = Date.now()
    const runner = addressText(options.advertise ?? options.listen)
    // registered before the layer, so it runs after the layer's finalizers: once drained and gone from the cluster
    yield* Effect.addFinalizer(() => Console.error(`codex-harness cluster runner: ${runner} drained and left the cluster`))
    yield* Layer.build(layer(settings, options))
    yield* Console.error(`codex-harness cluster runner: ${runner} joined in ${Date.now() - started} ms`)
    return yield* Effect.never
  }))
