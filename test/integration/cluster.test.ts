// Three cluster runners as separate processes (`serve --cluster`, each its own state dir and CODEX_HOME, the real
// app-server behind each), one throwaway PostgreSQL, one scripted model in this process, and control API clients on the
// runners' serves (issue 19, items 3 and 5). Every message carries a unique marker, answered by a rule of its own
// (`re <marker>`), so "ran once" is: no two model requests have it as their last user message (one, if it completed).
// 1. [spread] 50 sessions, one turn each, land on more than one runner, and every turn completes with its reply;
// 2. [kill -9] a turn hanging at the model on runner X; X's process group and its app-servers' are killed: the stream
//    (on a survivor's serve) ends with a terminal event, never silently; every session answers its next message through
//    a survivor (the moved ones on their own thread, resumed from X's CODEX_HOME, still on this machine); failover timed;
// 3. [drain] SIGTERM of a runner with a turn running on it: the turn completes, the runner exits, its sessions answer
//    on the other;
// 4. [machine gone] a fourth runner joins, the third is killed and its CODEX_HOME deleted: its sessions continue on a
//    fresh thread whose first request carries the earlier conversation, with a notice;
// 5. [rebalance] a fifth runner joins while the fourth lives: every session answers its next message wherever it now
//    runs, on its own thread (all CODEX_HOMEs are on this machine);
// 6. [client gone] the serve a turn came through (not the runner hosting its session) is killed mid-turn: the turn
//    completes and is recorded, and the session's next message is answered (it once stayed refused as busy for good);
// then the survivors get SIGTERM, every message's outcome is in the ledger as its client saw it, nothing is left behind.
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Schedule, Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import type { ControlEvent } from "../../schemas/control.js"
import * as ClusterStatus from "../../src/cluster/ClusterStatus.js"
import * as ControlClient from "../../src/control/ControlClient.js"
import { make as makeModel, reply, type Reply, type ScriptedModel } from "../../src/testing/ScriptedModel.js"
import {
  appServerGroups, clusterStatus, groupsGone, killEverything, killMachine, lastUserText, type Runner, startRunner, tempRoot
} from "../support/cluster.js"
import { leftBehind } from "../support/harness.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()
const sessions = Array.from({ length: 50 }, (_, i) => `c-s${String(i).padStart(2, "0")}`)

interface Env {
  readonly scope: Scope.CloseableScope
  readonly model: ScriptedModel
  readonly database: string
  readonly root: string
  readonly runners: Array<Runner>
  readonly clients: Map<string, { readonly client: ControlClient.Client; readonly scope: Scope.CloseableScope }>
}
let env: Env | undefined
const e = () => env ?? (() => { throw new Error("the cluster did not start") })()
const markers: Array<string> = []
const count = new Map<string, number>()
const thread = new Map<string, string>()
const completed = new Set<string>()
const outcomes = new Map<string, number>()
const outcomeOf = new Map<string, string>()

const terminal = (events: ReadonlyArray<ControlEvent>) => events.filter((x) => x.type === "turn.completed" || x.type === "turn.failed")
const notices = (events: ReadonlyArray<ControlEvent>) =>
  events.flatMap((x) => (x.type === "reply" && x.source === "notice" ? [x.text ?? ""] : []))
/** a moved session's notice that its recorded runtime wins over the new runner's (once per session per process) */
const madeOn = (session: string) => new RegExp(`^session ${session} continues where it was made: provider \\S+, CODEX_HOME /\\S+/codex-home$`)
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`

/** a bounded wait on a receipt, checked every 50 ms */
const until = <A>(what: string, check: Effect.Effect<A | undefined, unknown>, ms = 30_000) =>
  check.pipe(
    Effect.flatMap((a) => (a === undefined ? Effect.fail("not yet" as const) : Effect.succeed(a))),
    Effect.retry({ schedule: Schedule.spaced("50 millis"), while: (x) => x === "not yet" }),
    Effect.timeoutFail({ duration: ms, onTimeout: () => new Error(`waited ${ms} ms for ${what}`) })
  )

const client = (r: Runner) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const c = yield* ControlClient.make({ url: r.url, token: r.token }).pipe(Effect.provide(NodeSocket.layerWebSocketConstructor), Scope.extend(scope))
    e().clients.set(r.name, { client: c, scope })
  })
const clientOf = (r: Runner) => e().clients.get(r.name)!.client

/** the next message of a session through a runner's serve: its own marker and rule; the whole stream, bounded */
const send = (via: Runner, session: string, answer?: (marker: string) => Reply) =>
  Effect.gen(function* () {
    const n = (count.get(session) ?? 0) + 1
    count.set(session, n)
    const marker = `msg[${session}.${n}]`
    markers.push(marker)
    // matched only as the request's last input item (the turn's prompt), never as history: a message whose turn failed
    // before the model was asked leaves its rule unused, and its prompt may come back in a later bootstrap projection
    yield* e().model.addRule({ whenRequestIncludes: `${marker} please answer"}]}]`, once: true, reply: answer?.(marker) ?? reply.text(`re ${marker}`) })
    const events = yield* clientOf(via).StartTurn({ session, prompt: `${marker} please answer` }).pipe(
      Stream.runCollect,
      Effect.timeout("90 seconds")
    )
    // never silent: every message's stream ends with exactly one terminal event, counted for the ledger check
    const ends = terminal([...events])
    expect(ends, `${marker}: ${JSON.stringify([...events])}`).toHaveLength(1)
    const end = ends[0]!
    const outcome = end.type === "turn.completed" ? "completed" : end.status === "interrupted" && end.error?.includes("failover") ? "lost" : "failed"
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
    outcomeOf.set(marker, outcome)
    return { session, marker, events: [...events] }
  })

/** asserts the turn completed with its own reply; returns its thread */
const answered = ({ events, marker }: { readonly marker: string; readonly events: ReadonlyArray<ControlEvent> }) => {
  const done = terminal(events)
  expect(done, `${marker}: ${JSON.stringify(events)}`).toEqual([expect.objectContaining({ type: "turn.completed", final_text: `re ${marker}` })])
  expect(events).toContainEqual(expect.objectContaining({ type: "reply", source: "final", text: `re ${marker}` }))
  completed.add(marker)
  return (done[0] as { thread_id: string }).thread_id
}
const nextMarker = (session: string) => `msg[${session}.${(count.get(session) ?? 0) + 1}]`

/** no message ran twice: a marker is the last user message of at most one model request, of one if it completed */
const ranOnce = Effect.gen(function* () {
  const prompts = (yield* e().model.requests).map((r) => lastUserText(r.json))
  const asked = (m: string) => prompts.filter((p) => p.includes(m)).length
  expect(markers.filter((m) => asked(m) > 1), "markers asked more than once").toEqual([])
  expect(markers.filter((m) => outcomeOf.get(m) === "completed" && asked(m) !== 1), "completed, yet not asked once").toEqual([])
})

const requestWith = (marker: string) =>
  Effect.map(e().model.requests, (rs) => rs.find((r) => lastUserText(r.json).includes(marker)))

/** which runner hosts which session now (rows are written when a session's entity starts on a runner) */
const owners = Effect.gen(function* () {
  const rows = yield* pg().psql("SELECT session_id, runner FROM harness_session_owners", "cluster")
  const map = new Map<string, Array<string>>()
  for (const line of rows.trim().split("\n").filter((l) => l !== "")) {
    const [session, runner] = line.split("|") as [string, string]
    map.set(runner, [...(map.get(runner) ?? []), session])
  }
  return map
})

const status = () => ClusterStatus.run(e().database)
/** all 300 shards held, by exactly these runners, each with some */
const settled = (rs: ReadonlyArray<Runner>) =>
  until(`the shards to settle on ${rs.map((r) => r.name).join(", ")}`, Effect.map(status(), (s) => {
    const holding = s.runners.filter((r) => r.shards > 0).map((r) => r.address).sort()
    return s.shardsHeld === 300 && JSON.stringify(holding) === JSON.stringify(rs.map((r) => r.address).sort()) ? s : undefined
  }), 120_000)

const alive = () => e().runners.filter((r) => r.alive())

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  const started = Date.now()
  env = await Effect.runPromise(Effect.gen(function* () {
    const model = yield* makeModel({ fallback: reply.text("unscripted") })
    const root = yield* tempRoot()
    const database = yield* pg().createDatabase("cluster")
    return { scope, model, database, root, runners: [], clients: new Map() } satisfies Env
  }).pipe(Scope.extend(scope)))
  // should this process end without afterAll, no runner outlives it
  const runners = env.runners
  process.once("exit", () => killEverything(runners))
  // the first runner bootstraps the tables; the others join once it is in `cluster status`
  for (const name of ["A", "B", "C"]) {
    const r = await Effect.runPromise(startRunner({ name, database: e().database, providerUrl: e().model.url, root: e().root }))
    e().runners.push(r)
    await Effect.runPromise(until(`${name} in cluster status`, Effect.map(status(), (s) => s.runners.find((x) => x.address === r.address))))
    await Effect.runPromise(client(r))
  }
  await Effect.runPromise(settled(e().runners))
  console.log(`cluster: 3 runners up with their shards settled in ${seconds(Date.now() - started)}`)
}, 180_000)

afterAll(async () => {
  if (env === undefined) return
  killEverything(env.runners)
  for (const { scope } of env.clients.values()) await Effect.runPromise(Scope.close(scope, Exit.void))
  await Effect.runPromise(Scope.close(env.scope, Exit.void))
}, 60_000)

describe("three runners as processes, one PostgreSQL", () => {
  it.live("[spread] 50 sessions, one turn each, spread over the runners; every turn completes with its reply", () =>
    Effect.gen(function* () {
      const [a, b, c] = e().runners as [Runner, Runner, Runner]
      const t0 = Date.now()
      const turns = yield* Effect.forEach(sessions, (s, i) => send([a, b, c][i % 3]!, s), { concurrency: 8 })
      const took = Date.now() - t0
      turns.forEach((t, i) => thread.set(sessions[i]!, answered(t)))
      yield* ranOnce
      const report = yield* clusterStatus(e().database)
      expect(report.runners.map((r) => r.address).sort()).toEqual(e().runners.map((r) => r.address).sort())
      expect(report.shardsHeld).toBe(300)
      const spread = report.runners.map((r) => `${e().runners.find((x) => x.address === r.address)!.name} ${r.sessions}`)
      expect(report.runners.filter((r) => r.sessions > 0).length).toBeGreaterThan(1)
      expect(report.runners.reduce((n, r) => n + r.sessions, 0)).toBe(50)
      console.log(`cluster [spread]: 50 turns in ${seconds(took)} (8 at a time); sessions per runner: ${spread.join(", ")}; ` +
        `shards: ${report.runners.map((r) => r.shards).join("/")}`)
    }), 240_000)

  it.live("[kill -9] a runner dies mid-turn: the stream ends with a terminal event, every session answers its next message, none ran twice", () =>
    Effect.gen(function* () {
      const hosted = yield* owners
      const x = [...e().runners].sort((p, q) => (hosted.get(q.address)?.length ?? 0) - (hosted.get(p.address)?.length ?? 0))[0]!
      const [y, z] = e().runners.filter((r) => r !== x) as [Runner, Runner]
      const moved = hosted.get(x.address) ?? []
      expect(moved.length).toBeGreaterThan(0)
      const h = moved[0]!
      yield* Scope.close(e().clients.get(x.name)!.scope, Exit.void)

      // the turn hangs at the model, sent by X's app-server; the client is on Y's serve
      const marker = nextMarker(h)
      const hung = yield* send(y, h, () => reply.steps({ type: "hang" })).pipe(Effect.fork)
      yield* until("the hanging request at the model", requestWith(marker))
      expect(yield* until("X's app-server", Effect.sync(() => appServerGroups(x).length > 0 ? true : undefined))).toBe(true)
      const t0 = Date.now()
      const groups = killMachine(x)
      yield* x.exited.pipe(Effect.timeout("120 seconds"))
      yield* until("X's app-servers to be gone", Effect.sync(() => groupsGone(groups) ? true : undefined), 10_000)

      // the stream ends, and says how: the dead runner's message is reported, never silently dropped
      const ended = yield* Fiber.join(hung).pipe(Effect.timeout("60 seconds"))
      const reportedIn = Date.now() - t0
      const last = terminal(ended.events)
      expect(last, JSON.stringify(ended.events)).toHaveLength(1)
      expect(last[0]).toMatchObject({ type: "turn.failed", status: "interrupted", error: expect.stringContaining("failover") })
      expect(notices(ended.events).join("\n")).toContain(`Runner ${x.address} stopped`)
      expect(yield* pg().psql("SELECT status FROM harness_turn_messages WHERE status NOT IN ('completed')", "cluster")).toBe("lost\n")

      // the moved session answers its next message on a survivor: the failover time, from the kill to that answer
      const next = yield* send(y, h)
      const answeredIn = Date.now() - t0
      // the issue asks for 5 s from the death to the failover; bounded here with room for a loaded 2-core machine
      expect(reportedIn).toBeLessThan(10_000)
      expect(answeredIn).toBeLessThan(15_000)
      const nextThread = answered(next)
      const rest = yield* Effect.forEach(sessions.filter((s) => s !== h), (s, i) => send([y, z][i % 2]!, s), { concurrency: 8 })
      const allIn = Date.now() - t0
      const threads = new Map([[h, nextThread], ...rest.map((t) => [t.session, answered(t)] as const)])
      // on this machine the dead runner's CODEX_HOME is still there: the moved sessions resume their own threads
      const fresh = moved.filter((s) => threads.get(s) !== thread.get(s))
      expect(fresh, "moved sessions on a fresh thread").toEqual([])
      expect(sessions.filter((s) => !moved.includes(s) && threads.get(s) !== thread.get(s))).toEqual([])
      // no notice but, on a moved session, that its recorded runtime (CODEX_HOME) wins on the new runner: once per
      // session and process, and none when the session came back to the runner it was made on (a shard that moved
      // during [spread] under load can leave a session hosted on X that was made on a survivor)
      for (const t of [next, ...rest]) {
        for (const n of notices(t.events)) expect(n, t.marker).toMatch(madeOn(t.session))
        expect(notices(t.events).length, t.marker).toBeLessThanOrEqual(1)
      }
      expect([next, ...rest].filter((t) => moved.includes(t.session) && notices(t.events).length === 1).length,
        "moved sessions told that they continue where they were made").toBeGreaterThan(0)
      for (const [s, t] of threads) thread.set(s, t)
      yield* ranOnce

      const report = yield* settled([y, z])
      expect(report.runners.find((r) => r.address === x.address)?.shards ?? 0).toBe(0)
      console.log(`cluster [kill -9]: runner ${x.name} (${moved.length} sessions) killed; the hung turn was reported ` +
        `${last[0]!.type} (${(last[0] as { status?: string }).status}) ${seconds(reportedIn)} after the kill; the moved session ` +
        `answered its next message ${seconds(answeredIn)} after the kill (failover); all 50 answered ${seconds(allIn)} after it`)
    }), 180_000)

  it.live("[drain] SIGTERM with a turn running: the turn completes, the runner exits, its sessions answer on the other", () =>
    Effect.gen(function* () {
      const hosted = yield* owners
      const [y, z] = alive().sort((p, q) => (hosted.get(q.address)?.length ?? 0) - (hosted.get(p.address)?.length ?? 0)) as [Runner, Runner]
      const leaving = hosted.get(y.address) ?? []
      expect(leaving.length).toBeGreaterThan(0)
      const d = leaving[0]!
      yield* Scope.close(e().clients.get(y.name)!.scope, Exit.void)
      const marker = nextMarker(d)
      const running = yield* send(z, d, (m) => reply.steps({ type: "pause", ms: 3000 }, { type: "message", text: `re ${m}` })).pipe(Effect.fork)
      yield* until("the draining turn's request at the model", requestWith(marker))
      const groups = appServerGroups(y)
      const t0 = Date.now()
      y.child.kill("SIGTERM")
      const turn = yield* Fiber.join(running).pipe(Effect.timeout("60 seconds"))
      expect(answered(turn), "the drained turn's thread").toBe(thread.get(d))
      const exit = yield* y.exited.pipe(Effect.timeout("40 seconds"))
      const drained = Date.now() - t0
      expect(exit.signal, y.stderr()).toBeNull()
      yield* until("Y's app-servers to be gone", Effect.sync(() => groupsGone(groups) ? true : undefined), 10_000)

      const t1 = Date.now()
      const next = yield* Effect.forEach(leaving, (s) => send(z, s), { concurrency: 8 })
      // the CODEX_HOMEs they were made in are still there: they resume their own threads (a notice says so, unless Z
      // is where the session was made)
      for (const t of next) {
        expect(answered(t), `${t.session} on its own thread`).toBe(thread.get(t.session))
        for (const n of notices(t.events)) expect(n, t.marker).toMatch(madeOn(t.session))
      }
      const firstIn = t1 - t0
      yield* ranOnce
      yield* settled([z])
      console.log(`cluster [drain]: runner ${y.name} drained its running turn and exited (code ${exit.code}) ` +
        `${seconds(drained)} after SIGTERM; its ${leaving.length} sessions answered on ${z.name} within ${seconds(Date.now() - t0)} of it ` +
        `(sends began ${seconds(firstIn)} after it)`)
    }), 180_000)

  it.live("[machine gone] a runner dies with its CODEX_HOME: its sessions continue on a fresh thread carrying the conversation, with a notice", () =>
    Effect.gen(function* () {
      const [z] = alive() as [Runner]
      const d = yield* startRunner({ name: "D", database: e().database, providerUrl: e().model.url, root: e().root })
      e().runners.push(d)
      yield* client(d)
      yield* settled([z, d])
      // the sessions whose recorded runtime is Z's CODEX_HOME (the ones created on Z)
      const home = path.join(z.stateDir, "codex-home")
      const rows = yield* pg().psql(`SELECT DISTINCT session_id FROM harness_records WHERE tag = 'binding' AND record LIKE '%${home}%'`, "cluster")
      const ofZ = rows.trim().split("\n").filter((l) => l !== "")
      expect(ofZ.length).toBeGreaterThan(0)
      const groups = killMachine(z)
      const t0 = Date.now()
      yield* z.exited.pipe(Effect.timeout("120 seconds"))
      yield* until("Z's app-servers to be gone", Effect.sync(() => groupsGone(groups) ? true : undefined), 10_000)
      // the survivors start app-servers for Z's sessions on this CODEX_HOME at once (Prewarm.ts), which write into it
      // while it is removed: a removal that met their new files failed (ENOTEMPTY), even tried again for a second, in two
      // newcomer runs. So the home is renamed away first (one step: from then on it is gone at its path, as the disk of
      // a dead machine), then removed; what an app-server still writes under the new name is left to the test's root
      const gone = `${home}.gone`
      fs.renameSync(home, gone)
      try {
        fs.rmSync(gone, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 })
      } catch {
        // removed with the test's root at its end
      }

      const turns = yield* Effect.forEach(ofZ, (s) => send(d, s), { concurrency: 8 })
      const took = Date.now() - t0
      for (const [i, t] of turns.entries()) {
        const s = ofZ[i]!
        const now = answered(t)
        expect(now, `${s} on a fresh thread`).not.toBe(thread.get(s))
        expect(notices(t.events).join("\n"), s).toContain(`The Codex thread ${thread.get(s)} of this session no longer exists`)
        // the fresh thread's first request carries the earlier conversation: every earlier message and its reply
        const body = (yield* requestWith(t.marker))!.body
        for (let n = 1; n < count.get(s)!; n++) {
          const earlier = `msg[${s}.${n}]`
          if (completed.has(earlier)) expect(body, `${s} carries message ${n} and its reply`).toContain(`re ${earlier}`)
        }
        thread.set(s, now)
      }
      yield* ranOnce
      console.log(`cluster [machine gone]: runner ${z.name} killed and its CODEX_HOME deleted; its ${ofZ.length} sessions ` +
        `answered on ${d.name} on fresh threads (bootstrap projection, a notice) within ${seconds(took)} of the kill`)
    }), 180_000)

  it.live("[rebalance] a runner joins while the others live: every session answers its next message wherever it now runs", () =>
    Effect.gen(function* () {
      const [d] = alive() as [Runner]
      const before = yield* owners
      const joined = yield* startRunner({ name: "E", database: e().database, providerUrl: e().model.url, root: e().root })
      e().runners.push(joined)
      yield* client(joined)
      yield* settled([d, joined])
      const t0 = Date.now()
      const turns = yield* Effect.forEach(sessions, (s, i) => send([d, joined][i % 2]!, s), { concurrency: 8 })
      const after = yield* owners
      const took = Date.now() - t0
      const moved = (before.get(d.address) ?? []).filter((s) => after.get(joined.address)?.includes(s))
      const failed = turns.filter((t) => terminal(t.events)[0]?.type !== "turn.completed")
      console.log(`cluster [rebalance]: runner ${joined.name} (pid ${joined.child.pid}) joined; ${moved.length} sessions moved to it from live runner ${d.name} (pid ${d.child.pid}); ` +
        `50 next messages in ${seconds(took)}, ${failed.length} failed` +
        failed.map((t) => `\n  ${t.session}: ${(terminal(t.events)[0] as { error?: string } | undefined)?.error}`).join(""))
      // every CODEX_HOME is on this machine: each session resumes its own thread, on whichever runner hosts it now
      for (const t of turns) {
        expect(answered(t), `${t.session} on its own thread`).toBe(thread.get(t.session))
        for (const n of notices(t.events)) expect(n, t.marker).toMatch(madeOn(t.session))
      }
      yield* ranOnce
    }), 180_000)

  it.live("[client gone] the serve a turn came through is killed mid-turn: the turn completes where its session lives, its outcome is recorded, and the session's next message is answered, not refused busy", () =>
    Effect.gen(function* () {
      const hosted = yield* owners
      const [home, via] = alive().sort((p, q) => (hosted.get(q.address)?.length ?? 0) - (hosted.get(p.address)?.length ?? 0)) as [Runner, Runner]
      const s = (hosted.get(home.address) ?? [])[0]!
      expect(s, "a session hosted on the runner that stays").toBeDefined()
      const n = (count.get(s) ?? 0) + 1
      count.set(s, n)
      const marker = `msg[${s}.${n}]`
      markers.push(marker)
      yield* e().model.addRule({
        whenRequestIncludes: `${marker} please answer"}]}]`,
        once: true,
        reply: reply.steps({ type: "pause", ms: 3000 }, { type: "message", text: `re ${marker}` })
      })
      // through the other runner's serve, which dies while the turn runs on the session's own runner
      const cut = yield* clientOf(via).StartTurn({ session: s, prompt: `${marker} please answer` }).pipe(
        Stream.runCollect,
        Effect.either,
        Effect.timeout("90 seconds"),
        Effect.fork
      )
      yield* until("the turn's request at the model", requestWith(marker))
      const groups = killMachine(via)
      yield* via.exited.pipe(Effect.timeout("120 seconds"))
      yield* until("the killed serve's app-servers to be gone", Effect.sync(() => groupsGone(groups) ? true : undefined), 10_000)
      yield* Fiber.join(cut)

      // the turn ran on to its end where the session lives, and the ledger says so, reply included
      const recorded = yield* until("the turn's outcome in the ledger", Effect.map(
        pg().psql(`SELECT status FROM harness_turn_messages WHERE outcome::text LIKE '%re ${marker}%'`, "cluster"),
        (out) => (out.trim() === "" ? undefined : out.trim())
      ), 60_000)
      expect(recorded).toBe("completed")
      outcomes.set("completed", (outcomes.get("completed") ?? 0) + 1)
      outcomeOf.set(marker, "completed")
      completed.add(marker)
      // the next message of that session is answered on its own thread, never refused as busy
      const next = yield* send(home, s)
      expect(answered(next)).toBe(thread.get(s))
      yield* ranOnce
    }), 180_000)

  it.live("the survivors stop on SIGTERM and leave nothing behind", () =>
    Effect.gen(function* () {
      const survivors = alive()
      for (const r of survivors) r.child.kill("SIGTERM")
      for (const r of e().runners) yield* r.exited.pipe(Effect.timeout("40 seconds"))
      for (const r of survivors) expect((yield* r.exited).signal, r.stderr()).toBeNull()
      // every message has the outcome its client saw in the ledger, and nothing is left `started`; one was lost
      const ledger = yield* pg().psql("SELECT status, count(*) FROM harness_turn_messages GROUP BY status ORDER BY status", "cluster")
      expect(ledger).toBe([...outcomes].sort(([p], [q]) => p.localeCompare(q)).map(([k, n]) => `${k}|${n}\n`).join(""))
      expect(outcomes.get("lost")).toBe(1)
      expect([...outcomes.values()].reduce((a, n) => a + n, 0)).toBe(markers.length)
      for (const r of e().runners) expect(yield* leftBehind(r.stateDir), r.name).toEqual([])
      const report = yield* status()
      expect(report.shardsHeld).toBe(0)
    }), 240_000)
})
