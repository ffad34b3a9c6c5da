// A supervised branch's probe (an ephemeral fork, supervision/Branching.ts) whose cleanup failed stays in the session
// as a `cleanupFailed` record (S4), and one whose branch died before its finalizer ran stays `open`. Either is retried
// the next time the session opens its connection (its next turn or compaction, in this process or a later one): the
// probe is unsubscribed there and, once Codex answers, recorded `closed`. Any answer will do: "notLoaded" says the
// probe went with the app-server it lived on (the connection a failed cleanup retires), "unsubscribed" or
// "notSubscribed" that it was still loaded here and is let go now. A retry that fails again is logged and left for
// the next open; it never fails the work that opened the connection, which has nothing to do with the probe.
import { Effect } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { TranscriptMirrorService } from "../session/TranscriptMirror.js"

type ProbeRecord = Extract<SessionRecord, { readonly _tag: "probe" }>

/** how long one retried unsubscribe may take (the same bound as the branch's own cleanup) */
export const retryTimeout = "10 seconds"

/** Unsubscribes each pending probe on `connection` and records the ones Codex answered for as closed. */
export const retryPending = (
  connection: AppServerConnection,
  mirror: TranscriptMirrorService,
  sessionId: string,
  pending: ReadonlyArray<ProbeRecord>
): Effect.Effect<void> =>
  Effect.forEach(pending, (probe) =>
    connection.request("thread/unsubscribe", { threadId: probe.threadId }, { timeout: retryTimeout }).pipe(
      Effect.flatMap((answer) =>
        mirror.append(sessionId, {
          _tag: "probe",
          at: new Date().toISOString(),
          threadId: probe.threadId,
          sourceThreadId: probe.sourceThreadId,
          status: "closed",
          reason: `cleaned up on a later start (${answer.status})`
        })
      ),
      Effect.catchAll((error) =>
        Effect.logWarning(`session ${sessionId}: branch probe ${probe.threadId} still needs cleanup (${error.message}); retried at the next start`)
      )
    ), { discard: true })
