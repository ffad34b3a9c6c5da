// Typed failures of connected-apps admission (S2-S5), each with a one-line human message.
import { Schema } from "effect"

/** The app-server's answer about a thread's apps did not confirm what was admitted, or showed an app not admitted. */
export class AppsNotConfirmed extends Schema.TaggedError<AppsNotConfirmed>()("AppsNotConfirmed", {
  threadId: Schema.String,
  problems: Schema.Array(Schema.String),
  /**
   * what became of the thread: a provisional one "deleted" or "unsubscribed", a resumed one (the session's, kept)
   * "unloaded", or "retired" when that was not confirmed
   */
  cleanup: Schema.Literal("deleted", "unsubscribed", "unloaded", "retired")
}) {
  override get message() {
    const what = this.cleanup === "retired"
      ? "its cleanup was not confirmed, so the app-server client was retired (try again)"
      : this.cleanup === "unloaded"
      ? "the session's thread is kept, unloaded until a turn whose check passes"
      : `the provisional thread was ${this.cleanup}`
    return `apps admission failed for thread ${this.threadId}: ${this.problems.join("; ")}; ${what}`
  }
}

/** The inventory or a plugin's details could not be read before the thread was opened. */
export class AppsInventoryFailed extends Schema.TaggedError<AppsInventoryFailed>()("AppsInventoryFailed", {
  step: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `apps admission could not read ${this.step}: ${this.reason}`
  }
}

export type AppsError = AppsNotConfirmed | AppsInventoryFailed
