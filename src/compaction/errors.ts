// Typed failures of a manual compaction (S37), each with a one-line human message.
import type { AppsError } from "../apps/errors.js"
import type { BootstrapFailed } from "../turn/BootstrapProjection.js"
import { Schema } from "effect"
import type { LeaseError } from "../appserver/ClientPool.js"
import { AppServerExited, ConnectionRetired, type RequestError } from "../appserver/errors.js"
import type { RuntimeRefusal } from "../session/SessionRuntime.js"
import type { SessionHoldError } from "../session/SessionStore.js"
import type { MirrorError } from "../session/TranscriptMirror.js"

export class NothingToCompact extends Schema.TaggedError<NothingToCompact>()("NothingToCompact", {
  sessionId: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} has no Codex thread yet: nothing to compact`
  }
}

export class CompactionThreadGone extends Schema.TaggedError<CompactionThreadGone>()("CompactionThreadGone", {
  sessionId: Schema.String,
  threadId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the Codex thread ${this.threadId} of session ${this.sessionId} no longer exists (${this.reason}): nothing to compact`
  }
}

/** Codex refused the compaction, or its turn ended failed/interrupted (or without a compaction item) before it completed. */
export class CompactionFailed extends Schema.TaggedError<CompactionFailed>()("CompactionFailed", {
  threadId: Schema.String,
  turnId: Schema.optional(Schema.String),
  /** the compaction turn's status, or "rejected" when thread/compact/start itself failed */
  status: Schema.String,
  message: Schema.String
}) {}

export class CompactionTimedOut extends Schema.TaggedError<CompactionTimedOut>()("CompactionTimedOut", {
  threadId: Schema.String,
  turnId: Schema.optional(Schema.String),
  timeoutMs: Schema.Number,
  /** the interrupt was not confirmed within the grace period: the shared client was retired */
  retired: Schema.Boolean,
  /** on a remote connection: the session's binding to the thread was dropped as well */
  detached: Schema.Boolean
}) {
  override get message() {
    const after = `the compaction of thread ${this.threadId} did not finish within ${Math.round(this.timeoutMs / 1000)} s`
    if (!this.retired) return `${after}; it was interrupted`
    return `${after} and its interrupt was not confirmed: the app-server client was retired${
      this.detached ? " and the session's thread binding detached" : ""
    }`
  }
}

/** The app-server connection ended (process exit, crash, retirement) before the compaction turn was terminal. */
export class CompactionClientClosed extends Schema.TaggedError<CompactionClientClosed>()("CompactionClientClosed", {
  threadId: Schema.String,
  cause: Schema.Union(AppServerExited, ConnectionRetired),
  detached: Schema.Boolean
}) {
  override get message() {
    return `the app-server client closed during the compaction of thread ${this.threadId}: ${this.cause.message}`
  }
}

export type CompactionError =
  | NothingToCompact
  | CompactionThreadGone
  | CompactionFailed
  | CompactionTimedOut
  | CompactionClientClosed
  | LeaseError
  | RequestError
  | MirrorError
  | SessionHoldError
  | RuntimeRefusal
  | AppsError
  | BootstrapFailed
