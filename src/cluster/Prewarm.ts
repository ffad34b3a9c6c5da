// Failover without a cold start: when a runner dies (RunnerLiveness sees its connections gone), every survivor starts
// the app-servers the dead runner's sessions will need, while their shards move, so the first message of a moved session
// finds one ready. A moved session continues on its recorded runtime (its CODEX_HOME, issue 19), which no survivor had
// an app-server for; starting one (spawn, initialize) was about a second of the failover, more under load.
//
// Which runtimes: those of the dead runner's most recent sessions (harness_session_owners), at most `maxRuntimes`
// distinct ones (a runner's sessions usually share one CODEX_HOME). Each is leased for `hold` (the shards move and the
// first messages arrive within it), then left to the pool's idle time like any other app-server. Best effort: nothing
// here can fail or delay anything else; a survivor that does not get the session just lets its app-server idle out.
import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect } from "effect"
import { isRemote } from "../session/Runtimes.js"
import { SessionRuntime } from "../session/SessionRuntime.js"
import { TranscriptMirror } from "../session/TranscriptMirror.js"

export interface PrewarmOptions {
  /** how long each started app-server is leased; default 60 s */
  readonly hold?: Duration.DurationInput | undefined
  /** at most this many app-servers per dead runner; default 2 */
  readonly maxRuntimes?: number | undefined
}

/** `onAbsent` for RunnerLiveness: returns at once, the work goes on in the runner's scope */
export const make = (options: PrewarmOptions = {}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const mirror = yield* TranscriptMirror
    const runtimes = yield* SessionRuntime
    const scope = yield* Effect.scope
    const hold = Duration.decode(options.hold ?? "60 seconds")
    const maxRuntimes = options.maxRuntimes ?? 2

    const warm = (deadRunner: string) =>
      Effect.gen(function* () {
        const rows = yield* sql<{ session_id: string }>`SELECT session_id FROM harness_session_owners WHERE runner = ${deadRunner}
          ORDER BY updated_at DESC LIMIT 10`
        const started = new Set<string>()
        for (const { session_id: sessionId } of rows) {
          if (started.size >= maxRuntimes) break
          const resolved = yield* mirror.read(sessionId).pipe(
            Effect.flatMap(({ state }) => runtimes.resolve(sessionId, state)),
            Effect.option
          )
          if (resolved._tag === "None" || isRemote(resolved.value.runtime) || started.has(resolved.value.runtime.poolKey)) continue
          started.add(resolved.value.runtime.poolKey)
          const { runtime, spec } = resolved.value
          const t0 = Date.now()
          yield* Effect.scoped(
            runtimes.leaseRuntime(runtime, spec).pipe(
              Effect.zipRight(Effect.suspend(() => Effect.logInfo(`runner ${deadRunner} is gone: an app-server for its sessions ` +
                `(${runtime.poolKey}) is ready in ${Date.now() - t0} ms`))),
              Effect.zipRight(Effect.sleep(hold))
            )
          ).pipe(
            Effect.catchAllCause((cause) => Effect.logDebug(`prewarm of an app-server for ${runtime.poolKey} failed`, cause)),
            Effect.forkIn(scope)
          )
        }
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logDebug(`prewarm for the sessions of ${deadRunner} failed`, cause)),
        Effect.forkIn(scope),
        Effect.asVoid
      )
    return warm
  })
