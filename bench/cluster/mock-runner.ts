// A cluster runner whose sessions run on the in-memory MockAppServer (layers/internal/Test's app-server layer): the cluster layer
// (sharding, entities, the ledger, the PostgreSQL store, the control layers) is what bench/cluster/scale.ts measures, at
// 20 runners on one 2-core machine, where 20 real app-servers would measure Codex instead. A bench entry, never a
// production default: `serve --cluster` always runs the real app-server.
//
//   node dist/bench/cluster/mock-runner.js '{"databaseUrl":"postgres://USER@HOST:PORT/DB","listen":"127.0.0.1:PORT","stateDir":"/tmp/x"}'
//   (optional: "retentionMs" and "retentionEveryMs", the retention job's period and pace, for bench/cluster/retention.ts;
//   "databaseConnections", the pool bound, for the scale part's --scale-connections)
//   (the password in $PGPASSWORD; SIGTERM drains and leaves, as a runner does)
import { NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as TestLayer from "../../layers/internal/Test.js"
import * as ClusterRunner from "../../src/cluster/ClusterRunner.js"
import * as MockAppServer from "../../src/testing/MockAppServer.js"

interface MockRunnerConfig {
  readonly databaseUrl: string
  readonly listen: string
  readonly stateDir: string
  /** what the runner keeps (`serve --retention`), ms; default a day */
  readonly retentionMs?: number
  /** how often its retention job runs, ms; default a minute */
  readonly retentionEveryMs?: number
  /** the pool bound (`serve --database-connections`); default 12 */
  readonly databaseConnections?: number
}

const config = JSON.parse(process.argv[2] ?? "{}") as MockRunnerConfig
const url = new URL(config.databaseUrl)
if (process.env.PGPASSWORD !== undefined) url.password = encodeURIComponent(process.env.PGPASSWORD)
delete process.env.PGPASSWORD
const listen = ClusterRunner.parseRunnerListen(config.listen)
if (typeof listen === "string") throw new Error(`listen: ${listen}`)
fs.mkdirSync(config.stateDir, { recursive: true })

const settings = { ...TestLayer.settings, stateDir: config.stateDir, cwd: config.stateDir }

const program = Effect.scoped(Effect.gen(function* () {
  const started = Date.now()
  yield* Effect.addFinalizer(() => Console.error(`mock runner ${config.listen}: drained and left the cluster`))
  const retention = {
    ...(config.retentionMs === undefined ? {} : { retention: config.retentionMs }),
    ...(config.retentionEveryMs === undefined ? {} : { retentionEvery: config.retentionEveryMs }),
    ...(config.databaseConnections === undefined ? {} : { databaseConnections: config.databaseConnections })
  }
  yield* Layer.build(ClusterRunner.layer(settings, { databaseUrl: url.toString(), listen, ...retention }, undefined, MockAppServer.layer()))
  yield* Console.error(`mock runner ${config.listen}: joined in ${Date.now() - started} ms`)
  return yield* Effect.never
}))

NodeRuntime.runMain(program)
