// The early spawn of a cold `run`'s app-server (issue 31, item 1), run by the bin before it loads the CLI. It works out
// the app-server a new session of this command line would get, in the common case only (no config file, no serve
// running for the state dir, a local app-server), spawns it exactly as the transport would (Transport.ts), writes the
// connection's `initialize` line to it and leaves it in the Prelaunch slot. The transport adopts it only when its own
// spawn is the same process (executable, arguments, environment, directory, initialize line); any other case, and any
// doubt here, and the CLI starts its own as before. So this file may guess, but it must never obey anything the CLI
// would refuse: it spawns nothing under a state dir or CODEX_HOME the CLI's trust check (platform/trust.ts) would
// refuse, and it reads no config the CLI would read differently (it stops where a config file exists).
//
// Plain Node with no Effect import, and small: the point is to start Codex before the CLI's half second of loading.
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { candidates } from "../appserver/CodexCandidates.js"
import * as CodexArgs from "../appserver/CodexArgs.js"
import { initializeLine } from "../appserver/InitializeRequest.js"
import * as Prelaunch from "../appserver/Prelaunch.js"

/** flags whose meaning this file does not work out: with any of them the CLI spawns its own */
const unsupported = new Set(["--config", "--app-server", "--connect", "--help", "-h"])

/** `--name value` or `--name=value` among `flags`; the last one wins, as in the CLI's parser */
const flagValue = (flags: ReadonlyArray<string>, name: string): string | undefined => {
  let value: string | undefined
  for (let i = 0; i < flags.length; i++) {
    const arg = flags[i]!
    if (arg === name) value = flags[i + 1]
    else if (arg.startsWith(`${name}=`)) value = arg.slice(name.length + 1)
  }
  return value
}

const nonEmpty = (value: string | undefined) => (value === undefined || value === "" ? undefined : value)

const stat = (file: string) => fs.statSync(file, { throwIfNoEntry: false })

/** as platform/trust.ts checkPrivate: missing, or this user's and not writable by group or others */
const trusted = (file: string): boolean => {
  const info = stat(file)
  if (info === undefined || typeof process.getuid !== "function") return true
  return info.uid === process.getuid() && (info.mode & 0o022) === 0
}

/** the directory and its missing parents, 0700, one level at a time (platform/ensureDir.ts says why not `recursive`) */
const ensureDir = (dir: string): boolean => {
  const missing: Array<string> = []
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const info = stat(current)
    if (info !== undefined) {
      if (!info.isDirectory()) return false
      break
    }
    missing.push(current)
    if (path.dirname(current) === current) break
  }
  for (const d of missing.reverse()) {
    try {
      fs.mkdirSync(d, { mode: 0o700 })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return false
    }
  }
  return true
}

export interface PlannedSpawn {
  readonly command: string
  readonly argv: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string | undefined>>
  readonly codexHome: string
}

/**
 * The app-server a new session of `run ARGS` gets (settings.ts, Runtimes.ts, Transport.ts, for the case with no config
 * file), or undefined when this file cannot be sure. Reads the file system, spawns nothing.
 */
export const plan = (args: ReadonlyArray<string>, env: Readonly<Record<string, string | undefined>>): PlannedSpawn | undefined => {
  // flags before any `--` (after it everything is the prompt's)
  const flags = args.slice(0, args.includes("--") ? args.indexOf("--") : args.length)
  if (flags.some((a) => unsupported.has(a) || [...unsupported].some((u) => a.startsWith(`${u}=`)))) return undefined
  const stateFlag = flagValue(flags, "--state-dir")
  const stateDir = stateFlag !== undefined
    ? path.resolve(stateFlag)
    : nonEmpty(env.CODEX_HARNESS_HOME) !== undefined
    ? path.resolve(env.CODEX_HARNESS_HOME!)
    : path.join(os.homedir(), ".codex-harness")
  // a state dir that is not there yet is the CLI's to make (it may refuse the command line first: nothing is left then);
  // a config file may change anything below, and a serve for the state dir takes the turn instead
  if (stat(stateDir)?.isDirectory() !== true) return undefined
  if (stat(path.join(stateDir, "config.json")) !== undefined || stat(path.join(stateDir, "serve.json")) !== undefined) return undefined
  const providerUrl = flagValue(flags, "--provider-url")
  if (providerUrl !== undefined && CodexArgs.checkProviderUrl(providerUrl) !== undefined) return undefined
  const keyEnv = flagValue(flags, "--provider-key-env")
  if (keyEnv !== undefined && !CodexArgs.isEnvName(keyEnv)) return undefined
  const homeFlag = flagValue(flags, "--codex-home")
  const userHome = flags.includes("--user-codex-home")
  if (homeFlag !== undefined && userHome) return undefined
  const codexHome = path.resolve(
    homeFlag ?? (userHome ? nonEmpty(env.CODEX_HOME) ?? path.join(os.homedir(), ".codex") : path.join(stateDir, "codex-home"))
  )
  if (!trusted(stateDir) || !trusted(codexHome)) return undefined
  // its shell_environment_policy.exclude would go on the command line (CodexConfigToml.ts): left to the CLI
  if (stat(path.join(codexHome, "config.toml")) !== undefined) return undefined
  const binFlag = flagValue(flags, "--codex-bin")
  const codex = binFlag !== undefined
    ? (stat(binFlag) !== undefined ? { command: binFlag, prefixArgs: [] } : undefined)
    : candidates().find((c) => stat(c.prefixArgs[0] ?? c.command) !== undefined)
  if (codex === undefined) return undefined
  const providerEnv = providerUrl === undefined
    ? {}
    : CodexArgs.providerEnv(CodexArgs.providerKeyFrom((name) => env[name], keyEnv), keyEnv)
  // a line that is not key=value is the CLI's to report
  const user = CodexArgs.appServerConfigArgs(env)
  if (typeof user === "string") return undefined
  const argv = CodexArgs.appServerArgv(
    codex.prefixArgs,
    providerUrl !== undefined ? CodexArgs.providerArgs(providerUrl, undefined, keyEnv) : [],
    CodexArgs.excludeArgs(CodexArgs.secretEnvNames(keyEnv)),
    user
  )
  return { command: codex.command, argv, env: { ...env, ...providerEnv, CODEX_HOME: codexHome }, codexHome }
}

const stderrTailChars = 2_000
/** what is held of Codex's stdout before the hand-over (its answer to `initialize` and a few notifications) */
const heldBytesBound = 1024 * 1024

/** Spawns the planned app-server, writes `initialize`, and offers it to the transport. Never throws. */
export const prelaunch = (args: ReadonlyArray<string>): void => {
  try {
    const planned = plan(args, process.env)
    if (planned === undefined || !ensureDir(planned.codexHome)) return
    const child = spawn(planned.command, [...planned.argv], { stdio: ["pipe", "pipe", "pipe"], detached: true, env: planned.env })
    const chunks: Array<Uint8Array> = []
    let stderr = ""
    let exit: Prelaunch.PrelaunchedExit | undefined
    let bytes = 0
    const onData = (chunk: Uint8Array) => {
      chunks.push(chunk)
      // bounded: past it the pipe holds the rest on Codex's side until the transport takes over and reads on
      if ((bytes += chunk.length) >= heldBytesBound) child.stdout.pause()
    }
    const onStderr = (text: string) => void (stderr = (stderr + text).slice(-stderrTailChars))
    const onExit = (exitCode: number | null, signal: NodeJS.Signals | null) => void (exit = { exitCode, signal })
    const ignore = () => {}
    // a spawn that failed (or any failure before the hand-over): the CLI spawns its own and reports what it finds
    const onError = () => Prelaunch.discardUntaken()
    child.on("error", onError)
    child.stdin.on("error", ignore)
    child.once("exit", onExit)
    child.stdout.on("data", onData)
    child.stderr.setEncoding("utf8")
    child.stderr.on("data", onStderr)
    const line = initializeLine({})
    child.stdin.write(`${line}\n`)
    let settled = false
    const discard = () => {
      if (settled) return
      settled = true
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
      } catch {
        // already gone
      }
      child.stdin.destroy()
      child.stdout.destroy()
      child.stderr.destroy()
    }
    Prelaunch.offer({
      command: planned.command,
      argv: planned.argv,
      env: planned.env,
      cwd: undefined,
      initializeLine: line,
      child,
      handOver: () => {
        settled = true
        child.stdout.pause()
        child.stderr.pause()
        child.stdout.off("data", onData)
        child.stderr.off("data", onStderr)
        child.off("exit", onExit)
        child.off("error", onError)
        return { chunks, stdoutEnded: child.stdout.readableEnded, stderr, exit }
      },
      discard
    })
    // nobody took it: the CLI refused the command line, or ran the turn some other way
    process.once("exit", Prelaunch.discardUntaken)
  } catch {
    // an optimisation: without it the CLI spawns its own
  }
}
