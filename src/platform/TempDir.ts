// A temporary directory as a Scoped resource: created on acquire, removed (recursively) by its finalizer.
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

export class TempDirFailed extends Schema.TaggedError<TempDirFailed>()("TempDirFailed", { reason: Schema.String }) {
  override get message() {
    return `cannot create a temporary directory: ${this.reason}`
  }
}

export const scoped = (prefix: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => fs.mkdtempSync(path.join(os.tmpdir(), prefix)),
      catch: (e) => new TempDirFailed({ reason: e instanceof Error ? e.message : String(e) })
    }),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
