// Every failure of the control API is one ControlFailure: a code a client can act on and the one line the CLI would
// print; a defect is an internal error, never a stack trace on the wire.
import { Cause, Effect, Option } from "effect"
import { ControlFailure } from "../../schemas/control.js"

const usageTags = new Set(["InvalidSessionId", "AmbiguousSessionRef", "ModelLocked"])
const notFoundTags = new Set(["SessionNotFound", "NoSessions", "ThreadNotFound"])
const refusedTags = new Set(["ArchiveBlocked", "BranchRefused", "SupervisionDisabled", "NewThreadRefused", "RuntimeRefusal", "SessionLocked"])
// the session work registry's refusals: the session's queue is full or it runs what needs it alone; the process drains
const busyTags = new Set(["QueueFull", "SessionBusy"])
const shuttingDownTags = new Set(["ShuttingDown"])

/** one failure as the API reports it; a defect is an internal error, never a stack trace on the wire */
export const failureOf = (cause: Cause.Cause<unknown>): ControlFailure => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (error instanceof ControlFailure) return error
    const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : ""
    const message = oneLine(error instanceof Error ? error.message || error.name : String(error))
    const code = usageTags.has(tag)
      ? "usage"
      : notFoundTags.has(tag)
      ? "not_found"
      : refusedTags.has(tag)
      ? "refused"
      : busyTags.has(tag)
      ? "busy"
      : shuttingDownTags.has(tag)
      ? "shutting_down"
      : "failed"
    return new ControlFailure({ code, message })
  }
  if (Cause.isInterruptedOnly(cause)) return new ControlFailure({ code: "failed", message: "interrupted" })
  const defect = Cause.squash(cause)
  return new ControlFailure({ code: "failed", message: `internal error: ${oneLine(defect instanceof Error ? defect.message : String(defect))}` })
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 2000)

/** Any failure of `effect` as the one ControlFailure the API reports. */
export const reported = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ControlFailure, R> =>
  Effect.catchAllCause(effect, (cause) => Effect.fail(failureOf(cause)))
