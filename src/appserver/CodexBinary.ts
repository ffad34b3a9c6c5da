// Finds the codex executable: an explicit path wins; otherwise the first of CodexCandidates that exists.
import { FileSystem } from "@effect/platform"
import { Effect, Schema } from "effect"
import { type CodexCommand, candidates } from "./CodexCandidates.js"

export { type CodexCommand, candidates } from "./CodexCandidates.js"

export class CodexBinaryNotFound extends Schema.TaggedError<CodexBinaryNotFound>()("CodexBinaryNotFound", {
  searched: Schema.Array(Schema.String)
}) {
  override get message() {
    return `codex binary not found (looked in: ${this.searched.join(", ")}); install @openai/codex or pass --codex-bin`
  }
}

/** Resolves the command to run; `explicit` (a --codex-bin path) must exist. */
export const resolve = (explicit?: string): Effect.Effect<CodexCommand, CodexBinaryNotFound, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const exists = (file: string) => fs.exists(file).pipe(Effect.orElseSucceed(() => false))
    if (explicit !== undefined) {
      if (yield* exists(explicit)) return { command: explicit, prefixArgs: [] }
      return yield* new CodexBinaryNotFound({ searched: [explicit] })
    }
    const all = candidates()
    for (const candidate of all) {
      if (yield* exists(candidate.prefixArgs[0] ?? candidate.command)) return candidate
    }
    return yield* new CodexBinaryNotFound({ searched: all.map((c) => c.prefixArgs[0] ?? c.command) })
  })
