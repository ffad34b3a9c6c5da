// The codex executables that may be run, in order of preference: the native binary from the platform package that
// `@openai/codex` installs (no resident Node wrapper, faster start), else the npm wrapper script. Plain TypeScript with
// no Effect import: the bin's early spawn of a cold `run`'s app-server (cli/prelaunch.ts) picks the same one.
import { createRequire } from "node:module"
import * as path from "node:path"

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
