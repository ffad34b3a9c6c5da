// An app-server spawned before the CLI was loaded (issue 31, item 1). A cold `run` used to spend half a second loading
// and building the harness before it spawned its app-server, whose own start-up (about 0.4 s to answer `initialize`)
// then came on top. The bin now spawns the app-server it expects the CLI to ask for, and writes `initialize` to it,
// first thing (cli/prelaunch.ts), and leaves it here. The transport's first spawn takes it only when the process it was
// about to start is exactly this one (executable, arguments, environment, directory, initialize line); anything else and
// it is stopped and forgotten, so a wrong guess costs a process start and never changes what runs.
//
// The handover is a process-wide slot (a global symbol, not module state: the bin and the bundled CLI each have their
// own copy of this module). Plain TypeScript with no Effect import, like everything the bin loads before the CLI.
import type { ChildProcessWithoutNullStreams } from "node:child_process"

export interface PrelaunchedExit {
  readonly exitCode: number | null
  readonly signal: string | null
}

export interface PrelaunchedSpawn {
  readonly command: string
  readonly argv: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string | undefined>>
  readonly cwd: string | undefined
  /** the `initialize` line its connection will send first (InitializeRequest.initializeLine) */
  readonly initializeLine: string
}

export interface Prelaunched extends PrelaunchedSpawn {
  /** spawned, with `initializeLine` already written to its stdin */
  readonly child: ChildProcessWithoutNullStreams
  /**
   * Stops the bin's collection and hands over what it collected: stdout's chunks so far, stderr's text so far, and
   * the exit if the process has already ended. Its stdout and stderr are left paused: the taker attaches its own
   * listeners and resumes them.
   */
  readonly handOver: () => {
    readonly chunks: ReadonlyArray<Uint8Array>
    readonly stdoutEnded: boolean
    readonly stderr: string
    readonly exit: PrelaunchedExit | undefined
  }
  /** stops the process (its whole group) and closes its pipes */
  readonly discard: () => void
}

const slot = Symbol.for("codex-harness/prelaunched-app-server")
type Holder = { [slot]?: Prelaunched | undefined }

export const offer = (prelaunched: Prelaunched): void => {
  ;(globalThis as Holder)[slot] = prelaunched
}

export type Taken =
  | { readonly _tag: "None" }
  | { readonly _tag: "Taken"; readonly prelaunched: Prelaunched }
  | { readonly _tag: "Discarded"; readonly difference: string }

/** The prelaunched process if there is one and it is exactly `spawn`; one that is not is discarded. Once only. */
export const take = (spawn: PrelaunchedSpawn): Taken => {
  const held = (globalThis as Holder)[slot]
  if (held === undefined) return { _tag: "None" }
  ;(globalThis as Holder)[slot] = undefined
  const difference = differenceOf(held, spawn)
  if (difference === undefined) return { _tag: "Taken", prelaunched: held }
  held.discard()
  return { _tag: "Discarded", difference }
}

/** Discards a prelaunched process nobody took (the CLI ended, or went through a serve, without spawning). */
export const discardUntaken = (): void => {
  const held = (globalThis as Holder)[slot]
  ;(globalThis as Holder)[slot] = undefined
  held?.discard()
}

const definedEntries = (env: Readonly<Record<string, string | undefined>>) =>
  Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

/** What differs between two spawns, named (never a value: the environment holds secrets), or undefined. */
export const differenceOf = (a: PrelaunchedSpawn, b: PrelaunchedSpawn): string | undefined => {
  if (a.command !== b.command) return "the executable"
  if (a.cwd !== b.cwd) return "the directory"
  if (a.initializeLine !== b.initializeLine) return "the initialize request"
  if (a.argv.length !== b.argv.length || a.argv.some((arg, i) => arg !== b.argv[i])) return "the arguments"
  const ea = new Map(definedEntries(a.env))
  const eb = new Map(definedEntries(b.env))
  const names = [...new Set([...ea.keys(), ...eb.keys()])].filter((k) => ea.get(k) !== eb.get(k))
  return names.length === 0 ? undefined : `the environment (${names.sort().join(", ")})`
}
