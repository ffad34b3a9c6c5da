// Typed refusals of the session room: a session's recorded runtime decides where its work runs, and these say, in one
// line, why an operation will not run there or anywhere else.
import { Schema } from "effect"

/** Supervision is off: nothing is listed, branched or archived, and a supervised chat does not run (fails closed). */
export class SupervisionDisabled extends Schema.TaggedError<SupervisionDisabled>()("SupervisionDisabled", {
  reason: Schema.String
}) {
  override get message() {
    return `supervision is disabled: ${this.reason}`
  }
}

/** A supervised binding no longer matches its private connection: the turn is refused rather than moved elsewhere. */
export class SupervisedBindingDrift extends Schema.TaggedError<SupervisedBindingDrift>()("SupervisedBindingDrift", {
  sessionId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} is a supervised chat whose binding drifted (${this.reason}); refusing to continue elsewhere`
  }
}

/** The settings ask for another runtime than the one the session was made on: it is never moved (or rebound) there. */
export class RuntimeMismatch extends Schema.TaggedError<RuntimeMismatch>()("RuntimeMismatch", {
  sessionId: Schema.String,
  /** "provider" or "CODEX_HOME" */
  what: Schema.String,
  recorded: Schema.String,
  requested: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} was made on ${this.what} ${this.recorded}, not ${this.requested}; ` +
      `a session never moves: leave the ${this.what} setting out to continue it there, or start a new session`
  }
}

/** A model-locked (supervised) session keeps the model Codex restores; no switch is accepted (S13). */
export class ModelLocked extends Schema.TaggedError<ModelLocked>()("ModelLocked", {
  sessionId: Schema.String,
  model: Schema.String,
  requested: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} is a supervised chat locked to model ${this.model}; it cannot switch to ${this.requested}`
  }
}

/** A supervised chat's native thread is gone (archived, deleted or detached): it fails closed, never continues elsewhere. */
export class SupervisedThreadGone extends Schema.TaggedError<SupervisedThreadGone>()("SupervisedThreadGone", {
  sessionId: Schema.String,
  threadId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} is a supervised chat whose native thread ${this.threadId} is gone (${this.reason}); ` +
      `it does not continue on another thread: branch the source thread again`
  }
}

/** A session cannot move to a fresh thread now (`/new --carry`, `/new --thread`): supervised, or a turn is running. */
export class NewThreadRefused extends Schema.TaggedError<NewThreadRefused>()("NewThreadRefused", {
  sessionId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `session ${this.sessionId} cannot continue on a fresh thread: ${this.reason}`
  }
}
