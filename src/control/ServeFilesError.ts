// The error of a serve file that cannot be used as it is (ServeFiles.ts), in a module of its own: the CLI's `run`
// decides whether a serve takes its turn (cli/serveTarget.ts) without loading what writes and locks those files.
import { Schema } from "effect"

export class ServeFilesError extends Schema.TaggedError<ServeFilesError>()("ServeFilesError", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.path}: ${this.reason}`
  }
}
