// Issue 29, item 5: how long a session waits when the runner hosting it dies. Three runners (`serve --cluster`, each
// its own state dir and CODEX_HOME) on one throwaway PostgreSQL, an instant ScriptedModel in this process, 30 sessions
// with a turn each. Then KILLS times: a session hosted on runner X (harness_session_owners) is picked, X's process group
// and its app-servers' are killed with SIGKILL (the machine dies), and at once the session's next message is sent
// through another runner's serve; the failover time is from the kill to that message's turn.completed. X is then
// started again (a new state dir; the dead one's CODEX_HOME stays, as shared storage would), the next kill waits until
// all 300 shards are held by the three again, and every session gets a message (each runner hosts some again). Prints each kill's time, split into the kill to `session.selected`
// (the shard has a new owner and its entity answers) and the rest (the turn on the new owner: an app-server for the
// session's CODEX_HOME, the thread resumed, the model), then p50 and p99 (nearest rank) and the load average.
//
// A turn between kills (placing sessions) that fails is sent again and counted (see `placing`); a moved session's message that fails is printed and counted, and left out of the figures.
//
// Build and run: npm run build && node dist/bench/cluster-failover.js [--kills 10]
import { Effect, ExecutionStrategy, Exit, Schedule, Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import type * as ControlClient from "../src/control/ControlClient.js"
import { make as makeModel, reply } from "../src/testing/ScriptedModel.js"
import { killEverything, killMachine, type Runner, startRunner, tempRoot } from "../test/support/cluster.js"
import { connect, owners, ruleFor, until } from "../test/support/clusterTurns.js"
import { leftBehind } from "../test/support/harness.js"
import { startPostgres } from "../test/support/postgres.js"
import { percentile } from "./cluster/load.js"

const kills = (() => {
  const at = process.argv.indexOf("--kills")
  const n = at < 0 ? 10 : Number(process.argv[at + 1])
  if (!Number.isInteger(n) || n < 1) {
    console.error("cluster failover bench: --kills wants a whole number of at least 1\nusage: node dist/bench/cluster-failover.js [--kills 10]")
    process.exit(2)
  }
  return n
})()

const SESSIONS = 30
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`

interface Sample {
  readonly victim: string
  readonly session: string
  /** from the kill: the session's entity answered (session.selected), Codex started the turn, it completed */
  readonly selectedMs: number
  readonly startedMs: number
  readonly completedMs: number
}

const program = Effect.gen(function* () {
  const scope = yield* Effect.scope
  const pg = yield* startPostgres({ stopMode: "fast", prefix: "codex-bench-pg-" })
  const database = yield* pg.createDatabase("failover")
  const db = "failover"
  const model = yield* makeModel({ fallback: reply.text("unscripted") })
  const root = yield* tempRoot()
  // the runners, their app-servers and Codex's login shells get an empty HOME, as every bench/figures process does: this
  // machine's rc files (pyenv) cost about a second of CPU per login shell, which is no part of a failover
  const home = path.join(root, "home")
  fs.mkdirSync(home)
  process.env.HOME = home
  const runners: Array<Runner> = []
  // every runner started, the killed ones too: nothing of any may be left at the end
  const everyRunner: Array<Runner> = []
  const clients = new Map<string, ControlClient.Client>()
  const scopes = new Map<string, Scope.CloseableScope>()
  yield* Effect.addFinalizer(() => Effect.sync(() => killEverything(everyRunner)))
  // the runners are detached process groups: a bench stopped by Ctrl-C or SIGTERM (which end this process without its
  // finalizers) kills them on its way out, and their app-servers with them
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      killEverything(everyRunner)
      const postmaster = pg.postmasterPid()
      if (postmaster !== undefined) {
        try {
          // an immediate shutdown of the throwaway server (its data stays in its temp dir)
          process.kill(postmaster, "SIGQUIT")
        } catch {
          // already gone
        }
      }
      process.exit(signal === "SIGINT" ? 130 : 143)
    })
  }

  const settled = until("all 300 shards held by the three live runners", Effect.map(
    pg.psql(`SELECT count(DISTINCT l.objid), count(DISTINCT a.application_name) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid BETWEEN 1000001 AND 1000300`, db),
    (out) => (out.trim() === "300|3" ? true : undefined)
  ), 180_000)
  const start = (name: string) =>
    Effect.gen(function* () {
      const r = yield* startRunner({ name, database, providerUrl: model.url, root })
      everyRunner.push(r)
      const own = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      clients.set(name, yield* connect(r, own))
      scopes.set(name, own)
      return r
    })
  let n = 0
  const turn = (client: ControlClient.Client, session: string) =>
    Effect.gen(function* () {
      const marker = `msg[${session}.${++n}]`
      yield* ruleFor(model, marker)
      let selected = NaN
      let started = NaN
      let completed = NaN
      let failure: string | undefined
      yield* client.StartTurn({ session, prompt: `${marker} please answer` }).pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => {
            if (event.type === "session.selected" && Number.isNaN(selected)) selected = performance.now()
            if (event.type === "turn.started") started = performance.now()
            if (event.type === "turn.completed") completed = performance.now()
            if (event.type === "turn.failed") failure = event.error
          })
        ),
        Effect.catchAll((e) => Effect.sync(() => void (failure = (e as { message?: string }).message ?? String(e)))),
        Effect.timeout("120 seconds")
      )
      if (failure !== undefined || Number.isNaN(completed)) return yield* Effect.fail(new Error(`${marker}: ${failure ?? "no turn.completed"}`))
      return { selected, started, completed }
    })

  // A turn between kills only places sessions: one that fails is sent again (2 s apart, 5 times at most), counted and
  // printed, and then left, instead of ending the bench. Seen at load average 27-36: a runner fenced itself (PostgreSQL did not renew
  // its locks for 9 s), and a moved session's thread/resume was refused "already has an active writer" for some seconds.
  const setupFailures: Array<string> = []
  const placing = (client: ControlClient.Client, session: string) =>
    turn(client, session).pipe(
      Effect.tapError((e) => Effect.sync(() => void setupFailures.push(e.message))),
      Effect.retry({ schedule: Schedule.spaced("2 seconds"), times: 5 }),
      // still failing: the session is left where it is this round (counted above), the bench goes on
      Effect.ignore
    )
  for (const name of ["A", "B", "C"]) runners.push(yield* start(name))
  yield* settled
  const sessions = Array.from({ length: SESSIONS }, (_, i) => `f-s${String(i).padStart(2, "0")}`)
  yield* Effect.forEach(sessions, (s, i) => placing(clients.get(runners[i % 3]!.name)!, s), { concurrency: 6, discard: true })
  console.log(`cluster failover: 3 runners, ${SESSIONS} sessions made; PostgreSQL ${pg.version}; load average ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`)

  const samples: Array<Sample> = []
  const measuredFailures: Array<string> = []
  for (let k = 0; k < kills; k++) {
    const alive = runners.filter((r) => r.alive())
    const hosted = yield* owners(pg, db)
    const victim = alive[k % alive.length]!
    const session = sessions.find((s) => hosted.get(s) === victim.address)
    if (session === undefined) return yield* Effect.fail(new Error(`no session hosted on ${victim.name} (${victim.address})`))
    const via = alive.find((r) => r !== victim)!
    const t0 = performance.now()
    const groups = killMachine(victim)
    const outcome = yield* Effect.either(turn(clients.get(via.name)!, session))
    if (outcome._tag === "Left") {
      // a figure only for a message that was answered; a failed one is printed and counted, never hidden
      measuredFailures.push(outcome.left.message)
      console.log(`  kill ${k + 1}: runner ${victim.name} killed; ${session}'s next message through ${via.name} failed: ${outcome.left.message}`)
    } else {
      const timed = outcome.right
      const sample = { victim: victim.name, session, selectedMs: timed.selected - t0, startedMs: timed.started - t0, completedMs: timed.completed - t0 }
      samples.push(sample)
      console.log(`  kill ${k + 1}: runner ${victim.name} killed (${groups.length} app-server group(s)); ${session} answered through ` +
        `${via.name} ${seconds(sample.completedMs)} after the kill (session.selected at ${seconds(sample.selectedMs)}, ` +
        `turn.started at ${seconds(sample.startedMs)})`)
    }
    // the next kill starts from three live runners holding every shard
    yield* victim.exited.pipe(Effect.timeout("10 seconds"))
    yield* Scope.close(scopes.get(victim.name)!, Exit.void)
    runners[runners.indexOf(victim)] = yield* start(victim.name)
    yield* settled
    // every session answers once more, so each runner hosts some again (a moved session stays where it moved)
    yield* Effect.forEach(sessions, (s, i) => placing(clients.get(runners[i % 3]!.name)!, s), { concurrency: 6, discard: true })
  }
  if (setupFailures.length > 0) {
    console.log(`  ${setupFailures.length} placing turn(s) between kills failed and were sent again: ` +
      setupFailures.filter((x, i, xs) => xs.indexOf(x) === i).slice(0, 3).join(" / "))
  }

  const completed = samples.map((s) => s.completedMs)
  const selected = samples.map((s) => s.selectedMs)
  console.log(`cluster failover over ${samples.length} kills: p50 ${seconds(percentile(completed, 50))}, p99 ${seconds(percentile(completed, 99))} ` +
    `(kill to the moved session's turn.completed); kill to session.selected p50 ${seconds(percentile(selected, 50))}, ` +
    `p99 ${seconds(percentile(selected, 99))}; load average ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}` +
    (measuredFailures.length > 0 ? `; ${measuredFailures.length} of ${kills} moved sessions' messages failed (not in the figures)` : ""))

  for (const r of runners) r.child.kill("SIGTERM")
  for (const r of runners) yield* r.exited.pipe(Effect.timeout("60 seconds"), Effect.ignore)
  const left = (yield* Effect.forEach(everyRunner, (r) => leftBehind(r.stateDir))).flat()
  if (left.length > 0) return yield* Effect.fail(new Error(`processes left behind: ${left.join("; ")}`))
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    console.error(`cluster failover bench: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }
)
