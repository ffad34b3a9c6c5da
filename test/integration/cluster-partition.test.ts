// Issue 29, item 4: fencing under a partition. Three runners as processes on one throwaway PostgreSQL; runner X reaches
// the database only through a TCP proxy in this process, which the test cuts (it stops forwarding, closes nothing: both
// ends keep their connections and hear nothing). A turn of a session X hosts is running (its model request held on a
// gate). Then:
// - X notices within seconds that PostgreSQL does not renew its shard locks and stops the turn (fencing): its model
//   request closes, and at that moment no other runner holds the session's shard lock;
// - the database drops X's silent connections (idle_session_timeout, at the lock expiry), another runner takes the
//   session, and the session's next message runs there: it reaches the model only after X's turn had stopped, so the
//   session never ran on two runners;
// - the cut turn's client (on another runner's serve) gets exactly one terminal event, a failure that says why in words;
// - the proxy heals: X takes shards again and every session answers; nothing is left behind.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import type { ControlEvent } from "../../schemas/control.js"
import * as ControlClient from "../../src/control/ControlClient.js"
import { make as makeModel, reply, type ScriptedModel } from "../../src/testing/ScriptedModel.js"
import { killEverything, type Runner, startRunner, tempRoot } from "../support/cluster.js"
import { connect, ledger, owners, requestWith, rows, ruleFor, sendVia, terminal, until } from "../support/clusterTurns.js"
import { leftBehind } from "../support/harness.js"
import { type TcpProxy, tcpProxy } from "../support/tcpProxy.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()
const sessions = Array.from({ length: 12 }, (_, i) => `p-s${String(i).padStart(2, "0")}`)

/** the shard of an entity id as @effect/cluster 0.60.2 computes it (its internal string hash, restated), 300 shards */
const shardOf = (entityId: string) => {
  let h = 5381
  for (let i = entityId.length; i > 0;) h = (h * 33) ^ entityId.charCodeAt(--i)
  const optimized = (h & 0xbfffffff) | ((h >>> 1) & 0x40000000)
  return Math.abs(optimized % 300) + 1
}

interface Env {
  readonly scope: Scope.CloseableScope
  readonly model: ScriptedModel
  readonly database: string
  readonly proxy: TcpProxy
  readonly runners: Array<Runner>
  readonly clients: Array<ControlClient.Client>
}
let env: Env | undefined
const e = () => env ?? (() => { throw new Error("the cluster did not start") })()
const db = () => e().database.replace(/^.*\//, "")
const count = new Map<string, number>()
const nextMarker = (session: string) => {
  const n = (count.get(session) ?? 0) + 1
  count.set(session, n)
  return `msg[${session}.${n}]`
}
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/** the application name holding the session's shard lock, "" when none */
const shardHolder = (session: string) =>
  Effect.map(rows(pg(), `SELECT coalesce((SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = ${1_000_000 + shardOf(session)}), '')`, db()), (r) => r[0]?.[0] ?? "")

/** the first of up to 300 made-up session ids whose shard the runner named `holder` holds */
const sessionOn = (holder: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 300; i++) {
      const id = `p-x${String(i).padStart(3, "0")}`
      if ((yield* shardHolder(id)) === holder) return id
    }
    return yield* Effect.dieMessage(`none of 300 session ids has its shard held by ${holder}`)
  })

const settled = () => until("all 300 shards held by the three runners", Effect.map(
  pg().psql(`SELECT count(DISTINCT l.objid), count(DISTINCT a.application_name) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid BETWEEN 1000001 AND 1000300`, db()),
  (out) => (out.trim() === "300|3" ? true : undefined)
), 180_000)

const completes = (client: ControlClient.Client, session: string) =>
  Effect.gen(function* () {
    const m = nextMarker(session)
    yield* ruleFor(e().model, m)
    const sent = yield* sendVia(client, session, m)
    const ends = sent._tag === "Events" ? terminal(sent.events) : []
    expect(ends, `${m}: ${JSON.stringify(sent)}`).toEqual([expect.objectContaining({ type: "turn.completed", final_text: `re ${m}` })])
  })

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  env = await Effect.runPromise(Effect.gen(function* () {
    const model = yield* makeModel({ fallback: reply.text("unscripted") })
    const root = yield* tempRoot()
    const database = yield* pg().createDatabase("partition")
    const proxy = yield* tcpProxy(pg().port)
    const viaProxy = (() => {
      const u = new URL(database)
      u.port = String(proxy.port)
      return u.toString()
    })()
    const runners: Array<Runner> = []
    process.once("exit", () => killEverything(runners))
    runners.push(yield* startRunner({ name: "X", database: viaProxy, providerUrl: model.url, root }))
    for (const name of ["Y", "Z"]) runners.push(yield* startRunner({ name, database, providerUrl: model.url, root }))
    const clients = yield* Effect.forEach(runners, (r) => connect(r, scope))
    return { scope, model, database, proxy, runners, clients } satisfies Env
  }).pipe(Scope.extend(scope)))
  await Effect.runPromise(settled())
  await Effect.runPromise(Effect.forEach(sessions, (s, i) => completes(e().clients[i % 3]!, s), { concurrency: 4 }))
}, 300_000)

afterAll(async () => {
  if (env === undefined) return
  killEverything(env.runners)
  await Effect.runPromise(Scope.close(env.scope, Exit.void))
}, 60_000)

describe("fencing under a partition between one runner and PostgreSQL", () => {
  it.live("a runner cut off from PostgreSQL stops its turn before another runner may take the session; the session never runs on two runners", () =>
    Effect.gen(function* () {
      const [x, y] = e().runners as [Runner, Runner, Runner]
      const [, yClient] = e().clients as [ControlClient.Client, ControlClient.Client, ControlClient.Client]
      const xName = `codex-harness runner ${x.address}`
      // a session of a shard X holds, picked by its shard: which runner holds which shard follows the runners' random
      // ports, and once none of the 12 sessions above had landed on X (a run in about a hundred)
      const session = yield* sessionOn(xName)
      yield* completes(yClient, session)
      // the restated hash was right: the session runs on X
      expect((yield* owners(pg(), db())).get(session), `the owner of ${session}`).toBe(x.address)

      // the turn on X, held at the model; when X's request closes, who holds the shard lock is read at once
      const stopped = yield* Deferred.make<{ readonly at: number; readonly holder: string }>()
      const cutMarker = nextMarker(session)
      yield* e().model.addRule({
        whenRequestIncludes: `${cutMarker} please answer"}]}]`,
        once: true,
        reply: reply.steps({
          type: "wait",
          until: Effect.never.pipe(Effect.onInterrupt(() =>
            Effect.flatMap(Effect.either(shardHolder(session)), (holder) =>
              Deferred.succeed(stopped, { at: Date.now(), holder: holder._tag === "Right" ? holder.right : `(unread: ${holder.left.message})` })).pipe(
              Effect.forkDaemon
            )
          ))
        }, { type: "message", text: "never sent" })
      })
      const cut = yield* sendVia(yClient, session, cutMarker).pipe(Effect.fork)
      yield* until("the cut turn's request at the model", requestWith(e().model, cutMarker))

      const t0 = Date.now()
      yield* e().proxy.cut
      // X fences: its turn stops; nobody else holds the shard yet
      const stop = yield* Deferred.await(stopped).pipe(Effect.timeout("120 seconds"))
      expect([xName, ""], `the shard's holder when X's turn stopped`).toContain(stop.holder)
      expect(x.stderr()).toMatch(/cluster runner \S+ fenced: PostgreSQL has not renewed this runner's shard locks for/)

      // another runner takes the shard once PostgreSQL has dropped X's silent connections
      const taker = yield* until("another runner holding the session's shard", Effect.map(shardHolder(session), (h) => (h !== "" && h !== xName ? h : undefined)), 120_000)
      const takenAt = Date.now()

      // the cut turn's client: one terminal event, a failure in words
      const sent = yield* Fiber.join(cut)
      const events: ReadonlyArray<ControlEvent> = sent._tag === "Events" ? sent.events : []
      expect(sent._tag, JSON.stringify(sent)).toBe("Events")
      const ends = terminal(events)
      expect(ends, JSON.stringify(events)).toHaveLength(1)
      expect(ends[0]).toMatchObject({ type: "turn.failed", status: "interrupted" })
      const said = events.flatMap((ev) => (ev.type === "reply" && ev.source === "notice" ? [ev.text ?? ""] : []))
      expect(said.join("\n"), JSON.stringify(events)).toMatch(new RegExp(`Runner ${x.address.replace(/\./g, "\\.")} (stopped this turn: it could not reach PostgreSQL|stopped while it ran the turn)`))
      for (const line of [...said, (ends[0] as { error: string }).error]) expect(line).not.toMatch(/[{}]|EntityAddress|envelopeId/)

      // the session's next message runs on the runner that took it, after X's turn had stopped
      const nextMarkerText = nextMarker(session)
      let startedAt = 0
      yield* e().model.addRule({
        whenRequestIncludes: `${nextMarkerText} please answer"}]}]`,
        once: true,
        reply: reply.steps({ type: "wait", until: Effect.sync(() => void (startedAt = Date.now())) }, { type: "message", text: `re ${nextMarkerText}` })
      })
      const next = yield* sendVia(yClient, session, nextMarkerText)
      expect(next._tag === "Events" ? terminal(next.events) : next, nextMarkerText).toEqual([
        expect.objectContaining({ type: "turn.completed", final_text: `re ${nextMarkerText}` })
      ])
      expect(startedAt, "the new turn reached the model after X's turn stopped").toBeGreaterThan(stop.at)
      expect((yield* owners(pg(), db())).get(session)).not.toBe(x.address)
      const recorded = (yield* ledger(pg(), db())).filter((r) => r.session === session).map((r) => r.status).sort()
      console.log(`cluster partition: X cut off; X stopped its turn ${seconds(stop.at - t0)} after the cut (holder then: ` +
        `${stop.holder || "none"}); ${taker} held the session's shard ${seconds(takenAt - t0)} after it; the cut turn's client was told: ` +
        `${said.join(" / ")} | ${(ends[0] as { error: string }).error}; ledger for the session: ${recorded.join(", ")}`)

      // healed: X comes back, takes shards again, and every session answers
      yield* e().proxy.heal
      yield* settled()
      yield* Effect.forEach(sessions, (id, i) => completes(e().clients[i % 3]!, id), { concurrency: 4 })
      expect(y.alive()).toBe(true)
    }), 600_000)

  it.live("the runners stop on SIGTERM and leave nothing behind", () =>
    Effect.gen(function* () {
      for (const r of e().runners) r.child.kill("SIGTERM")
      for (const r of e().runners) expect((yield* r.exited.pipe(Effect.timeout("60 seconds"))).signal, r.stderr()).toBeNull()
      for (const r of e().runners) expect(yield* leftBehind(r.stateDir), r.name).toEqual([])
      // every message ended in one outcome: nothing is left started
      expect((yield* ledger(pg(), db())).filter((r) => r.status === "started")).toEqual([])
    }), 120_000)
})

