// Issue 29, item 6: chaos with nothing lost. Three runners as processes on distinct loopback addresses (127.0.0.2, .3,
// .4; each its own state dir and CODEX_HOME), one throwaway PostgreSQL, the scripted model in this process, 20 sessions
// under steady load: each session sends a message, waits for its outcome, thinks a moment, sends the next. Meanwhile,
// every 20 s a random runner is killed with SIGKILL (its process group and its app-servers', as a machine dies) and
// started again on the same address and state dir (the machine comes back); PostgreSQL is restarted once and stalled
// 2 s once. A client whose serve dies sends the message again, with the same message id, through another runner's
// serve, as any client holding an idempotency key would.
//
// Then, for every message: exactly one outcome, and the client, the ledger and the transcript agree on it:
// - completed: the ledger says completed, the model was asked once, the mirror has its prompt, its reply and a
//   completed end once;
// - failed: the ledger says failed or lost, the mirror has no completed turn for it and no reply without an end that
//   says the turn stopped (interrupted or failed), the model was asked at most once;
// and no message left `started`, every failure said in words, every session answers one more message (none stuck).
// Decisions come from a seeded random (CHAOS_SEED=N replays them: the victims, the model's delays, which serve each
// message goes through); the seed is printed first.
import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Fiber, Schedule, Scope, Stream } from "effect"
import { afterAll, beforeAll } from "vitest"
import type { ControlEvent } from "../../schemas/control.js"
import type * as ControlClient from "../../src/control/ControlClient.js"
import { make as makeModel, reply, type ScriptedModel } from "../../src/testing/ScriptedModel.js"
import { killEverything, killMachine, lastUserText, type Runner, startRunner, tempRoot } from "../support/cluster.js"
import { connect, ledger, mirrored, mirroredEnd, terminal, transcript, until } from "../support/clusterTurns.js"
import { leftBehind } from "../support/harness.js"
import { type Random, seedFrom, stream } from "../support/seeded.js"
import { withPostgres } from "../support/withPostgres.js"

const seed = seedFrom("CHAOS_SEED")
console.log(`cluster chaos: seed ${seed} (replay with CHAOS_SEED=${seed})`)

const pg = withPostgres()
const SESSIONS = 20
const sessions = Array.from({ length: SESSIONS }, (_, i) => `x-s${String(i).padStart(2, "0")}`)
const hosts = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
/**
 * the load runs this long; a fault every 10 s: kills at 20 and 40 s, the restart at 30 s, the stall at 50 s. Every kind
 * of fault happens, a kill twice (each cuts the running turns of about a third of the sessions, whose messages are then
 * sent again through another serve); the seed varies the victims and the timing from run to run. It ran 95 s with two
 * more kills (at 60 and 80 s): about 210 CPU-s of the whole suite's 1,200 on the 2-core machine, most of it the steady
 * load's turns, and the suite has to finish in 10 minutes there with two busy loops beside it (issue 28)
 */
const LOAD_MS = 55_000
/** a message whose client gets no outcome within this is a failure of the test (stuck) */
const MESSAGE_BOUND = Duration.seconds(150)

interface Slot {
  runner: Runner
  client: ControlClient.Client | undefined
  scope: Scope.CloseableScope | undefined
}

interface Receipt {
  readonly session: string
  readonly marker: string
  readonly messageId: string
  readonly outcome: "completed" | "failed" | "reported"
  /** the terminal event's error, or the last failure's message; and the notices the client got */
  readonly said: ReadonlyArray<string>
  readonly attempts: number
}

interface Env {
  readonly scope: Scope.CloseableScope
  readonly model: ScriptedModel
  readonly database: string
  readonly root: string
  readonly slots: Array<Slot>
  /** every runner ever started, for the cleanup and the leftover check */
  readonly everyRunner: Array<Runner>
}
let env: Env | undefined
const e = () => env ?? (() => { throw new Error("the cluster did not start") })()
const db = () => e().database.replace(/^.*\//, "")
const receipts: Array<Receipt> = []
/** model requests by the message marker in their last user message */
const asks = new Map<string, number>()
const faults: Array<string> = []
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

const settled = () => until("all 300 shards held by the three runners", Effect.map(
  pg().psql(`SELECT count(DISTINCT l.objid), count(DISTINCT a.application_name) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid BETWEEN 1000001 AND 1000300`, db()),
  (out) => (out.trim() === "300|3" ? true : undefined)
), 180_000)

/** a runner (again) and a control client on its serve; a start that races a database restart is tried again */
const start = (slot: Slot | undefined, name: string, host: string) =>
  Effect.gen(function* () {
    const runner = yield* startRunner({
      name,
      host,
      database: e().database,
      providerUrl: e().model.url,
      root: e().root,
      ...(slot === undefined ? {} : { reuse: { stateDir: slot.runner.stateDir, workDir: slot.runner.workDir }, port: Number(slot.runner.address.split(":")[1]) })
    }).pipe(Effect.retry({ schedule: Schedule.spaced("1 second"), times: 20 }))
    e().everyRunner.push(runner)
    const scope = yield* Scope.make()
    const client = yield* connect(runner, scope)
    if (slot === undefined) {
      e().slots.push({ runner, client, scope })
    } else {
      slot.runner = runner
      slot.client = client
      slot.scope = scope
    }
  })

/** the model's rule for one message: its reply after a pause of the session's choosing */
const rule = (marker: string, pauseMs: number) =>
  e().model.addRule({
    whenRequestIncludes: `${marker} please answer"}]}]`,
    once: true,
    reply: reply.steps({ type: "pause", ms: pauseMs }, { type: "message", text: `re ${marker}` })
  })

/** a failed or cut attempt in one line: the failure's message, else that it was interrupted */
const failureLine = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (failure._tag === "Some") return (failure.value as { message?: string }).message ?? String(failure.value)
  return Cause.isInterruptedOnly(cause) ? "interrupted (the serve's client was closed)" : Cause.pretty(cause).split("\n")[0]!
}

const notices = (events: ReadonlyArray<ControlEvent>) =>
  events.flatMap((x) => (x.type === "reply" && x.source === "notice" ? [x.text ?? ""] : []))

/** one message to its outcome: through a random live serve, again with the same id through another when one dies */
const deliver = (session: string, marker: string, messageId: string, rng: Random) =>
  Effect.gen(function* () {
    let attempts = 0
    let last = "no attempt"
    const deadline = Date.now() + Duration.toMillis(MESSAGE_BOUND)
    while (Date.now() < deadline) {
      const live = e().slots.filter((s) => s.client !== undefined && s.runner.alive())
      if (live.length === 0) {
        yield* Effect.sleep("500 millis")
        continue
      }
      const slot = rng.pick(live)
      attempts++
      const got = yield* slot.client!.StartTurn({ session, prompt: `${marker} please answer`, message_id: messageId }).pipe(
        Stream.runCollect,
        Effect.map((events) => ({ _tag: "Events" as const, events: [...events] })),
        // every cause, interruption included: a kill closes the dead serve's client (its scope) under the streams of
        // other sessions that went through it, which then end interrupted rather than failed, by how the race went
        Effect.catchAllCause((cause) => Effect.succeed({ _tag: "Failure" as const, message: failureLine(cause) })),
        Effect.timeoutFail({ duration: Duration.millis(Math.max(1, deadline - Date.now())), onTimeout: () => new Error("timeout") }),
        Effect.catchAll(() => Effect.succeed({ _tag: "Failure" as const, message: "no outcome within the bound" }))
      )
      if (got._tag === "Events") {
        const ends = terminal(got.events)
        if (ends.length > 1) return yield* Effect.fail(new Error(`${marker}: ${ends.length} terminal events: ${JSON.stringify(got.events)}`))
        const end = ends[0]
        if (end !== undefined) {
          const said = [...notices(got.events), ...(end.type === "turn.failed" ? [end.error] : [])]
          return { session, marker, messageId, outcome: end.type === "turn.completed" ? "completed" : "failed", said, attempts } satisfies Receipt
        }
        last = `a stream without an end (${got.events.length} events)`
      } else {
        last = got.message
      }
      // the serve died under the stream, or said no: the same message again, elsewhere (its id makes that safe)
      yield* Effect.sleep("300 millis")
    }
    return { session, marker, messageId, outcome: "reported", said: [last], attempts } satisfies Receipt
  })

/** a session's steady load until `until`: a message, its outcome, a pause, the next */
const sessionLoad = (session: string, index: number, until: number) =>
  Effect.gen(function* () {
    const rng = stream(seed, 100 + index)
    for (let n = 1; Date.now() < until; n++) {
      const marker = `msg[${session}.${n}]`
      yield* rule(marker, rng.int(50, 700))
      receipts.push(yield* deliver(session, marker, `chaos-${seed}-${session}-${n}`, rng))
      yield* Effect.sleep(Duration.millis(rng.int(0, 400)))
    }
  })

/** the faults, in order, each at its time: kills at 20 and 40 s, the restart at 30 s, the stall at 50 s */
const chaos = (t0: number) =>
  Effect.gen(function* () {
    const rng = stream(seed, 0)
    const at = (ms: number) => Effect.suspend(() => Effect.sleep(Duration.millis(Math.max(0, t0 + ms - Date.now()))))
    const kill = Effect.gen(function* () {
      const slot = rng.pick(e().slots)
      const { runner } = slot
      killMachine(runner)
      const killedAt = Date.now() - t0
      slot.client = undefined
      yield* runner.exited.pipe(Effect.timeout("120 seconds"))
      if (slot.scope !== undefined) yield* Scope.close(slot.scope, Exit.void)
      yield* start(slot, runner.name, runner.address.split(":")[0]!)
      faults.push(`${seconds(killedAt)} kill -9 of runner ${runner.name} (${runner.address}); back at ${seconds(Date.now() - t0)}`)
    })
    yield* at(20_000).pipe(Effect.zipRight(kill))
    yield* at(30_000)
    yield* pg().restart("fast")
    faults.push(`${seconds(30_000)} PostgreSQL restarted; up again at ${seconds(Date.now() - t0)}`)
    yield* at(40_000).pipe(Effect.zipRight(kill))
    yield* at(50_000)
    yield* pg().stall(2_000)
    faults.push(`${seconds(50_000)} PostgreSQL stalled for 2 s`)
  })

// bounded generously: at load average 58 on two cores, three runners and their shards took longer than 300 s
beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  env = await Effect.runPromise(Effect.gen(function* () {
    // every request counted by the message it asks about (its last user message): more than the model's log keeps
    const model = yield* makeModel({
      fallback: reply.text("unscripted"),
      onRequest: (request) => {
        const marker = /msg\[[^\]]+\]/.exec(lastUserText(request.json))?.[0] ?? "(none)"
        asks.set(marker, (asks.get(marker) ?? 0) + 1)
      }
    })
    const root = yield* tempRoot()
    const database = yield* pg().createDatabase("chaos")
    return { scope, model, database, root, slots: [], everyRunner: [] } satisfies Env
  }).pipe(Scope.extend(scope)))
  const everyRunner = e().everyRunner
  process.once("exit", () => killEverything(everyRunner))
  // the first bootstraps the tables; the others join after it
  for (const [i, host] of hosts.entries()) await Effect.runPromise(start(undefined, ["A", "B", "C"][i]!, host))
  await Effect.runPromise(settled())
}, 600_000)

afterAll(async () => {
  if (env === undefined) return
  killEverything(env.everyRunner)
  for (const slot of env.slots) if (slot.scope !== undefined) await Effect.runPromise(Scope.close(slot.scope, Exit.void))
  await Effect.runPromise(Scope.close(env.scope, Exit.void))
}, 60_000)

// What this test found, each fixed with a test of its own: a staging timer that wrote a turn's reply before its outcome
// (pg-working-set), a shard lock nobody asked about any more that left a session unanswered (lock-renewal,
// pg-shard-locks), a lock taken again twice and lost with the turn's staged records (pg-working-set), and a claim
// released under a turn that ran (turn-stream). A failure prints the seed to replay it with (CHAOS_SEED=N) and, for a
// message the views disagree on, the session's mirror around it.
describe("chaos: kill -9 of runners, a PostgreSQL restart and stall, under steady load", () => {
  it.live("every message ends in exactly one outcome, and client, ledger and transcript agree; no duplicates, none stuck", () =>
    Effect.gen(function* () {
      const t0 = Date.now()
      const chaosFiber = yield* Effect.fork(chaos(t0))
      yield* Effect.forEach(sessions, (s, i) => sessionLoad(s, i, t0 + LOAD_MS), { concurrency: "unbounded", discard: true })
      yield* Fiber.join(chaosFiber)
      const loadMs = Date.now() - t0

      // none stuck: every session answers one more message
      yield* settled()
      const last = yield* Effect.forEach(sessions, (s, i) =>
        Effect.gen(function* () {
          const marker = `msg[${s}.last]`
          yield* rule(marker, 0)
          return yield* deliver(s, marker, `chaos-${seed}-${s}-last`, stream(seed, 200 + i))
        }), { concurrency: 5 })
      receipts.push(...last)
      expect(last.filter((r) => r.outcome !== "completed").map((r) => `${r.marker}: ${r.outcome} ${r.said.join(" | ")}`), "sessions that did not answer").toEqual([])

      // the three views of every message
      const rows = yield* ledger(pg(), db())
      const byId = new Map(rows.map((r) => [r.message, r] as const))
      const records = yield* transcript(pg(), db())
      const askedFor = (marker: string) => asks.get(marker) ?? 0
      const disagreements: Array<string> = []
      for (const r of receipts) {
        const row = byId.get(r.messageId)
        const mine = records.filter((x) => x.session === r.session)
        const m = mirrored(mine, r.marker)
        const end = mirroredEnd(mine, r.marker)
        const views = `client ${r.outcome}, ledger ${row?.status ?? "none"}, model asked ${askedFor(r.marker)}, ` +
          `mirror ${m.prompts} prompt(s) ${m.replies} reply(ies), turn ${end}, ${r.attempts} attempt(s)`
        // a failed turn may have its reply in the mirror only beside the end that says how it stopped (a runner fenced
        // after the model answered: the turn was interrupted, and the mirror says so); never a reply without an end,
        // never a completed turn the client and the ledger call failed
        const ok = r.outcome === "completed"
          ? row?.status === "completed" && askedFor(r.marker) === 1 && m.prompts === 1 && m.replies === 1 && end === "completed"
          : (row === undefined ? r.outcome === "reported" : row.status === "failed" || row.status === "lost") &&
            end !== "completed" && (m.replies === 0 || end === "interrupted" || end === "failed") &&
            askedFor(r.marker) <= 1 && m.prompts <= 1
        if (!ok) {
          disagreements.push(`${r.marker}: ${views}; said: ${r.said.join(" | ")}`)
          const at = mine.findIndex((x) => x.tag === "user" && x.text.includes(r.marker))
          // the session's records around it, for whoever reads the failure
          console.log(`${r.marker}, the mirror around it: ` + mine.slice(Math.max(0, at - 2), at + 8).map((x) => `${x.seq}:${x.tag}:${x.status}:${x.text.slice(0, 30)}`).join(" | "))
        }
      }
      const unreadable = receipts.flatMap((r) => r.said.filter((line) => /[{}]|EntityAddress|envelopeId|\n/.test(line)).map((line) => `${r.marker}: ${line}`))
      const started = rows.filter((r) => r.status === "started")
      const count = (o: Receipt["outcome"]) => receipts.filter((r) => r.outcome === o).length
      console.log(`cluster chaos (seed ${seed}): ${receipts.length} messages over ${seconds(loadMs)} of load: ${count("completed")} completed, ` +
        `${count("failed")} failed (${receipts.filter((r) => r.outcome === "failed").map((r) => r.said[r.said.length - 1]).filter((x, i, xs) => xs.indexOf(x) === i).slice(0, 4).join(" / ")}), ` +
        `${count("reported")} with no outcome; ${receipts.filter((r) => r.attempts > 1).length} sent again through another serve\n  ` +
        faults.join("\n  "))
      expect(disagreements, "messages whose client, ledger, model and mirror disagree").toEqual([])
      expect(count("reported"), "messages with no outcome").toBe(0)
      expect(unreadable, "outcomes not in words").toEqual([])
      expect(started.map((r) => r.message), "ledger rows left started").toEqual([])
      expect(rows.length, "ledger rows of other messages").toBe(receipts.filter((r) => byId.has(r.messageId)).length)
      // the faults all happened, and turns were cut by them
      expect(faults.length).toBe(4)
    }), 900_000)

  it.live("the runners stop on SIGTERM and leave nothing behind", () =>
    Effect.gen(function* () {
      for (const slot of e().slots) slot.runner.child.kill("SIGTERM")
      for (const slot of e().slots) expect((yield* slot.runner.exited.pipe(Effect.timeout("60 seconds"))).signal, slot.runner.stderr()).toBeNull()
      for (const r of e().everyRunner) expect(yield* leftBehind(r.stateDir), r.name).toEqual([])
    }), 120_000)
})
