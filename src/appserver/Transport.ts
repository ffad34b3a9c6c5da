// Owns the app-server child process: spawning it in its own process group, framing its stdout into lines, keeping a
// bounded stderr tail, and the shutdown sequence (end stdin, wait for the exit, then kill the group). With a `url` the
// Live transport connects to an app-server somebody else started instead (WebSocketTransport). It never parses
// JSON-RPC; that is the connection's job.
import { FileSystem } from "@effect/platform"
import { Context, Deferred, Duration, Effect, Layer, Option, Scope, type Stream } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { ensureDir } from "../platform/ensureDir.js"
import { describeFileError } from "../platform/fileErrors.js"
import * as CodexArgs from "./CodexArgs.js"
import * as CodexBinary from "./CodexBinary.js"
import { effectiveCodexHome, readShellExcludes } from "./CodexConfigToml.js"
import { type AppServerExited, type AppServerUnreachable, SpawnFailed } from "./errors.js"
import { type FramedLine, LineFramer } from "./LineFramer.js"
import { initializeLine } from "./InitializeRequest.js"
import * as LineInbox from "./LineInbox.js"
import * as Prelaunch from "./Prelaunch.js"
import { groupAlive, signalGroup } from "./ProcessGroup.js"
import { WireRecorder } from "./WireRecorder.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export interface TransportOptions {
  /**
   * What the connection over this transport introduces itself as (ConnectionOptions has the same two). Only an
   * app-server the bin started before the CLI loaded looks at them: it has had an `initialize` already, and it is taken
   * only for a connection that would send the very same one (Prelaunch.ts).
   */
  readonly clientName?: string | undefined
  readonly clientVersion?: string | undefined
  /**
   * a running app-server to connect to (`ws://` on loopback, or `wss://`) instead of spawning one; the options below
   * that describe a process (binary, CODEX_HOME, args, env, cwd) then do not apply: that app-server has its own
   */
  readonly url?: string | undefined
  /** with `url`: the variable its bearer token is read from (default AppServerUrl.defaultTokenEnv) */
  readonly tokenEnv?: string | undefined
  /** explicit codex executable; default: the native binary of the installed @openai/codex */
  readonly codexBin?: string | undefined
  /** CODEX_HOME for this app-server; created when missing. Default: inherit the user's */
  readonly codexHome?: string | undefined
  /** extra codex arguments placed before `app-server` (e.g. `-c key=value` pairs) */
  readonly args?: ReadonlyArray<string> | undefined
  /**
   * variables (or patterns) no command the agent runs may see: sent as Codex's `shell_environment_policy.exclude`
   * after the list the CODEX_HOME's config.toml has, read at spawn (a `-c` list replaces the file's, it does not add)
   */
  readonly hiddenEnv?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly cwd?: string | undefined
  readonly maxLineBytes?: number | undefined
  readonly stderrTailChars?: number | undefined
  /** how long to wait for a clean exit after stdin is closed before SIGKILL */
  readonly exitGrace?: Duration.DurationInput | undefined
}

export const defaults = {
  maxLineBytes: 8 * 1024 * 1024,
  stderrTailChars: 2_000,
  exitGrace: Duration.seconds(5),
  /** lines held for the reader before stdout is paused (the pipe then holds the rest on the app-server's side) */
  receiveHighWater: 1_024
} as const

export interface ExitInfo {
  readonly exitCode: number | null
  readonly signal: string | null
}

export interface TransportHandle {
  readonly pid: number | undefined
  /** stdout framed into lines; ends when stdout closes. Single consumer. */
  readonly incoming: Stream.Stream<FramedLine>
  /**
   * Optional: the same lines as `incoming` (read one or the other, never both), each given to `onLine` in order until
   * stdout closes, without stream stages in between; the connection's reader uses it when it is there (LineInbox says why)
   */
  readonly readLines?: ((onLine: (line: FramedLine) => Effect.Effect<void>) => Effect.Effect<void>) | undefined
  /** writes one message line (the newline is added); false when stdin is already closed */
  readonly send: (line: string) => Effect.Effect<boolean>
  /** completes when the process has exited */
  readonly exited: Effect.Effect<ExitInfo>
  readonly stderrTail: Effect.Effect<string>
  /** closes stdin: the app-server exits by itself soon after (over a WebSocket: closes the socket; it keeps running) */
  readonly endInput: Effect.Effect<void>
  /** a transport that knows better than an exit status how it ended (a closed WebSocket) says so here */
  readonly closed?: Effect.Effect<AppServerExited> | undefined
}

/** Spawns app-server transports. Live: a real child process. Tests: `MockAppServer`. */
export class Transport extends Context.Tag("codex-harness/Transport")<
  Transport,
  {
    readonly spawn: (
      options: TransportOptions
    ) => Effect.Effect<TransportHandle, SpawnFailed | CodexBinary.CodexBinaryNotFound | AppServerUnreachable, Scope.Scope>
  }
>() {}

const groupReapIntervalMs = 25
const groupReapRounds = 20
/**
 * A pause in wall-clock time, on purpose not the Effect Clock: it waits for the kernel to deliver SIGKILL and reap,
 * which a TestClock cannot speed up. The grace before SIGKILL stays on the Effect Clock.
 */
const osPause = (ms: number) =>
  Effect.async<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), ms)
    return Effect.sync(() => clearTimeout(timer))
  })

const spawnProcess = (options: TransportOptions) =>
  Effect.gen(function* () {
    const codex = yield* CodexBinary.resolve(options.codexBin)
    const env: Record<string, string | undefined> = { ...process.env, ...options.env }
    if (options.codexHome !== undefined) {
      const home = options.codexHome
      yield* ensureDir(home).pipe(
        Effect.mapError((e) =>
          new SpawnFailed({
            command: codex.command,
            reason: `cannot create CODEX_HOME ${home}: ${e._tag === "NotADirectory" ? e.message : describeFileError(e)}`
          })
        )
      )
      env.CODEX_HOME = home
    }
    const hidden = options.hiddenEnv === undefined
      ? []
      : CodexArgs.excludeArgs([...yield* readShellExcludes(effectiveCodexHome(options.codexHome, env)), ...options.hiddenEnv])
    const user = CodexArgs.appServerConfigArgs(env)
    if (typeof user === "string") return yield* Effect.fail(new SpawnFailed({ command: codex.command, reason: user }))
    const argv = CodexArgs.appServerArgv(codex.prefixArgs, options.args ?? [], hidden, user)
    const maxLineBytes = options.maxLineBytes ?? defaults.maxLineBytes
    const tailChars = options.stderrTailChars ?? defaults.stderrTailChars
    const exitGrace = options.exitGrace ?? defaults.exitGrace
    const receiveHighWater = defaults.receiveHighWater

    const exitDeferred = yield* Deferred.make<ExitInfo>()
    let stderrTail = ""

    // the app-server the bin spawned before the CLI loaded, when it is exactly this one (Prelaunch.ts)
    const taken = Prelaunch.take({
      command: codex.command,
      argv,
      env,
      cwd: options.cwd,
      initializeLine: initializeLine(options)
    })
    if (taken._tag === "Discarded") {
      yield* HarnessLog.debug(`app-server: the one started before the CLI loaded differs in ${taken.difference}: stopped, starting another`)
    }
    const prelaunched = taken._tag === "Taken" ? taken.prelaunched : undefined
    // its stdout so far, held back until the connection has (not) sent `initialize` again: the answer must not reach
    // the reader before the request it answers is pending
    let held: Array<Uint8Array> | undefined
    let endHeld = false

    const child = yield* Effect.acquireRelease(
      prelaunched !== undefined
        ? Effect.sync(() => {
          // bridge: the bin's listeners go and these come in the same synchronous step, so no event falls between
          const proc = prelaunched.child
          const handed = prelaunched.handOver()
          held = [...handed.chunks]
          endHeld = handed.stdoutEnded
          stderrTail = handed.stderr.slice(-tailChars)
          if (handed.exit !== undefined) {
            // bridge: the exit the bin's callback saw before the hand-over
            Deferred.unsafeDone(exitDeferred, Effect.succeed(handed.exit))
          } else {
            // bridge: Node's exit callback runs outside any fiber; completing the Deferred is all it does
            proc.once("exit", (code, signal) => Deferred.unsafeDone(exitDeferred, Effect.succeed({ exitCode: code, signal })))
          }
          proc.on("error", () => {})
          proc.stdin.on("error", () => {})
          proc.stderr.setEncoding("utf8")
          proc.stderr.on("data", (text: string) => {
            stderrTail = (stderrTail + text).slice(-tailChars)
          })
          proc.stderr.resume()
          return proc
        }).pipe(Effect.tap((proc) => HarnessLog.debug(`app-server: took the one started before the CLI loaded (pid ${proc.pid})`)))
        : Effect.async<ChildProcessWithoutNullStreams, SpawnFailed>((resume) => {
          const proc = spawn(codex.command, [...argv], {
            stdio: ["pipe", "pipe", "pipe"],
            // own process group: the commands the app-server starts can be signalled with it
            detached: true,
            env,
            cwd: options.cwd
          })
          const onError = (error: Error) => resume(Effect.fail(new SpawnFailed({ command: codex.command, reason: describe(error) })))
          proc.once("error", onError)
          proc.once("spawn", () => {
            proc.off("error", onError)
            // later pipe errors (EPIPE after the peer died) surface as exit, never as an uncaught exception
            proc.on("error", () => {})
            proc.stdin.on("error", () => {})
            resume(Effect.succeed(proc))
          })
          // bridge: Node's exit callback runs outside any fiber; completing the Deferred is all it does
          proc.once("exit", (code, signal) => Deferred.unsafeDone(exitDeferred, Effect.succeed({ exitCode: code, signal })))
          proc.stderr.setEncoding("utf8")
          proc.stderr.on("data", (text: string) => {
            stderrTail = (stderrTail + text).slice(-tailChars)
          })
        }),
      (proc) =>
        Effect.gen(function* () {
          proc.stdin.end()
          // finalizers are uninterruptible: without `interruptible` the timeout could never cut the wait short
          const clean = yield* Deferred.await(exitDeferred).pipe(Effect.interruptible, Effect.timeoutOption(exitGrace))
          if (Option.isNone(clean)) {
            signalGroup(proc.pid, "SIGKILL")
            yield* Deferred.await(exitDeferred)
          }
          // anything the app-server left in its group goes with it; a login shell may still be forking, so repeat
          // (bounded) until no member is running (zombies waiting for a slow PID 1 do not count: ProcessGroup.ts)
          for (let round = 0; round < groupReapRounds; round++) {
            signalGroup(proc.pid, "SIGKILL")
            if (!groupAlive(proc.pid)) break
            yield* osPause(groupReapIntervalMs)
          }
          // Our ends of its pipes go now. A process outside its group may still hold the other ends (Codex's
          // login-shell snapshot runs the user's profile in a session of its own, and whatever that leaves in the
          // background inherits them): open pipes would keep this process alive until that one ends.
          proc.stdin.destroy()
          proc.stdout.destroy()
          proc.stderr.destroy()
        })
    )

    // stdout's chunks framed in its own callback and handed to the reader in batches (LineInbox: one wake per chunk)
    const framer = new LineFramer(maxLineBytes)
    const inbox = yield* LineInbox.make(child.stdout, receiveHighWater)
    child.stdout.on("data", (chunk: Uint8Array) => {
      if (held !== undefined) held.push(chunk)
      else inbox.offer(framer.push(chunk))
    })
    // a read error (the peer died mid-chunk) ends the lines like a close does; the exit says why
    const ended = () => {
      if (held !== undefined) endHeld = true
      else inbox.end()
    }
    child.stdout.once("error", ended)
    child.stdout.once("end", ended)
    child.stdout.once("close", ended)
    if (prelaunched !== undefined) child.stdout.resume()
    // the prelaunched process has had `initialize`: the connection's own (the same line) is not written again, and what
    // the process said so far goes to the reader only now that the request is pending
    let initializePending = prelaunched !== undefined
    const releaseHeld = () => {
      const chunks = held ?? []
      held = undefined
      for (const chunk of chunks) inbox.offer(framer.push(chunk))
      if (endHeld) inbox.end()
    }

    const handle: TransportHandle = {
      pid: child.pid,
      incoming: inbox.stream,
      readLines: inbox.readLines,
      send: (line) =>
        Effect.async<boolean>((resume) => {
          if (initializePending) {
            initializePending = false
            if (line === prelaunched!.initializeLine) {
              releaseHeld()
              return resume(Effect.succeed(true))
            }
            releaseHeld()
          }
          const stdin = child.stdin
          if (!stdin.writable) return resume(Effect.succeed(false))
          stdin.write(line + "\n", (error) => resume(Effect.succeed(error == null)))
        }),
      exited: Deferred.await(exitDeferred),
      stderrTail: Effect.sync(() => stderrTail),
      endInput: Effect.sync(() => {
        child.stdin.end()
      })
    }
    return handle
  })

const describe = (error: unknown): string =>
  error instanceof Error ? ((error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : error.message) : String(error)

/**
 * The real thing: `codex app-server` over stdio, or (with `url`) over a WebSocket to one that is already running.
 * With a `WireRecorder` provided, each one's traffic is recorded (WireRecorder.ts).
 */
export const NodeTransportLive: Layer.Layer<Transport, never, FileSystem.FileSystem> = Layer.effect(
  Transport,
  Effect.zipWith(FileSystem.FileSystem, WireRecorder, (fs, recorder) => {
    const open = (options: TransportOptions) =>
      options.url !== undefined
        // loaded when first used: a CLI that only runs local app-servers never parses `ws` and the socket module
        ? Effect.promise(() => import("./WebSocketTransport.js")).pipe(
          Effect.flatMap((ws) => ws.connect({ url: options.url!, tokenEnv: options.tokenEnv, maxFrameBytes: options.maxLineBytes }))
        )
        : spawnProcess(options).pipe(Effect.provideService(FileSystem.FileSystem, fs))
    return {
      spawn: (options: TransportOptions) =>
        (open(options) as Effect.Effect<TransportHandle, SpawnFailed | CodexBinary.CodexBinaryNotFound | AppServerUnreachable, Scope.Scope>).pipe(
          Effect.flatMap((handle) => recorder.wrap(handle, options))
        )
    }
  })
)
