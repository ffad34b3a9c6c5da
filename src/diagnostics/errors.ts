// The ways a diagnostics call ends without doing what was asked: each is one line for the CLI.
import { Schema } from "effect"

/** S36: the upload was denied or got no answer; nothing was sent and no id is shown. */
export class DiagnosticsNotApproved extends Schema.TaggedError<DiagnosticsNotApproved>()("DiagnosticsNotApproved", {
  decision: Schema.String,
  detail: Schema.String
}) {
  override get message() {
    return `diagnostics not sent: ${this.decision === "deny" ? "denied" : "no answer"}${this.detail === "" ? "" : ` (${this.detail})`}; nothing left this machine`
  }
}

/** The session has no Codex thread to upload. */
export class NoDiagnosticsThread extends Schema.TaggedError<NoDiagnosticsThread>()("NoDiagnosticsThread", { sessionId: Schema.String }) {
  override get message() {
    return `session ${this.sessionId} has no Codex thread: there is nothing of it to upload (run without --session for Codex's logs alone)`
  }
}

/** Codex refused or could not do the upload (feedback disabled, OpenAI unreachable): the app-server's own error. */
export class DiagnosticsUploadFailed extends Schema.TaggedError<DiagnosticsUploadFailed>()("DiagnosticsUploadFailed", {
  threadId: Schema.optional(Schema.String),
  reason: Schema.String,
  /** threads whose upload did succeed before or after the failure */
  uploaded: Schema.Array(Schema.String)
}) {
  override get message() {
    return `the Codex feedback upload${this.threadId === undefined ? "" : ` of thread ${this.threadId}`} failed: ${this.reason}`
  }
}

/** The enumeration of a thread's spawned sub-agent threads failed; nothing was sent. */
export class SubThreadsUnknown extends Schema.TaggedError<SubThreadsUnknown>()("SubThreadsUnknown", {
  threadId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not list the sub-agent threads of ${this.threadId}: ${this.reason} (nothing was sent; --thread-only uploads the thread alone)`
  }
}

export class BundleExists extends Schema.TaggedError<BundleExists>()("BundleExists", { file: Schema.String }) {
  override get message() {
    return `${this.file} already exists: a diagnostics bundle is never written over a file`
  }
}

export class BundleWriteFailed extends Schema.TaggedError<BundleWriteFailed>()("BundleWriteFailed", { file: Schema.String, reason: Schema.String }) {
  override get message() {
    return `could not write the diagnostics bundle ${this.file}: ${this.reason}`
  }
}
