// What the harness reads and obeys (its state dir, its config file) must be the invoking user's alone: a directory or
// file another user owns, or that group or others may write, could make it run commands it did not ask for (a config
// file declares MCP server commands). Such a path is refused with one line saying how to fix it. A path that does not
// exist yet is fine: the harness creates it privately.
import { FileSystem } from "@effect/platform"
import { Effect, Option, Schema } from "effect"

export class UntrustedPath extends Schema.TaggedError<UntrustedPath>()("UntrustedPath", {
  what: Schema.String,
  path: Schema.String,
  problem: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `refusing the ${this.what} ${this.path}: ${this.problem}; ${this.fix}`
  }
}

/** Refuses `file` unless it is missing, or owned by this user and not writable by group or others. */
export const checkPrivate = (what: string, file: string): Effect.Effect<void, UntrustedPath, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const info = yield* fs.stat(file).pipe(Effect.option)
    if (Option.isNone(info) || typeof process.getuid !== "function") return
    const me = process.getuid()
    const owner = Option.getOrUndefined(info.value.uid)
    if (owner !== undefined && owner !== me) {
      return yield* new UntrustedPath({
        what,
        path: file,
        problem: `it belongs to uid ${owner}, not to you (uid ${me})`,
        fix: `use one of your own (${what === "state dir" ? "--state-dir or $CODEX_HARNESS_HOME" : "--config"})`
      })
    }
    const mode = info.value.mode & 0o777
    if ((mode & 0o022) !== 0) {
      return yield* new UntrustedPath({
        what,
        path: file,
        problem: `group or others may write it (mode ${mode.toString(8).padStart(3, "0")})`,
        fix: `run: chmod go-w ${file}`
      })
    }
  })
