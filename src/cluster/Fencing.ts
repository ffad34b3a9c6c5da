// What a runner does when it fences itself (LockRenewal: PostgreSQL has not renewed its shard locks for the tolerance):
// it stops every turn it runs, withdraws every message waiting in its sessions and ends its app-servers, before the
// database drops its connections and another runner may take those sessions, so no session ever runs on two runners.
// Ending the app-servers is what makes that hold whatever else waits on the database: a turn's records cannot be written
// while the runner is cut off, and Codex lets one process write a thread (the runner taking a session on the same
// machine resumes its thread from the same CODEX_HOME, refused while this runner's app-server still has it). The next
// turn after the fence lifts starts a new app-server. Each running turn's client is told why in one line (a notice in
// the turn's own stream); the turn's outcome goes to the ledger once PostgreSQL answers again (bounded), or the runner
// that takes the session reports the message.
import { Duration, Effect, Layer, Stream } from "effect"
import { eventsVersion } from "../../schemas/events.js"
import { ClientPool } from "../appserver/ClientPool.js"
import { EventHub } from "../control/EventHub.js"
import { SessionWork } from "../harness/SessionWork.js"
import { LockRenewal } from "./LockRenewal.js"

/** the notice a fenced runner's running turns end with */
export const fenceNotice = (runner: string, seconds: number) =>
  `Runner ${runner} stopped this turn: it could not reach PostgreSQL for ${seconds} s, so another runner may take this ` +
  "session (fencing). Send the message again to retry it."

/** Watches the fence until the scope closes; needs the runner's LockRenewal, SessionWork, EventHub and ClientPool. */
export const layer = (runner: string) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const renewal = yield* LockRenewal
      const work = yield* SessionWork
      const hub = yield* EventHub
      const pool = yield* ClientPool
      const notice = fenceNotice(runner, Math.round(Duration.toSeconds(renewal.tolerance)))
      const stopAll = Effect.gen(function* () {
        const sessions = yield* work.sessions
        const running = new Set((yield* work.running).map((r) => r.sessionId))
        yield* Effect.forEach(sessions, (sessionId) =>
          Effect.gen(function* () {
            const withdrawn = yield* work.cancelQueued(sessionId)
            if (running.has(sessionId)) {
              yield* hub.publish(sessionId, { type: "reply", version: eventsVersion, session_id: sessionId, source: "notice", text: notice, media: [] })
              yield* work.interrupt(sessionId)
            }
            return withdrawn.length
          }), { concurrency: "unbounded" }).pipe(
          Effect.flatMap((withdrawn) =>
            Effect.gen(function* () {
              const keys = yield* pool.keys
              yield* Effect.forEach(keys, (key) => pool.retire(key, `runner ${runner} lost its database (fencing)`), { discard: true })
              yield* Effect.logWarning(`cluster runner ${runner} fenced: ${running.size} running turn(s) stopped, ` +
                `${withdrawn.reduce((a, n) => a + n, 0)} waiting message(s) withdrawn, ${keys.length} app-server(s) ended`)
            }))
        )
      })
      yield* renewal.fenced.changes.pipe(
        Stream.filter((isFenced) => isFenced),
        Stream.runForEach(() => stopAll),
        Effect.forkScoped
      )
    })
  )
