// The state dir alone, without the settings module's imports (the config file, the app-server's arguments): `run`
// through a serve needs only this, and every module a command loads before its first output is start-up time.
import { Config, Effect, Option } from "effect"
import * as os from "node:os"
import * as path from "node:path"

/** A variable from the environment; unset and empty are the same. */
export const fromEnv = (name: string) =>
  Config.string(name).pipe(Config.option, Config.map(Option.filter((value) => value !== "")))

/** `$CODEX_HARNESS_HOME`, else `~/.codex-harness`. */
export const defaultStateDir: Effect.Effect<string> = fromEnv("CODEX_HARNESS_HOME").pipe(
  Config.map(Option.match({ onNone: () => path.join(os.homedir(), ".codex-harness"), onSome: (dir) => path.resolve(dir) })),
  Effect.orDie
)

/** `--state-dir`, else the default. */
export const stateDirOf = (flag: Option.Option<string>): Effect.Effect<string> =>
  Option.match(flag, { onNone: () => defaultStateDir, onSome: (dir) => Effect.succeed(path.resolve(dir)) })
