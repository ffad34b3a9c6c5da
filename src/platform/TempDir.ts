// A temporary directory as a Scoped resource, through the platform FileSystem: created on acquire, removed
// (recursively) by its finalizer.
import { FileSystem } from "@effect/platform"
import { Effect, Schema } from "effect"
import { describeFileError } from "./fileErrors.js"

export class TempDirFailed extends Schema.TaggedError<TempDirFailed>()("TempDirFailed", { reason: Schema.String }) {
  override get message() {
    return `cannot create a temporary directory: ${this.reason}`
  }
}

export const scoped = (prefix: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    fs.makeTempDirectoryScoped({ prefix }).pipe(Effect.mapError((e) => new TempDirFailed({ reason: describeFileError(e) }))))
