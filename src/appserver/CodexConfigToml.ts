// What the harness reads of a CODEX_HOME's own config.toml: only `shell_environment_policy.exclude`, the variables the
// user keeps from the agent's commands. The harness overrides that key with `-c` (CodexArgs.shellEnvironmentArgs) to
// keep its secrets out too, and a `-c` value replaces the file's list instead of adding to it, so the file's list is
// read here and sent along. Parsed as TOML (the `toml` package: TOML 1.1, so a table header, a dotted key and an inline
// table all say the same), never matched with a pattern. A file that is missing has no list; one that cannot be read or
// parsed gets none from here either: Codex reads the same file at start-up and refuses it with its own error.
import { FileSystem } from "@effect/platform"
import { Effect, Option } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import * as Toml from "toml"
import { isNotFound } from "../platform/fileErrors.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** The CODEX_HOME an app-server started with this environment uses: $CODEX_HOME, else ~/.codex (as the codex CLI does). */
export const effectiveCodexHome = (codexHome: string | undefined, env: Readonly<Record<string, string | undefined>>): string => {
  const home = codexHome ?? env.CODEX_HOME
  return home !== undefined && home !== "" ? path.resolve(home) : path.join(os.homedir(), ".codex")
}

/** `shell_environment_policy.exclude` of a config.toml's text: its strings, in order; none when the file has no list. */
export const shellExcludesOf = (text: string): Option.Option<ReadonlyArray<string>> => {
  let config: unknown
  try {
    config = Toml.parse(text)
  } catch {
    return Option.none()
  }
  const policy = (config as { shell_environment_policy?: unknown } | null)?.shell_environment_policy
  const exclude = typeof policy === "object" && policy !== null ? (policy as { exclude?: unknown }).exclude : undefined
  return Array.isArray(exclude) ? Option.some(exclude.filter((p): p is string => typeof p === "string")) : Option.none()
}

/** The user's `shell_environment_policy.exclude` in `<codexHome>/config.toml`; empty when there is none (see above). */
export const readShellExcludes = (codexHome: string): Effect.Effect<ReadonlyArray<string>, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const file = path.join(codexHome, "config.toml")
    const text = yield* fs.readFileString(file).pipe(
      Effect.map(Option.some),
      Effect.catchAll((e) =>
        isNotFound(e)
          ? Effect.succeedNone
          : Effect.as(HarnessLog.debug(`cannot read ${file} for its shell_environment_policy.exclude: ${e.message}`), Option.none<string>())
      )
    )
    return Option.isSome(text) ? Option.getOrElse(shellExcludesOf(text.value), () => []) : []
  })
