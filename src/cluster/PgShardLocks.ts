// The cluster's RunnerStorage on PostgreSQL, written for this harness instead of @effect/cluster's SqlRunnerStorage:
// the same tables (cluster_runners, which the bootstrap creates through SqlRunnerStorage) and the same advisory lock
// numbers (1_000_000 * (group index + 1) + shard, so `cluster status` and every runner agree), with a lock connection
// that comes back by itself after a PostgreSQL restart.
//
// Why: SqlRunnerStorage 0.60.2 holds its locks on a connection it rebuilds after an error, and a rebuild that fails (the
// database still starting up) leaves the connection half-made: every later lock operation waits for it until one times
// out (3 s) and starts the next rebuild. After a restart of about a second a runner took 9-12 s to renew its locks, which
// LockRenewal rightly took for a runner that had lost its database (seen in test/integration/cluster-hiccups.test.ts).
// Here an operation that fails on the lock connection checks it (`SELECT 1`, bounded); a connection that is gone is let
// go of at once (with its locks cleared when it is still reachable), and the next operation reserves a new one and takes
// the locks again. A connection that only stopped answering (a stall) is kept: its operations complete when the server
// resumes. Operations are never interrupted mid-statement: a caller that stops waiting leaves them to finish in the
// background, so a lock taken by an abandoned `pg_try_advisory_lock` is found in pg_locks by the next acquire.
//
// A process that only sends messages (a client) never reserves a lock connection: only lock operations do.
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as ShardId from "@effect/cluster/ShardId"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import * as ClusterError from "@effect/cluster/ClusterError"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import { Deferred, Duration, Effect, ExecutionStrategy, Exit, Fiber, Layer, Scope } from "effect"

interface LockConnection {
  readonly conn: Connection
  readonly pid: number
  /** the backend's start, so a pid PostgreSQL gave to another backend since (after a restart) is never terminated */
  readonly started: string
  readonly scope: Scope.CloseableScope
}

/** the advisory lock number of every shard, as @effect/cluster's SqlRunnerStorage numbers them */
export const lockNumbers = (config: ShardingConfig.ShardingConfig["Type"]): ReadonlyMap<string, number> => {
  const numbers = new Map<string, number>()
  Array.from(ShardingConfig.shardGroupConfig(config).available).forEach((group, i) => {
    for (let shard = 1; shard <= config.shardsPerGroup; shard++) numbers.set(ShardId.make(group, shard).toString(), (i + 1) * 1_000_000 + shard)
  })
  return numbers
}

const refail = <A, R>(effect: Effect.Effect<A, unknown, R>) => ClusterError.PersistenceError.refail(effect)

export const make = Effect.gen(function* () {
  const config = yield* ShardingConfig.ShardingConfig
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const layerScope = yield* Effect.scope
  const numbers = lockNumbers(config)
  const shardOf = new Map([...numbers].map(([shard, n]) => [n, shard] as const))
  const expiresSeconds = Math.ceil(Duration.toSeconds(config.shardLockExpiration))
  const expiresAt = sql.literal(`NOW() - INTERVAL '${expiresSeconds} seconds'`)

  // ---- the lock connection: reserved by the first lock operation, replaced when it is gone, one operation at a time
  let current: LockConnection | undefined
  const gate = yield* Effect.makeSemaphore(1)

  const connect = Effect.gen(function* () {
    const scope = yield* Scope.fork(layerScope, ExecutionStrategy.sequential)
    return yield* Effect.gen(function* () {
      const conn = yield* sql.reserve.pipe(Scope.extend(scope))
      const rows = yield* conn.executeValues("SELECT pid, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()", [])
      return { conn, pid: Number(rows[0]![0]), started: String(rows[0]![1]), scope } satisfies LockConnection
    }).pipe(Effect.tapErrorCause(() => Scope.close(scope, Exit.void)))
  })

  /** let go of a connection that is gone; one that still answers gives its locks up first, never to the pool with them */
  const drop = (lc: LockConnection) =>
    Effect.gen(function* () {
      if (current === lc) current = undefined
      const cleared = yield* lc.conn.executeRaw("SELECT pg_advisory_unlock_all()", []).pipe(
        Effect.timeout("1 second"),
        Effect.isSuccess
      )
      if (!cleared) {
        yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ${lc.pid} AND backend_start::text = ${lc.started}`.pipe(
          Effect.timeout("2 seconds"),
          Effect.ignore
        )
      }
      yield* Scope.close(lc.scope, Exit.void)
    })

  /** after a failed operation: is the connection still there? (a stall answers late, and is kept) */
  const check = (lc: LockConnection) =>
    lc.conn.executeRaw("SELECT 1", []).pipe(
      Effect.timeout("2 seconds"),
      Effect.catchTag("TimeoutException", () => Effect.void),
      Effect.catchAll(() => drop(lc))
    )

  /**
   * `f` on the lock connection, under the gate, on a fiber of the layer's: a caller that stops waiting (the cluster's own
   * timeouts) never interrupts a statement half-way; the operation finishes and the next one finds its effects.
   */
  const onLockConnection = <A>(f: (lc: LockConnection) => Effect.Effect<A, SqlError>): Effect.Effect<A, ClusterError.PersistenceError> =>
    gate.withPermits(1)(
      Effect.suspend(() => (current !== undefined ? Effect.succeed(current) : Effect.tap(connect, (lc) => (current = lc)))).pipe(
        Effect.flatMap((lc) => f(lc).pipe(Effect.tapError(() => check(lc))))
      )
    ).pipe(
      Effect.forkIn(layerScope),
      Effect.flatMap(Fiber.join),
      refail
    )

  const heldBy = (lc: LockConnection) =>
    Effect.map(
      lc.conn.executeValues(`SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 0 AND pid = ${lc.pid}`, []),
      (rows) => new Set(rows.map((r) => Number(r[0])))
    )

  /** the shards asked for that this connection holds, taking the free ones (`all`: and every other shard it holds) */
  const take = (lc: LockConnection, shardIds: ReadonlyArray<string>, all = false) =>
    Effect.gen(function* () {
      const held = yield* heldBy(lc)
      const wanted = shardIds.flatMap((shard) => {
        const n = numbers.get(shard)
        return n === undefined ? [] : [n]
      })
      const missing = wanted.filter((n) => !held.has(n))
      if (missing.length > 0) {
        const rows = yield* lc.conn.executeValues(`SELECT ${missing.map((n) => `pg_try_advisory_lock(${n})`).join(", ")}`, [])
        missing.forEach((n, i) => rows[0]![i] === true && held.add(n))
      }
      const shards = wanted.filter((n) => held.has(n)).map((n) => shardOf.get(n)!)
      if (all) {
        const asked = new Set(wanted)
        for (const n of held) if (!asked.has(n) && shardOf.has(n)) shards.push(shardOf.get(n)!)
      }
      return shards
    })

  // ---- releases, batched
  let releases: Array<{ readonly n: number; readonly done: Deferred.Deferred<void, ClusterError.PersistenceError> }> = []
  let releasing = false
  /** unlocks each lock until this connection holds it no more (at most five rounds, each one statement) */
  const unlock = (lc: LockConnection, locks: ReadonlyArray<number>) =>
    Effect.gen(function* () {
      let left = locks
      for (let round = 0; round < 5 && left.length > 0; round++) {
        // CASE evaluates its condition first: the lock table is looked at after the unlock
        const rows = yield* lc.conn.executeValues(`SELECT u.n FROM unnest(ARRAY[${left.join(",")}]::bigint[]) AS u(n)
          WHERE CASE WHEN pg_advisory_unlock(u.n) THEN EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted
            AND l.classid = 0 AND l.objid::bigint = u.n AND l.pid = ${lc.pid}) ELSE false END`, [])
        left = rows.map((r) => Number(r[0]))
      }
    })
  const drainReleases: Effect.Effect<void> = Effect.suspend(() => {
    const batch = releases
    releases = []
    if (batch.length === 0) {
      releasing = false
      return Effect.void
    }
    return onLockConnection((lc) => unlock(lc, batch.map((r) => r.n))).pipe(
      Effect.exit,
      Effect.flatMap((exit) => Effect.forEach(batch, (r) => Deferred.done(r.done, exit), { discard: true })),
      Effect.zipRight(drainReleases)
    )
  })

  const encoded: RunnerStorage.Encoded = {
    getRunners: sql`SELECT runner, healthy FROM cluster_runners WHERE last_heartbeat > ${expiresAt}`.values.pipe(
      Effect.map((rows) => rows.map(([runner, healthy]) => [String(runner), Boolean(healthy)] as const)),
      refail
    ),
    register: (address, runner, healthy) =>
      sql`INSERT INTO cluster_runners (address, runner, last_heartbeat, healthy) VALUES (${address}, ${runner}, NOW(), ${healthy})
        ON CONFLICT (address) DO UPDATE SET runner = EXCLUDED.runner, last_heartbeat = EXCLUDED.last_heartbeat, healthy = EXCLUDED.healthy
        RETURNING machine_id`.values.pipe(Effect.map((rows) => Number(rows[0]![0])), refail),
    unregister: (address) =>
      sql`DELETE FROM cluster_runners WHERE address = ${address} OR last_heartbeat < ${expiresAt}`.pipe(Effect.asVoid, refail),
    setRunnerHealth: (address, healthy) =>
      sql`UPDATE cluster_runners SET healthy = ${healthy} WHERE address = ${address}`.pipe(Effect.asVoid, refail),
    acquire: (_address, shardIds) => onLockConnection((lc) => take(lc, shardIds)),
    // the heartbeat and the locks on the same connection, as SqlRunnerStorage: a renewed heartbeat means held locks.
    // The answer also names every other shard this connection holds (an operation that finished after its caller had
    // stopped waiting, a refresh that took a shard again after it was released): the cluster releases a shard a refresh
    // returns that is not assigned to it, where a lock nobody asks about would be held for as long as the connection lives
    refresh: (address, shardIds) =>
      onLockConnection((lc) =>
        lc.conn.executeRaw("UPDATE cluster_runners SET last_heartbeat = NOW() WHERE address = $1", [address]).pipe(
          Effect.zipRight(take(lc, shardIds, true))
        )
      ),
    // session-level advisory locks stack (though `take` never takes one twice): unlocked until this connection holds
    // it no more. Releases asked for together go in one statement: the lock connection does one operation at a time,
    // and a runner giving up half its shards at once (a runner joined or came back) made its refresh wait behind one
    // operation per shard, long enough under load to fence it (cluster.test.ts [rebalance], the chaos test)
    release: (_address, shardId) =>
      Effect.gen(function* () {
        const n = numbers.get(shardId)
        // nothing is held without a lock connection
        if (n === undefined || current === undefined) return
        const done = yield* Deferred.make<void, ClusterError.PersistenceError>()
        releases.push({ n, done })
        if (!releasing) {
          releasing = true
          yield* Effect.forkIn(drainReleases, layerScope)
        }
        return yield* Deferred.await(done)
      }),
    releaseAll: () =>
      Effect.suspend(() =>
        current === undefined ? Effect.void : onLockConnection((lc) => Effect.asVoid(lc.conn.executeRaw("SELECT pg_advisory_unlock_all()", [])))
      )
  }

  // at the end, the locks go before the connection goes back to the pool
  yield* Effect.addFinalizer(() => Effect.suspend(() => (current === undefined ? Effect.void : drop(current))))
  return RunnerStorage.makeEncoded(encoded)
})

/** RunnerStorage over the process's SqlClient; the tables must exist (ClusterDatabase.bootstrap) */
export const layer: Layer.Layer<RunnerStorage.RunnerStorage, never, SqlClient.SqlClient | ShardingConfig.ShardingConfig> = Layer.scoped(
  RunnerStorage.RunnerStorage,
  make
)
