// Deleting a session (S16): a supervised, model-locked chat protects its native binding and cannot be deleted while
// it holds it. Archiving the canonical thread (ArchiveGuard) detaches the binding; then the session may go. Pure.
import { Effect } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import { sessionState } from "../session/SessionState.js"
import { SessionProtected } from "./errors.js"

/** Succeeds when the session may be deleted; fails with the reason otherwise. */
export const checkDeletable = (
  sessionId: string,
  records: ReadonlyArray<SessionRecord>
): Effect.Effect<void, SessionProtected> => {
  const binding = sessionState(records).binding
  return binding?.locked === true ? Effect.fail(new SessionProtected({ sessionId, threadId: binding.threadId })) : Effect.void
}
