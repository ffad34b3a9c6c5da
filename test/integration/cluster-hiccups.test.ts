// Issue 29, item 3: a cluster rides out database hiccups shorter than its lock expiry. Three runners as processes
// (`serve --cluster`, each its own state dir and CODEX_HOME), one throwaway PostgreSQL, the scripted model in this
// process. In each case 12 sessions have a turn running (its model request waits on a gate this test holds), spread
// over the runners; then the fault; then the test waits for its receipt that every runner has renewed its shard locks
// twice since (so a runner that was going to give its shards up over the fault has done so), opens the gate, and every
// turn must complete with its own reply, its client told `turn.completed` and the ledger `completed`, and no runner may
// have given its shards up:
// - [stall 2 s]   every PostgreSQL process stopped (SIGSTOP) for 2 s, then continued;
// - [stall 6 s]   the same for 6 s, twice the 3 s bound of one lock refresh;
// - [restart]     PostgreSQL stopped (as a crash: pg_ctl -m immediate) and started again on the same port;
// - [busy runner] one runner's process stopped for 6 s (a machine so loaded its event loop does not run), then continued.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import * as ControlClient from "../../src/control/ControlClient.js"
import { make as makeModel, reply, type ScriptedModel } from "../../src/testing/ScriptedModel.js"
import { killEverything, type Runner, startRunner, tempRoot } from "../support/cluster.js"
import {
  connect, gate, ledger, mirrored, owners, renewedTwice, requestWith, ruleFor, type Sent, sendVia, terminal, transcript, until
} from "../support/clusterTurns.js"
import { leftBehind } from "../support/harness.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()
const sessions = Array.from({ length: 12 }, (_, i) => `h-s${String(i).padStart(2, "0")}`)

interface Env {
  readonly scope: Scope.CloseableScope
  readonly model: ScriptedModel
  readonly database: string
  readonly runners: Array<Runner>
  readonly clients: Array<ControlClient.Client>
}
let env: Env | undefined
const e = () => env ?? (() => { throw new Error("the cluster did not start") })()
const count = new Map<string, number>()
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const db = () => e().database.replace(/^.*\//, "")

const nextMarker = (session: string) => {
  const n = (count.get(session) ?? 0) + 1
  count.set(session, n)
  return `msg[${session}.${n}]`
}

/** the shards are held by all three runners (a runner that dropped them takes a few seconds to take them again) */
const settled = () => until("all 300 shards held by the three runners", Effect.map(
  pg().psql(`SELECT count(DISTINCT l.objid), count(DISTINCT a.application_name) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid BETWEEN 1000001 AND 1000300`, db()),
  (out) => (out.trim() === "300|3" ? true : undefined)
), 120_000)

const stderrMarks = () => e().runners.map((r) => r.stderr().length)
/** what the runners said on stderr since `marks` about their shards */
const droppedSince = (marks: ReadonlyArray<number>) =>
  e().runners.flatMap((r, i) =>
    r.stderr().slice(marks[i]!).split("\n").filter((l) => /Shard lock storage is unhealthy|fenced|gave up its shards/.test(l)).map((l) => `${r.name}: ${l.slice(0, 300)}`))

/**
 * 12 sessions with a turn running (held at the model), `fault`, then the receipt that every runner renewed its locks
 * twice, then the gate opens: every turn completes with its reply, the client and the ledger say so.
 */
const rideOut = (name: string, fault: Effect.Effect<void, unknown>) =>
  Effect.gen(function* () {
    const held = yield* gate
    const marks = stderrMarks()
    // the ledger rows of earlier cases are theirs to judge: one case's failure is not counted again in the next
    const earlier = new Set((yield* ledger(pg(), db())).map((r) => r.message))
    const markers = sessions.map(nextMarker)
    for (const m of markers) yield* ruleFor(e().model, m, held)
    const turns = yield* Effect.forEach(sessions, (s, i) => sendVia(e().clients[i % 3]!, s, markers[i]!), { concurrency: "unbounded" }).pipe(Effect.fork)
    yield* until(`${name}: all 12 turns at the model`, Effect.map(Effect.forEach(markers, (m) => requestWith(e().model, m)), (rs) => rs.every((r) => r !== undefined) ? true : undefined))
    const hosted = yield* owners(pg(), db())
    const t0 = Date.now()
    yield* fault
    const faultMs = Date.now() - t0
    yield* renewedTwice(pg(), db(), e().runners.map((r) => r.address), name)
    yield* held.open
    const sent: ReadonlyArray<Sent> = yield* Fiber.join(turns)
    const outcomes = sent.map((s, i) =>
      s._tag === "Failure"
        ? `${markers[i]}: failure ${s.failure.code}: ${s.failure.message}`
        : terminal(s.events).map((t) => t.type === "turn.completed" ? `completed ${t.final_text}` : `failed (${t.status}) ${t.error}`).join("; "))
    console.log(`cluster hiccups [${name}]: fault took ${seconds(faultMs)}; turns per runner: ` +
      e().runners.map((r) => `${r.name} ${sessions.filter((s) => hosted.get(s) === r.address).length}`).join(", ") +
      `; outcomes: ${outcomes.filter((o) => o.startsWith("completed")).length} completed of 12` +
      outcomes.filter((o) => !o.startsWith("completed")).map((o) => `\n  ${o}`).join(""))
    expect(outcomes, name).toEqual(markers.map((m) => `completed re ${m}`))
    const recorded = (yield* ledger(pg(), db())).filter((r) => !earlier.has(r.message))
    for (const m of markers) {
      expect(recorded.filter((r) => r.outcome.includes(`re ${m}`)).map((r) => r.status), m).toEqual(["completed"])
    }
    expect(recorded.filter((r) => r.status !== "completed"), "ledger rows not completed").toEqual([])
    // the mirror agrees: each prompt once, each reply once
    const records = yield* transcript(pg(), db())
    expect(markers.map((m) => ({ m, ...mirrored(records, m) })), "the mirror").toEqual(markers.map((m) => ({ m, prompts: 1, replies: 1 })))
    expect(droppedSince(marks), "runners that gave their shards up").toEqual([])
    yield* settled()
  })

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  const started = Date.now()
  env = await Effect.runPromise(Effect.gen(function* () {
    const model = yield* makeModel({ fallback: reply.text("unscripted") })
    const root = yield* tempRoot()
    const database = yield* pg().createDatabase("hiccups")
    const runners: Array<Runner> = []
    process.once("exit", () => killEverything(runners))
    for (const name of ["A", "B", "C"]) runners.push(yield* startRunner({ name, database, providerUrl: model.url, root }))
    const clients = yield* Effect.forEach(runners, (r) => connect(r, scope))
    return { scope, model, database, runners, clients } satisfies Env
  }).pipe(Scope.extend(scope)))
  await Effect.runPromise(settled())
  // every session made, with one completed turn, before any fault
  await Effect.runPromise(Effect.forEach(sessions, (s, i) =>
    Effect.gen(function* () {
      const m = nextMarker(s)
      yield* ruleFor(e().model, m)
      const sent = yield* sendVia(e().clients[i % 3]!, s, m)
      if (sent._tag === "Failure" || terminal(sent.events)[0]?.type !== "turn.completed") throw new Error(`${m}: ${JSON.stringify(sent)}`)
    }), { concurrency: 4 }))
  console.log(`cluster hiccups: 3 runners up, 12 sessions made in ${seconds(Date.now() - started)}`)
}, 240_000)

afterAll(async () => {
  if (env === undefined) return
  killEverything(env.runners)
  await Effect.runPromise(Scope.close(env.scope, Exit.void))
}, 60_000)

describe("a cluster rides out database hiccups shorter than its lock expiry", () => {
  it.live("[stall 2 s] every PostgreSQL process stopped for 2 s: every running turn completes, no runner gives its shards up", () =>
    rideOut("stall 2 s", pg().stall(2_000)), 300_000)

  it.live("[stall 6 s] stopped for 6 s, twice one refresh's bound: every running turn completes, no runner gives its shards up", () =>
    rideOut("stall 6 s", pg().stall(6_000)), 300_000)

  it.live("[restart] PostgreSQL restarted on the same port: every running turn completes, no runner gives its shards up", () =>
    rideOut("restart", pg().restart("immediate")), 300_000)

  it.live("[busy runner] a runner's process stopped for 6 s: every running turn completes, no runner gives its shards up", () =>
    rideOut("busy runner", Effect.acquireUseRelease(
      Effect.sync(() => process.kill(e().runners[0]!.child.pid!, "SIGSTOP")),
      () => Effect.sleep("6 seconds"),
      () => Effect.sync(() => process.kill(e().runners[0]!.child.pid!, "SIGCONT"))
    )), 300_000)

  it.live("the runners stop on SIGTERM and leave nothing behind", () =>
    Effect.gen(function* () {
      for (const r of e().runners) r.child.kill("SIGTERM")
      for (const r of e().runners) expect((yield* r.exited.pipe(Effect.timeout("60 seconds"))).signal, r.stderr()).toBeNull()
      for (const r of e().runners) expect(yield* leftBehind(r.stateDir), r.name).toEqual([])
    }), 120_000)
})
