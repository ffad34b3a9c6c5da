// Typed refusals and failures of the supervision room (S14-S17). Each carries a one-line human `message` with the
// reason, so the CLI prints it as is and an embedder can show it next to the row it refused.
import { Schema } from "effect"

export { SupervisedBindingDrift, SupervisionDisabled } from "../session/errors.js"

/** Listing or a paginated query could not be completed safely (an error, a cycle, a repeated cursor, a limit). */
export class EnumerationFailed extends Schema.TaggedError<EnumerationFailed>()("EnumerationFailed", {
  what: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.what} could not be enumerated safely: ${this.reason}`
  }
}

export class ThreadNotFound extends Schema.TaggedError<ThreadNotFound>()("ThreadNotFound", {
  threadId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `thread ${this.threadId} is not in the catalog (${this.reason})`
  }
}

/** Continue as branch refused (S15-S17): the source is active, remote, archived, or the session is taken. */
export class BranchRefused extends Schema.TaggedError<BranchRefused>()("BranchRefused", {
  threadId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot branch thread ${this.threadId}: ${this.reason}`
  }
}

/** Archive refused (S16, S17), with the reason: active, owned, unconfirmed, remote, or not enumerable. */
export class ArchiveBlocked extends Schema.TaggedError<ArchiveBlocked>()("ArchiveBlocked", {
  threadId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot archive thread ${this.threadId}: ${this.reason}`
  }
}

/** A supervised (model-locked) chat still protects its native binding (S16). */
export class SessionProtected extends Schema.TaggedError<SessionProtected>()("SessionProtected", {
  sessionId: Schema.String,
  threadId: Schema.String
}) {
  override get message() {
    return `cannot delete session ${this.sessionId}: it is a supervised chat protecting native thread ${this.threadId}; archive that thread first`
  }
}
