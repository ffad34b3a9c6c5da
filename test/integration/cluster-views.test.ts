// Cluster-wide views (issue 33, item 2), on real parts: a throwaway PostgreSQL, ONE runner in this process (the real
// `codex app-server`, the PostgreSQL store) and client-only processes' routers beside it (ClusterRouter over
// ClusterRunner.clientLayer: what the control API of a serve that does not host the session uses):
// - an approval of a turn running on the runner is in Pending from elsewhere, its session's Watch from elsewhere replays
//   it and then carries the turn's events as they come, and it is answered by id from a router that never saw the turn;
// - `cluster status` counts the sessions of a runner that is gone (expired, unhealthy, no longer registered) as moving,
//   not as active.
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Chunk, Effect, Fiber, Layer, Schedule, Stream } from "effect"
import * as net from "node:net"
import type { ControlEvent } from "../../schemas/control.js"
import * as ClusterClient from "../../src/cluster/ClusterClient.js"
import * as ClusterDatabase from "../../src/cluster/ClusterDatabase.js"
import * as ClusterRouter from "../../src/cluster/ClusterRouter.js"
import * as ClusterRunner from "../../src/cluster/ClusterRunner.js"
import * as ClusterStatus from "../../src/cluster/ClusterStatus.js"
import { SessionRouter, type SessionRouterService } from "../../src/control/SessionRouter.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind } from "../support/harness.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()

const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as net.AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** a router as another serve's control API has it: its own client-only cluster process */
const elsewhere = (url: string) =>
  Effect.gen(function* () {
    const ctx = yield* Layer.build(ClusterRouter.layer.pipe(Layer.provideMerge(ClusterRunner.clientLayer({ databaseUrl: url })), Layer.provideMerge(ClusterDatabase.pgLayer(url))))
    return (yield* Effect.provide(SessionRouter, ctx))!
  })

/** a bounded wait on a receipt, checked every 100 ms */
const until = <A>(what: string, check: Effect.Effect<A | undefined, unknown>, ms = 30_000) =>
  check.pipe(
    Effect.flatMap((a) => (a === undefined ? Effect.fail("not yet" as const) : Effect.succeed(a))),
    Effect.retry({ schedule: Schedule.spaced("100 millis"), while: (x) => x === "not yet" }),
    Effect.timeoutFail({ duration: ms, onTimeout: () => new Error(`waited ${ms} ms for ${what}`) })
  )

describe("cluster-wide views", () => {
  it.scopedLive("Pending, Watch and Answer by id work from a serve that does not host the session", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        rules: [
          { whenRequestIncludes: "made-y", reply: reply.text("made it") },
          { whenRequestIncludes: "make y.txt", once: true, reply: reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch y.txt; echo made-y" } }) }
        ],
        fallback: reply.text("hello")
      }, { approvalPolicy: "untrusted", sandbox: "workspace-write" })
      const url = yield* pg().createDatabase("cluster_views")
      const port = yield* freePort
      yield* Effect.scoped(Effect.gen(function* () {
        yield* Layer.build(ClusterRunner.layer(f.settings, { databaseUrl: url, listen: { host: "127.0.0.1", port } }))
        const starter = yield* Effect.provide(ClusterClient.ClusterClient, yield* Layer.build(ClusterRunner.clientLayer({ databaseUrl: url })))
        const watcher: SessionRouterService = yield* elsewhere(url)
        const answerer: SessionRouterService = yield* elsewhere(url)
        const session = "views-s1"

        // the turn, started through one client process; it stops at its approval
        const turn = yield* Effect.fork(ClusterClient.collect(starter.startTurn({ sessionId: session, prompt: "make y.txt", approvals: "ask", created: true })))
        const waiting = yield* until("the approval in Pending from another serve", Effect.map(watcher.pending!, (p) => (p.length > 0 ? p : undefined)))
        expect(waiting).toEqual([expect.objectContaining({ type: "approval.requested", session_id: session, kind: "command" })])
        const id = waiting[0]!.id

        // Watch from another serve: what waits first, then the turn's events as they come
        const watched: Array<ControlEvent> = []
        const watching = yield* Effect.fork(watcher.watch!(session).pipe(
          Stream.tap((e) => Effect.sync(() => watched.push(e))),
          Stream.takeUntil((e) => e.type === "turn.completed"),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray)
        ))
        yield* until("the approval replayed to the watcher", Effect.sync(() => (watched.some((e) => e.type === "approval.requested" && e.id === id) ? true : undefined)))

        // answered by id from a third serve, which never saw the turn's stream
        yield* answerer.answer(id, { decision: "allow_once" }, "a third serve")
        const events = yield* Fiber.join(turn)
        expect(events).toContainEqual(expect.objectContaining({ type: "interaction.closed", id, outcome: "answered", by: "a third serve" }))
        expect(events.filter((e) => e.type === "turn.completed")).toEqual([expect.objectContaining({ final_text: "made it" })])
        const seen = yield* Fiber.join(watching).pipe(Effect.timeout("120 seconds"))
        expect(seen.filter((e) => e.type === "approval.requested").map((e) => (e as { id: string }).id)).toEqual([id])
        expect(seen).toContainEqual(expect.objectContaining({ type: "interaction.closed", id }))
        expect(seen).toContainEqual(expect.objectContaining({ type: "item.completed", item: expect.objectContaining({ kind: "command", exit_code: 0 }) }))
        expect(seen.at(-1)).toMatchObject({ type: "turn.completed", final_text: "made it" })
        // nothing waits any more, anywhere
        yield* until("Pending empty", Effect.map(watcher.pending!, (p) => (p.length === 0 ? true : undefined)))
        // an id nobody waits on is not found, in one line
        expect(yield* Effect.flip(answerer.answer("no-such-id", { decision: "deny" }, "x"))).toMatchObject({ code: "not_found" })
      }))
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("cluster status counts a gone runner's sessions as moving, not active, one killed a moment ago included", () =>
    Effect.gen(function* () {
      const url = yield* pg().createDatabase("cluster_moving")
      const config = ClusterRunner.shardingConfig({ databaseUrl: url })
      const ctx = yield* Layer.build(ClusterRunner.databaseLayer({ databaseUrl: url }, config, "127.0.0.1:1"))
      const sql = yield* Effect.provide(SqlClient.SqlClient, ctx)
      // a live runner (this test's own connections carry its name, 127.0.0.1:1), one whose heartbeat expired, one marked
      // unhealthy, one registered, healthy and fresh whose connections are gone (killed a moment ago), and sessions
      // recorded on one no longer registered
      yield* sql`INSERT INTO cluster_runners (machine_id, address, runner, healthy, last_heartbeat) VALUES
        (1, '127.0.0.1:1', '', true, now()), (2, '10.0.0.2:4660', '', true, now() - interval '1 minute'),
        (3, '10.0.0.3:4660', '', false, now()), (4, '10.0.0.4:4660', '', true, now())`
      yield* sql`INSERT INTO harness_session_owners (session_id, runner) VALUES ('a1', '127.0.0.1:1'), ('a2', '127.0.0.1:1'),
        ('b1', '10.0.0.2:4660'), ('c1', '10.0.0.3:4660'), ('c2', '10.0.0.3:4660'), ('d1', '10.0.0.9:4660'), ('e1', '10.0.0.4:4660')`
      const report = yield* Effect.provide(ClusterStatus.status(), ctx)
      expect(report.runners.map((r) => [r.address, r.sessions, r.moving])).toEqual([
        ["10.0.0.2:4660", 0, 1],
        ["10.0.0.3:4660", 0, 2],
        ["10.0.0.4:4660", 0, 1],
        ["127.0.0.1:1", 2, 0]
      ])
      expect(report.movingSessions).toBe(5)
      const text = ClusterStatus.format(report)
      expect(text.split("\n")[0]).toBe("cluster: 4 runners, 0/300 shards held, 2 active sessions, 5 moving (their runner is gone)")
      expect(text).toMatch(/10\.0\.0\.2:4660\s+expired\s+\S+ s ago\s+0\s+1 moving/)
      expect(text).toMatch(/10\.0\.0\.3:4660\s+unhealthy\s+\S+ s ago\s+0\s+2 moving/)
      expect(text).toMatch(/10\.0\.0\.4:4660\s+gone\s+\S+ s ago\s+0\s+1 moving/)
      expect(text).toMatch(/127\.0\.0\.1:1\s+yes\s+\S+ s ago\s+0\s+2$/m)
    }), 120_000)
})
