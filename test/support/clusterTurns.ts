// What the cluster fault tests (hiccups, partition, chaos) share: control clients on runners' serves, turns whose model
// request waits on a gate the test opens (so a turn is surely running while a fault happens, never by a clock), bounded
// polls of a receipt, and the database's view of the runners (heartbeats, shard locks, session owners, the ledger).
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Deferred, Duration, Effect, Schedule, Scope, Stream } from "effect"
import type { ControlEvent } from "../../schemas/control.js"
import * as ControlClient from "../../src/control/ControlClient.js"
import { reply, type ScriptedModel } from "../../src/testing/ScriptedModel.js"
import type { Runner } from "./cluster.js"
import type { Postgres } from "./postgres.js"

/** a bounded wait on a receipt, checked every 100 ms */
export const until = <A, E, R>(what: string, check: Effect.Effect<A | undefined, E, R>, ms = 60_000) =>
  check.pipe(
    Effect.catchAll(() => Effect.succeed(undefined)),
    Effect.flatMap((a) => (a === undefined ? Effect.fail("not yet" as const) : Effect.succeed(a))),
    Effect.retry({ schedule: Schedule.spaced("100 millis"), while: (x) => x === "not yet" }),
    Effect.timeoutFail({ duration: ms, onTimeout: () => new Error(`waited ${ms} ms for ${what}`) })
  )

export const terminal = (events: ReadonlyArray<ControlEvent>) => events.filter((x) => x.type === "turn.completed" || x.type === "turn.failed")

/** a control client on a runner's serve, closed with `scope` */
export const connect = (r: Runner, scope: Scope.Scope) =>
  ControlClient.make({ url: r.url, token: r.token }).pipe(Effect.provide(NodeSocket.layerWebSocketConstructor), Scope.extend(scope))

export interface Gate {
  readonly open: Effect.Effect<void>
  readonly wait: Effect.Effect<void>
}
export const gate = Effect.map(Deferred.make<void>(), (d): Gate => ({ open: Deferred.succeed(d, undefined).pipe(Effect.asVoid), wait: Deferred.await(d) }))

/** the model's rule for one message: its reply `re MARKER`, after the gate opens when there is one */
export const ruleFor = (model: ScriptedModel, marker: string, held?: Gate) =>
  model.addRule({
    // matched only as the request's last input item (the turn's prompt), never as history
    whenRequestIncludes: `${marker} please answer"}]}]`,
    once: true,
    reply: held === undefined
      ? reply.text(`re ${marker}`)
      : reply.steps({ type: "wait", until: held.wait }, { type: "message", text: `re ${marker}` })
  })

/** the whole stream of one message, bounded, or the failure the client got */
export const sendVia = (client: ControlClient.Client, session: string, marker: string, bound: Duration.DurationInput = "180 seconds") =>
  client.StartTurn({ session, prompt: `${marker} please answer` }).pipe(
    Stream.runCollect,
    Effect.map((events) => ({ _tag: "Events" as const, events: [...events] })),
    Effect.catchAll((failure) => Effect.succeed({ _tag: "Failure" as const, failure: failure as { readonly code?: string; readonly message?: string } })),
    Effect.timeoutFail({ duration: bound, onTimeout: () => new Error(`${marker}: no end within ${Duration.format(Duration.decode(bound))}`) })
  )

export type Sent = Effect.Effect.Success<ReturnType<typeof sendVia>>

/** the request at the model whose prompt is this message's */
export const requestWith = (model: ScriptedModel, marker: string) =>
  Effect.map(model.requests, (rs) => rs.find((r) => JSON.stringify(r.json ?? "").includes(`${marker} please answer\\"}]}]`) || r.body.includes(`${marker} please answer"}]}]`)))

/** rows of `psql -At`, split */
export const rows = (pg: Postgres, sql: string, db: string) =>
  Effect.map(pg.psql(sql, db), (out) => out.split("\n").filter((l) => l !== "").map((l) => l.split("|")))

/** the database's clock, as text PostgreSQL compares exactly */
export const dbNow = (pg: Postgres, db: string) => Effect.map(rows(pg, "SELECT now()::text", db), (r) => r[0]![0]!)

/**
 * Every runner named has renewed its heartbeat (its shard-lock refresh) after `since`, twice: a full refresh cycle ran
 * after the fault, so a runner that was going to give its shards up over it has done so.
 */
export const renewedTwice = (pg: Postgres, db: string, addresses: ReadonlyArray<string>, what: string) =>
  Effect.gen(function* () {
    for (let round = 0; round < 2; round++) {
      const since = yield* dbNow(pg, db)
      yield* until(`${what}: every runner's heartbeat renewed after ${since}`, Effect.map(
        rows(pg, `SELECT count(*) FROM cluster_runners WHERE last_heartbeat > '${since}'::timestamptz AND address IN (${addresses.map((a) => `'${a}'`).join(",")})`, db),
        (r) => (Number(r[0]![0]) === addresses.length ? true : undefined)
      ), 90_000)
    }
  })

/** session -> the runner address hosting it now (harness_session_owners) */
export const owners = (pg: Postgres, db: string) =>
  Effect.map(rows(pg, "SELECT session_id, runner FROM harness_session_owners", db), (rs) => new Map(rs.map(([s, r]) => [s!, r!] as const)))

/** message id -> ledger status, for the messages of these sessions */
export const ledger = (pg: Postgres, db: string) =>
  Effect.map(rows(pg, "SELECT message_id, session_id, status, coalesce(outcome::text, '') FROM harness_turn_messages", db), (rs) =>
    rs.map(([message, session, status, outcome]) => ({ message: message!, session: session!, status: status!, outcome: outcome ?? "" })))

/** how each runner's shards stand: advisory shard locks held per application name */
export const shardLocks = (pg: Postgres, db: string) =>
  Effect.map(rows(pg, `SELECT a.application_name, count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid BETWEEN 1000001 AND 1000300 GROUP BY 1`, db),
    (rs) => new Map(rs.map(([name, n]) => [name!, Number(n)] as const)))

export interface TranscriptRecord {
  readonly session: string
  readonly seq: number
  readonly tag: string
  readonly text: string
  readonly status: string
}

/** every session's mirror records, in order: tag, text (user, assistant, notice) and status (turn, settled) */
export const transcript = (pg: Postgres, db: string) =>
  Effect.map(
    rows(pg, `SELECT session_id, seq, tag, coalesce(record::jsonb->>'text', ''), coalesce(record::jsonb->>'status', '') FROM harness_records
      ORDER BY session_id, seq`, db),
    (rs) => rs.map(([session, seq, tag, text, status]): TranscriptRecord => ({ session: session!, seq: Number(seq), tag: tag!, text: text ?? "", status: status ?? "" }))
  )

/**
 * how the mirror ended the turn of one message: the status of the first turn record after its prompt (before the next
 * prompt), or "none"
 */
export const mirroredEnd = (records: ReadonlyArray<TranscriptRecord>, marker: string): string => {
  const at = records.findIndex((r) => r.tag === "user" && r.text.includes(marker))
  if (at < 0) return "none"
  for (const r of records.slice(at + 1)) {
    if (r.tag === "user") return "none"
    if (r.tag === "turn") return r.status
  }
  return "none"
}

/** what the mirror says of one message: its prompt once, and for a completed turn its reply once */
export const mirrored = (records: ReadonlyArray<TranscriptRecord>, marker: string) => ({
  prompts: records.filter((r) => r.tag === "user" && r.text.includes(marker)).length,
  replies: records.filter((r) => r.tag === "assistant" && r.text === `re ${marker}`).length
})
