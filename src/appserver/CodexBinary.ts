// Finds the codex executable: an explicit path wins; otherwise the native binary from the platform package that
// `@openai/codex` installs (no resident Node wrapper, faster start); otherwise the npm wrapper script.
import { FileSystem } from "@effect/platform"
import { Effect, Schema } from "effect"
import { createRequire } from "node:module"
import * as path from "node:path"

export class CodexBinaryNotFound extends Schema.TaggedError<CodexBinaryNotFound>()("CodexBinaryNotFound", {
  searched: Schema.Array(Schema.String)
}) {
  override get message() {
    return `codex binary not found (looked in: ${this.searched.join(", ")}); install @openai/codex or pass --codex-bin`
  }
}

export interface CodexCommand {
  /** the executable to spawn */
  readonly command: string
  /** arguments that precede the codex arguments (the wrapper script when running through node) */
  readonly prefixArgs: ReadonlyArray<string>
}

const targetTriples: Record<string, string> = {
  "linux-x64": "x86_64-unknown-linux-musl",
  "linux-arm64": "aarch64-unknown-linux-musl",
  "darwin-x64": "x86_64-apple-darwin",
  "darwin-arm64": "aarch64-apple-darwin",
  "win32-x64": "x86_64-pc-windows-msvc",
  "win32-arm64": "aarch64-pc-windows-msvc"
}

const require = createRequire(import.meta.url)

const resolvePackageDir = (name: string): string | undefined => {
  try {
    return path.dirname(require.resolve(`${name}/package.json`))
  } catch {
    return undefined
  }
}

/** Candidates in order of preference, for the current platform. Pure apart from module resolution. */
export const candidates = (): ReadonlyArray<CodexCommand> => {
  const platformKey = `${process.platform}-${process.arch}`
  const triple = targetTriples[platformKey]
  const exe = process.platform === "win32" ? "codex.exe" : "codex"
  const found: Array<CodexCommand> = []
  const platformDir = resolvePackageDir(`@openai/codex-${platformKey}`)
  if (triple !== undefined && platformDir !== undefined) {
    found.push({ command: path.join(platformDir, "vendor", triple, "bin", exe), prefixArgs: [] })
  }
  const wrapperDir = resolvePackageDir("@openai/codex")
  if (wrapperDir !== undefined) {
    if (triple !== undefined) {
      found.push({ command: path.join(wrapperDir, "vendor", triple, "bin", exe), prefixArgs: [] })
    }
    found.push({ command: process.execPath, prefixArgs: [path.join(wrapperDir, "bin", "codex.js")] })
  }
  return found
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
