// A supervised branch's probe (the temporary fork its first turn pins the snapshot with, BranchStart.ts) whose cleanup
// failed stays in the session as a `cleanupFailed` record (S4), and one whose turn died before its finalizer ran stays
// `open`. Either is retried the next time the session opens its connection (its next turn or compaction, in this
// process or a later one): the probe is archived there and, once Codex answers, recorded `closed`. "No rollout found"
// is an answer too: the probe is not in the home as a live thread (an ephemeral probe of an older harness, gone with
// the app-server it lived on; or one already archived), so it is let go with an unsubscribe, whatever that says. A
// retry that fails otherwise is logged and left for the next open; it never fails the work that opened the
// connection, which has nothing to do with the probe.
import { Effect } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { TranscriptMirrorService } from "../session/TranscriptMirror.js"
import * as HarnessLog from "../platform/HarnessLog.js"

type ProbeRecord = Extract<SessionRecord, { readonly _tag: "probe" }>

/** how long one retried cleanup request may take (the same bound as the branch's own cleanup) */
export const retryTimeout = "10 seconds"

const notInHome = (error: { readonly message: string }) => /no rollout found/i.test(error.message)

/** Archives each pending probe on `connection` and records the ones Codex answered for as closed. */
export const retryPending = (
  connection: AppServerConnection,
  mirror: TranscriptMirrorService,
  sessionId: string,
  pending: ReadonlyArray<ProbeRecord>
): Effect.Effect<void> =>
  Effect.forEach(pending, (probe) =>
    connection.request("thread/archive", { threadId: probe.threadId }, { timeout: retryTimeout }).pipe(
      Effect.as("archived"),
      Effect.catchIf(notInHome, () =>
        connection.request("thread/unsubscribe", { threadId: probe.threadId }, { timeout: retryTimeout }).pipe(
          Effect.map((answer) => `not in the home as a live thread; ${answer.status}`)
        )),
      Effect.flatMap((outcome) =>
        mirror.append(sessionId, {
          _tag: "probe",
          at: new Date().toISOString(),
          threadId: probe.threadId,
          sourceThreadId: probe.sourceThreadId,
          status: "closed",
          reason: `cleaned up on a later start (${outcome})`
        })
      ),
      Effect.catchAll((error) =>
        HarnessLog.warning(`session ${sessionId}: branch probe ${probe.threadId} still needs cleanup (${error.message}); retried at the next start`)
      )
    ), { discard: true })
