// Idempotency of a session's turns across runners (issue 19, item 3). @effect/cluster delivers at least once: a message
// that was running on a runner that died runs again on the runner that takes its shard over (CLUSTER-NOTES trap 8), and a
// client retries a send that hit a just-killed runner (trap 6). Each Turn message therefore carries an idempotency key
// (its messageId), recorded in `harness_turn_messages` as `started` by this runner, committed before the turn is even
// leased (so before turn/start is sent). A message that finds its key already there never runs again:
// - completed / failed / lost: its stored terminal events are replayed;
// - started by this process and still running: it waits for that turn and replays its outcome;
// - started by another runner that is still alive (a partition, a drain in progress): it waits for it within a bound;
// - started by a runner that is gone (or by an earlier process at this address, or past the bound): when the session's
//   mirror holds that turn's end (the runner died after the turn ended, before its outcome reached the ledger), that end
//   is its outcome: a completed turn is reported completed with its reply. Otherwise it is marked `lost` and reported as
//   a turn that failed with status "interrupted", with a notice naming the failover. Never silently dropped, never run
//   twice, never reported failed when it completed.
// An outcome is written with retries for `finishBound` (a database restart or stall on the way), and SessionEntity holds
// the turn's terminal event back from its client until it is written (or that bound passed), so what a client was told
// is what the ledger says.
// `runner` is the runner's address and this process's incarnation ("HOST:PORT/uuid"), so a runner restarted on the same
// address is told apart from the process that recorded the message.
// A turn's outcome goes into the statement that writes the turn's closing records to the session's transcript, when
// the session store stages them (WorkingSets, PgWorkingSet.ts): one statement where there were two, and the
// transcript's end of a turn and its outcome here are written together or not at all.
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Data, Deferred, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import * as crypto from "node:crypto"
import { ControlEvent } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import { type Companion, WorkingSets } from "../session/PgWorkingSet.js"
import { applicationNameOf } from "./ClusterDatabase.js"

export type LedgerStatus = "started" | "completed" | "failed" | "lost"

/** What a Turn message is to do. */
export type Claim =
  /** the key is new: this runner runs the turn, and ends it with `finish` (or `release` when it never started) */
  | { readonly _tag: "Fresh" }
  /** the key has an outcome: replay it */
  | { readonly _tag: "Replay"; readonly status: Exclude<LedgerStatus, "started">; readonly events: ReadonlyArray<ControlEvent> }
  /** this call found the key started by a runner that is gone, and marked it lost: report it (and say so once) */
  | { readonly _tag: "Lost"; readonly previousRunner: string; readonly events: ReadonlyArray<ControlEvent> }

export class LedgerError extends Data.TaggedError("LedgerError")<{ readonly message: string }> {}

export interface TurnLedgerService {
  /** "HOST:PORT/incarnation" */
  readonly runner: string
  readonly claim: (messageId: string, sessionId: string) => Effect.Effect<Claim, LedgerError>
  /** the turn has ids (best effort: they make a later `lost` report name the turn) */
  readonly started: (messageId: string, threadId: string | undefined, turnId: string) => Effect.Effect<void>
  /** the turn's terminal events (its replies and its turn.completed / turn.failed), recorded as its outcome */
  readonly finish: (messageId: string, events: ReadonlyArray<ControlEvent>) => Effect.Effect<void>
  /** the turn was refused before it started (busy, draining): the key is forgotten, so a retry can run it */
  readonly release: (messageId: string) => Effect.Effect<void>
}

export class TurnLedger extends Context.Tag("codex-harness/cluster/TurnLedger")<TurnLedger, TurnLedgerService>() {}

export interface TurnLedgerOptions {
  /** this runner's address, HOST:PORT */
  readonly address: string
  /** how long a message started by a live runner is waited for before it is reported lost */
  readonly ownerWait?: Duration.DurationInput | undefined
  /** how long a redelivered message waits for the same turn running in this process */
  readonly localWait?: Duration.DurationInput | undefined
  /** a runner whose heartbeat is older than this is gone (the cluster's shardLockExpiration) */
  readonly heartbeatExpiry?: Duration.DurationInput | undefined
  /** how long a message this runner started but does not know as running is read again before it is reported lost */
  readonly unknownWait?: Duration.DurationInput | undefined
}

const Outcome = Schema.Array(ControlEvent)
const decodeOutcome = Schema.decodeUnknownOption(Outcome)

interface Row {
  readonly session_id: string
  readonly status: string
  readonly runner: string | null
  readonly thread_id: string | null
  readonly turn_id: string | null
  readonly outcome: unknown
}

const addressOf = (runner: string) => runner.split("/")[0] ?? runner

/** completed when the events hold a turn.completed; every other ending is a failure */
export const statusOf = (events: ReadonlyArray<ControlEvent>): "completed" | "failed" =>
  events.some((e) => e.type === "turn.completed") ? "completed" : "failed"

/** the terminal events of a message whose runner died under it */
export const lostEvents = (
  sessionId: string,
  messageId: string,
  previousRunner: string,
  by: string,
  ids: { readonly threadId?: string | null | undefined; readonly turnId?: string | null | undefined }
): ReadonlyArray<ControlEvent> => {
  const from = addressOf(previousRunner)
  const notice = `Runner ${from} stopped while it ran the turn of message ${messageId}; the session moved to runner ${addressOf(by)} ` +
    "(failover). That turn was not run again: send the message again to retry it."
  return [
    { type: "reply", version: eventsVersion, session_id: sessionId, source: "notice", text: notice, media: [] },
    {
      type: "turn.failed",
      version: eventsVersion,
      session_id: sessionId,
      ...(ids.threadId != null ? { thread_id: ids.threadId } : {}),
      ...(ids.turnId != null ? { turn_id: ids.turnId } : {}),
      status: "interrupted",
      error: `failover: runner ${from} stopped while this turn ran; it was not run again on ${addressOf(by)}`,
      final_text: null,
      usage: null
    }
  ]
}

/** how long a turn's outcome is tried again while the database does not take it */
export const finishBound = Duration.seconds(60)

interface MirroredEnd {
  readonly tag: string
  readonly thread_id: string | null
  readonly text: string | null
  readonly status: string | null
  readonly error: string | null
}

/** the end of a turn as the session's mirror recorded it (its `turn` record, and its reply), as control events */
export const mirroredEvents = (
  sessionId: string,
  turnId: string,
  records: ReadonlyArray<MirroredEnd>
): ReadonlyArray<ControlEvent> | undefined => {
  const end = records.find((r) => r.tag === "turn")
  if (end === undefined) return undefined
  const replyText = records.find((r) => r.tag === "assistant")?.text ?? null
  const refs = { session_id: sessionId, thread_id: end.thread_id ?? "", turn_id: turnId }
  const replies: Array<ControlEvent> = replyText === null
    ? []
    : [{ type: "reply", version: eventsVersion, session_id: sessionId, source: "final", text: replyText, media: [] }]
  return [
    ...replies,
    end.status === "completed"
      ? { type: "turn.completed", version: eventsVersion, ...refs, final_text: replyText, usage: null }
      : {
        type: "turn.failed",
        version: eventsVersion,
        ...refs,
        status: end.status === "interrupted" ? "interrupted" : "failed",
        error: end.error ?? `the turn ended ${end.status ?? "without a status"}`,
        final_text: replyText,
        usage: null
      }
  ]
}

export const make = (options: TurnLedgerOptions) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const workingSets = yield* Effect.serviceOption(WorkingSets)
    const scope = yield* Effect.scope
    const runner = `${options.address}/${crypto.randomUUID()}`
    // longer than the entity termination timeout (15 s) a live owner may spend finishing a turn on a moved shard
    const ownerWait = Duration.decode(options.ownerWait ?? "30 seconds")
    const localWait = Duration.decode(options.localWait ?? "30 minutes")
    const unknownWait = Duration.toMillis(options.unknownWait ?? Duration.sum(finishBound, Duration.seconds(5)))
    const expirySeconds = Math.max(1, Math.ceil(Duration.toSeconds(options.heartbeatExpiry ?? "4 seconds")))
    // the turns this process runs, by message id: a redelivery in this process waits on them
    // (`released`: the attempt was refused before it started, so the waiter records the message itself)
    const running = new Map<string, Deferred.Deferred<ReadonlyArray<ControlEvent> | "released">>()
    // their sessions: the outcome is written with the session's staged records
    const sessionOf = new Map<string, string>()

    const failed = (what: string) => (error: unknown) =>
      new LedgerError({ message: `turn ledger: ${what}: ${error instanceof Error ? error.message : String(error)}` })

    const insert = (messageId: string, sessionId: string) =>
      sql<{ message_id: string }>`INSERT INTO harness_turn_messages (message_id, session_id, status, runner, created_at, updated_at)
        VALUES (${messageId}, ${sessionId}, 'started', ${runner}, now(), now())
        ON CONFLICT (message_id) DO NOTHING RETURNING message_id`.pipe(Effect.mapError(failed("record")))

    const read = (messageId: string) =>
      sql<Row>`SELECT session_id, status, runner, thread_id, turn_id, outcome FROM harness_turn_messages
        WHERE message_id = ${messageId}`.pipe(Effect.map((rows) => rows[0]), Effect.mapError(failed("read")))

    // registered, healthy, heartbeat within the expiry, and still connected: a killed runner's connections end with its
    // process (PostgreSQL frees its shard locks at once), so its death is seen at once, not only at heartbeat expiry
    const alive = (address: string) =>
      sql<{ alive: number }>`SELECT 1 AS alive FROM cluster_runners WHERE address = ${address} AND healthy
        AND last_heartbeat > now() - make_interval(secs => ${expirySeconds})
        AND EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = ${applicationNameOf(address)})`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.mapError(failed("runner liveness"))
      )

    /** the turn's end in the session's mirror, when the runner that ran it recorded one */
    const mirroredEnd = (sessionId: string, row: Row) =>
      row.turn_id === null
        ? Effect.succeed(undefined)
        : sql<MirroredEnd>`SELECT tag, record::jsonb->>'threadId' AS thread_id, record::jsonb->>'text' AS text, record::jsonb->>'status' AS status, record::jsonb->>'error' AS error
            FROM harness_records WHERE session_id = ${sessionId} AND tag IN ('turn', 'assistant')
              AND record::jsonb->>'turnId' = ${row.turn_id} ORDER BY seq`.pipe(
            Effect.map((records) => mirroredEvents(sessionId, row.turn_id!, records)),
            Effect.mapError(failed("read the mirror"))
          )

    const markLost = (messageId: string, sessionId: string, row: Row, previousRunner: string) =>
      Effect.gen(function* () {
        const ended = yield* mirroredEnd(sessionId, row)
        const events = ended ?? lostEvents(sessionId, messageId, previousRunner, runner, { threadId: row.thread_id, turnId: row.turn_id })
        const status = ended === undefined ? "lost" : statusOf(ended)
        // only if it is still the same started record: a late finish or another runner's report wins
        const updated = yield* sql`UPDATE harness_turn_messages SET status = ${status}, outcome = ${JSON.stringify(events)}::jsonb,
            updated_at = now()
          WHERE message_id = ${messageId} AND status = 'started' AND runner = ${previousRunner} RETURNING message_id`.pipe(
          Effect.mapError(failed("mark lost"))
        )
        if (updated.length === 0) return undefined
        yield* Effect.logDebug(`turn ledger: message ${messageId} of session ${sessionId}, started by ${previousRunner}, ` +
          (ended === undefined ? "recorded lost" : `recorded ${statusOf(ended)} from the transcript`) + ` (turn ${row.turn_id ?? "unknown"})`)
        return ended === undefined
          ? ({ _tag: "Lost", previousRunner, events } satisfies Claim)
          : ({ _tag: "Replay", status: statusOf(ended), events: ended } satisfies Claim)
      })

    const replay = (messageId: string, sessionId: string, status: Exclude<LedgerStatus, "started">, outcome: unknown): Claim => {
      const events = decodeOutcome(outcome)
      if (events._tag === "Some") return { _tag: "Replay", status, events: events.value }
      // an outcome this version cannot read still ends the stream with what became of the message
      return {
        _tag: "Replay",
        status,
        events: [{
          type: "turn.failed",
          version: eventsVersion,
          session_id: sessionId,
          status: status === "completed" ? "failed" : "interrupted",
          error: `message ${messageId} already ran (${status}); its recorded outcome could not be read`,
          final_text: null,
          usage: null
        }]
      }
    }

    const claim = (messageId: string, sessionId: string): Effect.Effect<Claim, LedgerError> =>
      Effect.gen(function* () {
        const startedAt = Date.now()
        // the warning for a message of this runner's it does not know as running, said once per claim
        let warned = false
        while (true) {
          if ((yield* insert(messageId, sessionId)).length > 0) {
            running.set(messageId, yield* Deferred.make<ReadonlyArray<ControlEvent> | "released">())
            sessionOf.set(messageId, sessionId)
            yield* Effect.logDebug(`turn ledger: message ${messageId} of session ${sessionId} claimed`)
            return { _tag: "Fresh" } satisfies Claim
          }
          const row = yield* read(messageId)
          // released meanwhile (a refused attempt): try to record it again
          if (row === undefined) continue
          if (row.session_id !== sessionId) {
            return yield* new LedgerError({ message: `message id ${messageId} belongs to session ${row.session_id}, not ${sessionId}` })
          }
          if (row.status === "completed" || row.status === "failed" || row.status === "lost") {
            return replay(messageId, sessionId, row.status, row.outcome)
          }
          const owner = row.runner ?? "(unknown runner)"
          if (owner === runner) {
            const turn = running.get(messageId)
            if (turn !== undefined) {
              // the waits stay interruptible even when the caller claims uninterruptibly (SessionEntity registers the
              // release of a Fresh claim in the same step): a caller that leaves while waiting claimed nothing
              const waited = yield* Deferred.await(turn).pipe(Effect.timeoutOption(localWait), Effect.interruptible)
              const events = waited._tag === "Some" ? waited.value : undefined
              if (events === "released") continue
              if (events !== undefined) return { _tag: "Replay", status: statusOf(events), events } satisfies Claim
            }
            // ours but not known to be running here: its outcome may still be on its way (the chaos test saw a turn of
            // this runner complete after a retry of its message had found it unknown here and reported it lost), so
            // the record is read again until that outcome's bound has passed, then reported
            if (turn === undefined && Date.now() - startedAt < unknownWait) {
              if (!warned) {
                warned = true
                yield* Effect.logWarning(`turn ledger: message ${messageId} was started by this runner, which does not know it as running; ` +
                  "its record is read again until an outcome arrives or the bound passes")
              }
              yield* Effect.sleep("250 millis").pipe(Effect.interruptible)
              continue
            }
            yield* Effect.logDebug(`turn ledger: message ${messageId} was started by this runner and ` +
              (turn === undefined ? "is not running here" : "was waited for past the bound"))
          } else if (addressOf(owner) !== options.address && Date.now() - startedAt < Duration.toMillis(ownerWait)) {
            // another runner: wait for it while it lives (it may be draining, or cut off from its peers)
            if (yield* alive(addressOf(owner))) {
              yield* Effect.sleep("250 millis").pipe(Effect.interruptible)
              continue
            }
          }
          const lost = yield* markLost(messageId, sessionId, row, owner)
          if (lost !== undefined) return lost
          // the row changed under us: read it again, not at once
          yield* Effect.sleep("100 millis").pipe(Effect.interruptible)
        }
      }).pipe(Effect.withSpan("TurnLedger.claim", { attributes: { messageId, sessionId } }))

    // lazy: it runs when the outcome (or the release) is written, not when `finish` is called. Called eagerly inside
    // `Effect.ensuring(settle(...))`, it forgot the turn before its outcome's write began, and a retry of the message
    // arriving during that write (seconds under load, up to finishBound in a database stall) found the message started
    // by this runner and not running here, and reported a turn that was completing lost (the chaos test)
    const settle = (messageId: string, events: ReadonlyArray<ControlEvent> | "released") =>
      Effect.suspend(() => {
        const turn = running.get(messageId)
        running.delete(messageId)
        sessionOf.delete(messageId)
        return turn === undefined
          ? Effect.logDebug(`turn ledger: message ${messageId} settled, but was not running here`)
          : Deferred.succeed(turn, events).pipe(Effect.asVoid)
      })

    const stage = (messageId: string) => {
      const sessionId = sessionOf.get(messageId)
      return Option.isNone(workingSets) || sessionId === undefined ? Effect.void : workingSets.value.stage(sessionId, messageId)
    }
    /** the statement, with the session's staged records when its store stages them here (under its fence), else alone */
    const withStaged = (messageId: string, statement: Companion): Effect.Effect<number, unknown> => {
      const sessionId = sessionOf.get(messageId)
      const alone = Effect.suspend(() => Effect.map(statement(sql.literal("TRUE")), (rows) => rows.length))
      return Option.isNone(workingSets) || sessionId === undefined
        ? alone
        : workingSets.value.flushWith(sessionId, messageId, statement).pipe(Effect.flatMap((rows) => (rows === undefined ? alone : Effect.succeed(rows))))
    }

    const service: TurnLedgerService = {
      runner,
      claim,
      started: (messageId, threadId, turnId) =>
        // from here the turn's records wait for its outcome (staged); the ids, which a lost report names, are written
        // beside the turn: the turn's events do not wait for them
        stage(messageId).pipe(Effect.zipRight(sql`UPDATE harness_turn_messages SET thread_id = ${threadId ?? null}, turn_id = ${turnId}, updated_at = now()
          WHERE message_id = ${messageId} AND runner = ${runner}`.pipe(
          Effect.catchAll((error) => Effect.logWarning(`turn ledger: could not record turn ${turnId} of message ${messageId}: ${error.message}`)),
          Effect.forkIn(scope)
        )), Effect.asVoid),
      finish: (messageId, events) =>
        withStaged(messageId, (guard) => sql`UPDATE harness_turn_messages SET status = ${statusOf(events)}, outcome = ${JSON.stringify(events)}::jsonb,
            updated_at = now()
          WHERE message_id = ${messageId} AND status = 'started' AND runner = ${runner} AND ${guard} RETURNING message_id`).pipe(
          // a restart or a stall of the database on the way is waited out, within a bound
          Effect.retry(Schedule.exponential("200 millis").pipe(Schedule.union(Schedule.spaced("2 seconds")), Schedule.upTo(finishBound))),
          Effect.flatMap((rows) =>
            rows === 0
              ? Effect.logWarning(`turn ledger: the outcome of message ${messageId} found its record no longer started by this runner (reported lost or released meanwhile)`)
              : Effect.logDebug(`turn ledger: message ${messageId} ${statusOf(events)}`)
          ),
          Effect.catchAll((error) => Effect.logError(`turn ledger: the outcome of message ${messageId} was not recorded: ${error instanceof Error ? error.message : String(error)}`)),
          Effect.onInterrupt(() => Effect.logWarning(`turn ledger: recording the outcome of message ${messageId} was interrupted`)),
          Effect.ensuring(settle(messageId, events)),
          Effect.asVoid,
          Effect.withSpan("TurnLedger.finish")
        ),
      release: (messageId) =>
        Effect.logDebug(`turn ledger: message ${messageId} released before its turn started`).pipe(
          Effect.zipRight(sql`DELETE FROM harness_turn_messages WHERE message_id = ${messageId} AND status = 'started' AND runner = ${runner}`),
          Effect.catchAll((error) => Effect.logWarning(`turn ledger: could not release message ${messageId}: ${error.message}`)),
          Effect.ensuring(settle(messageId, "released")),
          Effect.asVoid
        )
    }
    return service
  })

export const layer = (options: TurnLedgerOptions): Layer.Layer<TurnLedger, never, SqlClient.SqlClient> =>
  Layer.scoped(TurnLedger, make(options))
