// A command's handler, loaded when the command runs. The command tree (names, flags, descriptions) is all `--help` and
// parsing need; each handler's implementation imports the harness (layers, the app-server client, schemas), which is
// most of the start-up time, so it is a dynamic import: the bundler puts it in a chunk of its own, loaded only for the
// command that was asked for.
import { Effect } from "effect"

/**
 * `use` applied to the module `load` imports. A module that cannot be loaded (a broken install) is a defect: the CLI
 * prints it as one `internal error` line, like any other.
 */
export const lazy = <M, A, E, R>(load: () => Promise<M>, use: (module: M) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(
    Effect.promise(() => {
      started = true
      return load()
    }),
    use
  )

let started = false
/** whether a command's handler has begun: before that, what the program prints is @effect/cli's parsing (main.ts) */
export const handlerStarted = () => started
