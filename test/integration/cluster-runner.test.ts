// A cluster runner on real parts: a throwaway PostgreSQL, ONE runner in this process (its Sharding listening on a
// loopback port, its own harness with the real `codex app-server` and the PostgreSQL session store) and a client-only
// Sharding beside it, so every message crosses the runner's socket as it would from another machine. The scripted model
// stands in for the provider and counts the turns that really ran.
// - a Turn through the Session entity streams the turn's events and its reply, and records its message id as completed;
// - the same message id sent again (one after the other, and twice at once) runs no second turn: the outcome is replayed;
// - a message id recorded `started` by a runner that is gone is reported (a notice and turn.failed, status interrupted,
//   naming the failover) and marked lost, never run;
// - an approval of a running turn is answered by id through the session's entity (Answer reaches the running Turn);
// - `cluster status` shows the runner with all 300 shards and its sessions; the runner leaves the cluster on close and no
//   app-server is left behind;
// - on close, a running turn ends before the runner hands its shards off (graceful drain).
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Chunk, Effect, Exit, Fiber, Layer, Schedule, Scope, Stream } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import type { ControlEvent } from "../../schemas/control.js"
import * as ClusterClient from "../../src/cluster/ClusterClient.js"
import * as ClusterDatabase from "../../src/cluster/ClusterDatabase.js"
import * as ClusterRunner from "../../src/cluster/ClusterRunner.js"
import * as ClusterStatus from "../../src/cluster/ClusterStatus.js"
import { SessionStore } from "../../src/session/SessionStore.js"
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

const types = (events: ReadonlyArray<ControlEvent>) => events.map((e) => e.type)
const terminal = (events: ReadonlyArray<ControlEvent>) => events.filter((e) => e.type === "turn.completed" || e.type === "turn.failed")

describe("a cluster runner over PostgreSQL", () => {
  it.scopedLive("runs a session's turn through its entity once per message id, and reports a message its dead runner started", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        rules: [
          { whenRequestIncludes: "slow one", reply: reply.steps({ type: "pause", ms: 1500 }, { type: "message", text: "slow reply" }) },
          // the command's output comes back in the next request, which also repeats the prompt: this rule first
          { whenRequestIncludes: "made-x", reply: reply.text("made it") },
          {
            whenRequestIncludes: "make x.txt",
            once: true,
            reply: reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch x.txt; echo made-x" } })
          }
        ],
        fallback: reply.text("hello from the cluster")
      }, { approvalPolicy: "untrusted", sandbox: "workspace-write" })
      const url = yield* pg().createDatabase("cluster_runner")
      const db = yield* Layer.build(ClusterDatabase.pgLayer(url))
      const sql = yield* Effect.provide(SqlClient.SqlClient, db)
      const port = yield* freePort
      const address = `127.0.0.1:${port}`
      const sessionId = "cluster-s1"

      yield* Effect.scoped(Effect.gen(function* () {
        const t0 = Date.now()
        const runner = yield* Layer.build(ClusterRunner.layer(f.settings, { databaseUrl: url, listen: { host: "127.0.0.1", port } }))
        const runnerMs = Date.now() - t0
        const t1 = Date.now()
        const client = yield* Effect.provide(ClusterClient.ClusterClient, yield* Layer.build(ClusterRunner.clientLayer({ databaseUrl: url })))
        const clientMs = Date.now() - t1

        // the runner takes its shards after it has joined: all 300 within a few seconds
        yield* Effect.repeat(Effect.provide(ClusterStatus.status(), db), { until: (r) => r.shardsHeld === 300, schedule: Schedule.spaced("50 millis") }).pipe(
          Effect.timeout("120 seconds")
        )
        const shardsMs = Date.now() - t0

        // 1. a Turn through the entity: the turn's events, its reply, recorded as completed
        const t2 = Date.now()
        const first = yield* ClusterClient.collect(client.startTurn({ sessionId, messageId: "m-1", prompt: "say hello", created: true }))
        const firstTurnMs = Date.now() - t2
        expect(first[0]).toMatchObject({ type: "session.selected", session_id: sessionId, created: true })
        expect(types(first)).toEqual(expect.arrayContaining(["thread.started", "turn.started", "item.completed", "turn.completed", "reply"]))
        expect(terminal(first)).toEqual([expect.objectContaining({ type: "turn.completed", session_id: sessionId, final_text: "hello from the cluster" })])
        expect(first).toContainEqual(expect.objectContaining({ type: "reply", source: "final", text: "hello from the cluster" }))
        expect((yield* f.model.requests).length).toBe(1)
        const [row] = yield* sql<{ status: string; runner: string; turn_id: string | null }>`SELECT status, runner, turn_id FROM harness_turn_messages WHERE message_id = 'm-1'`
        expect(row).toMatchObject({ status: "completed", runner: expect.stringMatching(new RegExp(`^${address}/`)) })
        expect(row!.turn_id).toBe((terminal(first)[0] as { turn_id: string }).turn_id)

        // 2. the same message id again: its outcome is replayed, the model is not asked again
        const t4 = Date.now()
        const again = yield* ClusterClient.collect(client.startTurn({ sessionId, messageId: "m-1", prompt: "say hello" }))
        const replayMs = Date.now() - t4
        // a unary message's round trip over the runner's socket (Interrupt: nothing runs, nothing is interrupted)
        const trips: Array<number> = []
        for (let i = 0; i < 15; i++) {
          const t = performance.now()
          expect(yield* client.interrupt(sessionId)).toEqual({ interrupted: false })
          trips.push(performance.now() - t)
        }
        const unaryP50 = [...trips].sort((x, y) => x - y)[Math.floor(trips.length / 2)]!.toFixed(1)
        expect(types(again)).toEqual(["session.selected", "turn.completed", "reply"])
        expect(terminal(again)).toEqual(terminal(first))
        expect((yield* f.model.requests).length).toBe(1)

        // 3. one message id sent twice at once (a client's retry while the turn runs): one turn, both streams end with it
        const [a, b] = yield* Effect.all([
          ClusterClient.collect(client.startTurn({ sessionId, messageId: "m-2", prompt: "the slow one" })),
          Effect.zipRight(Effect.sleep("300 millis"), ClusterClient.collect(client.startTurn({ sessionId, messageId: "m-2", prompt: "the slow one" })))
        ], { concurrency: 2 })
        expect((yield* f.model.requests).length).toBe(2)
        expect(terminal(a)).toEqual([expect.objectContaining({ type: "turn.completed", final_text: "slow reply" })])
        expect(terminal(b)).toEqual(terminal(a))
        // the waiting one saw none of the turn's own events, only its outcome
        expect(types(b)).toEqual(["session.selected", "turn.completed", "reply"])

        // 4. a message id a dead runner had started: reported as lost with a notice, never run
        yield* sql`INSERT INTO harness_turn_messages (message_id, session_id, status, runner, thread_id, turn_id)
          VALUES ('m-dead', ${sessionId}, 'started', '127.0.0.1:1/gone-incarnation', 'thread-of-the-dead', 'turn-of-the-dead')`
        const lost = yield* ClusterClient.collect(client.startTurn({ sessionId, messageId: "m-dead", prompt: "never sent to the model" }))
        expect(types(lost)).toEqual(["session.selected", "reply", "turn.failed"])
        expect(lost[1]).toMatchObject({ type: "reply", source: "notice", text: expect.stringContaining("Runner 127.0.0.1:1 stopped") })
        expect(lost[2]).toMatchObject({
          type: "turn.failed",
          status: "interrupted",
          thread_id: "thread-of-the-dead",
          turn_id: "turn-of-the-dead",
          error: expect.stringContaining("failover")
        })
        expect((yield* f.model.requests).length).toBe(2)
        expect((yield* f.model.requests).some((r) => r.body.includes("never sent to the model"))).toBe(false)
        const [lostRow] = yield* sql<{ status: string }>`SELECT status FROM harness_turn_messages WHERE message_id = 'm-dead'`
        expect(lostRow!.status).toBe("lost")
        // said once in the session's transcript; a second delivery replays the report without saying it again
        const lostAgain = yield* ClusterClient.collect(client.startTurn({ sessionId, messageId: "m-dead", prompt: "never sent to the model" }))
        expect(lostAgain.slice(1)).toEqual(lost.slice(1))
        const store = yield* Effect.provide(SessionStore, runner)
        const { records } = yield* store.read(sessionId)
        expect(records.filter((r) => r._tag === "notice" && r.text.includes("127.0.0.1:1 stopped"))).toHaveLength(1)
        expect(records.filter((r) => r._tag === "user").map((r) => (r as { text: string }).text)).toEqual(["say hello", "the slow one"])

        // 5. an approval of a running turn, answered by id through the session's entity (its Answer reaches the Turn)
        const other = "cluster-s2"
        const asked: Array<string> = []
        const approved = yield* client.startTurn({ sessionId: other, prompt: "make x.txt", approvals: "ask", created: true }).pipe(
          Stream.tap((e) =>
            e.type !== "approval.requested" ? Effect.void : Effect.gen(function* () {
              asked.push(e.id)
              expect(client.sessionOfInteraction(e.id)).toBe(other)
              yield* client.answer(other, e.id, { decision: "allow_once", by: "the test" })
            })
          ),
          Stream.runCollect,
          Effect.map(Chunk.toReadonlyArray),
          Effect.timeout("50 seconds")
        )
        expect(asked).toHaveLength(1)
        expect(approved).toContainEqual(expect.objectContaining({ type: "interaction.closed", id: asked[0], outcome: "answered", by: "the test" }))
        expect(approved).toContainEqual(expect.objectContaining({ type: "approval.decided", kind: "command", decision: "allow_once" }))
        expect(approved).toContainEqual(expect.objectContaining({ type: "item.completed", item: expect.objectContaining({ kind: "command", exit_code: 0 }) }))
        expect(terminal(approved)).toEqual([expect.objectContaining({ type: "turn.completed", final_text: "made it" })])
        expect(fs.existsSync(path.join(f.workDir, "x.txt"))).toBe(true)
        expect(client.sessionOfInteraction(asked[0]!)).toBeUndefined()

        // 6. the operator's view: one runner, every shard, both sessions
        const report = yield* Effect.provide(ClusterStatus.status(), db)
        expect(report.runners).toEqual([expect.objectContaining({ address, healthy: true, fresh: true, shards: 300, sessions: 2 })])
        expect(report.shardsHeld).toBe(300)
        const text = ClusterStatus.format(report)
        expect(text).toContain("1 runner, 300/300 shards held, 2 active sessions")
        console.log(
          `cluster figures: runner layer ${runnerMs} ms, all 300 shards ${shardsMs} ms after start, client layer ${clientMs} ms, ` +
            `first turn through the entity ${firstTurnMs} ms, replay of a completed message ${replayMs} ms, ` +
            `unary round trip p50 ${unaryP50} ms\n${text}`
        )
      }))

      // closed: the runner left the cluster (graceful), its session is no longer hosted, no app-server is left
      expect(yield* sql`SELECT address FROM cluster_runners`).toEqual([])
      expect(yield* sql`SELECT session_id FROM harness_session_owners`).toEqual([])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)
})

describe("a cluster runner draining", () => {
  it.scopedLive("on close, a running turn ends before the runner hands its shards off", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ fallback: reply.steps({ type: "pause", ms: 2000 }, { type: "message", text: "finished while draining" }) })
      const url = yield* pg().createDatabase("cluster_drain")
      const db = yield* Layer.build(ClusterDatabase.pgLayer(url))
      const sql = yield* Effect.provide(SqlClient.SqlClient, db)
      const port = yield* freePort
      const client = yield* Effect.provide(ClusterClient.ClusterClient, yield* Layer.build(ClusterRunner.clientLayer({ databaseUrl: url })))
      const runnerScope = yield* Scope.make()
      yield* Layer.buildWithScope(ClusterRunner.layer(f.settings, { databaseUrl: url, listen: { host: "127.0.0.1", port }, drainGrace: "20 seconds" }), runnerScope)

      const turn = yield* Effect.fork(ClusterClient.collect(client.startTurn({ sessionId: "drain-s1", messageId: "d-1", prompt: "take your time" })))
      // the turn is running (its request reached the model) when the runner is told to stop
      yield* Effect.repeat(f.model.requests, { until: (r) => r.length > 0, schedule: Schedule.spaced("50 millis") }).pipe(Effect.timeout("120 seconds"))
      const t0 = Date.now()
      yield* Scope.close(runnerScope, Exit.void)
      const drainMs = Date.now() - t0
      const events = yield* Fiber.join(turn)
      expect(terminal(events)).toEqual([expect.objectContaining({ type: "turn.completed", final_text: "finished while draining" })])
      const [row] = yield* sql<{ status: string }>`SELECT status FROM harness_turn_messages WHERE message_id = 'd-1'`
      expect(row!.status).toBe("completed")
      // it waited for the turn (about 2 s of it were left), then left the cluster
      expect(drainMs).toBeGreaterThan(1000)
      expect(yield* sql`SELECT address FROM cluster_runners`).toEqual([])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      console.log(`cluster figures: drain with a running turn ${drainMs} ms`)
    }), 240_000)
})
