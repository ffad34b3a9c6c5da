// Creates a directory and its missing parents, one level at a time, through the platform FileSystem. Node 20's
// `mkdir({ recursive: true })` spins forever on some paths (under /proc, for one), which would hang the CLI instead of
// reporting a bad --state-dir; walking the levels ourselves always ends.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Data, Effect } from "effect"
import * as path from "node:path"

export class NotADirectory extends Data.TaggedError("NotADirectory")<{ readonly dir: string }> {
  override get message() {
    return `not a directory: ${this.dir}`
  }
}

export const ensureDir = (
  dir: string,
  mode = 0o700
): Effect.Effect<void, PlatformError | NotADirectory, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const missing: Array<string> = []
    let current = path.resolve(dir)
    for (;;) {
      const info = yield* fs.stat(current).pipe(
        Effect.map((i) => i.type),
        Effect.catchIf((e) => e._tag === "SystemError" && e.reason === "NotFound", () => Effect.succeed(undefined))
      )
      if (info !== undefined) {
        if (info !== "Directory") return yield* new NotADirectory({ dir: current })
        break
      }
      missing.push(current)
      const parent = path.dirname(current)
      if (parent === current) break
      current = parent
    }
    for (const d of missing.reverse()) {
      yield* fs.makeDirectory(d, { mode }).pipe(
        Effect.catchIf((e) => e._tag === "SystemError" && e.reason === "AlreadyExists", () => Effect.void)
      )
    }
  })
