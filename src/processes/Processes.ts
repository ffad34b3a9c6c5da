// S25: sandboxed processes through the app-server. Each runs as a `command/exec` with a harness-chosen processId,
// streamed output and no server timeout, in the sandbox of the harness's sandbox mode, on the app-server's own local
// environment, which must report `ready` first. Output goes into a bounded buffer per process (OutputBuffer) for
// polling, replay and following; the exit status is recorded. A process is a Scoped resource whose finalizer kills it
// (`command/exec/terminate`) if it is still running; so is every process the service owns when the service closes.
// It never runs anything on the host: `process/spawn` (host, unsandboxed) is not used, danger-full-access is refused,
// and a refusal or an unready environment is a typed error with no fallback. Off unless
// `appServer.experimental.sandboxExecServer` is set.
import { Context, Deferred, Duration, Effect, ExecutionStrategy, Exit, Layer, Option, Queue, Scope, Stream, SubscriptionRef } from "effect"
import type { ExecSandboxPolicy, ServerNotification, TerminalSize } from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { LeaseError } from "../appserver/ClientPool.js"
import { type RequestError, RpcError } from "../appserver/errors.js"
import { Settings } from "../config/Settings.js"
import { SessionRuntime } from "../session/SessionRuntime.js"
import {
  ProcessNotFound,
  ProcessNotRunning,
  SandboxExecDisabled,
  SandboxRefused,
  SandboxUnavailable,
  type SpawnError,
  TooManyProcesses
} from "./errors.js"
import * as OutputBuffer from "./OutputBuffer.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** Documented limits: processes running at once, finished ones kept for /logs, and the kill finalizer's wait. */
export const defaults = {
  maxRunning: 16,
  keepFinished: 32,
  killWait: Duration.seconds(5),
  ptySize: { rows: 24, cols: 80 }
} as const

export type ProcessStatus = "running" | "exited" | "killed" | "failed"

export interface ProcessInfo {
  readonly id: string
  readonly command: ReadonlyArray<string>
  readonly cwd: string
  readonly pty: boolean
  readonly status: ProcessStatus
  readonly exitCode: number | undefined
  /** why a failed process failed (the app-server's refusal, or its connection ending) */
  readonly error: string | undefined
  readonly writtenBytes: number
  readonly droppedBytes: number
  readonly droppedLines: number
}

export interface SpawnOptions {
  readonly command: ReadonlyArray<string>
  readonly cwd?: string | undefined
  readonly pty?: boolean | undefined
  readonly size?: TerminalSize | undefined
  /** accept `writeStdin` (always so with a PTY) */
  readonly stdin?: boolean | undefined
}

export interface Logs extends OutputBuffer.Slice {
  readonly info: ProcessInfo
}

export interface ProcessesService {
  /** A sandboxed process killed when the Scope closes, if it still runs then. */
  readonly spawn: (options: SpawnOptions) => Effect.Effect<ProcessInfo, SpawnError | LeaseError, Scope.Scope>
  /** A sandboxed process owned by the service (chat's /exec): killed when the service closes, or by `kill`. */
  readonly start: (options: SpawnOptions) => Effect.Effect<ProcessInfo, SpawnError | LeaseError>
  readonly list: Effect.Effect<ReadonlyArray<ProcessInfo>>
  /** the kept output written at or after `since` (a byte offset; `next` of the previous call) */
  readonly logs: (id: string, since?: number) => Effect.Effect<Logs, ProcessNotFound>
  /** the kept output, then new output as it comes, until the process has ended; each slice says what it missed */
  readonly follow: (id: string) => Stream.Stream<OutputBuffer.Slice, ProcessNotFound>
  /** waits for the end; a refused process fails with SandboxRefused */
  readonly awaitExit: (id: string) => Effect.Effect<ProcessInfo, ProcessNotFound | SandboxRefused>
  readonly writeStdin: (id: string, data: string | Uint8Array, close?: boolean) => Effect.Effect<void, ProcessNotFound | ProcessNotRunning | RequestError>
  readonly resize: (id: string, size: TerminalSize) => Effect.Effect<void, ProcessNotFound | ProcessNotRunning | RequestError>
  /** terminates the process in the sandbox and waits (a bounded while) for its exit to be recorded */
  readonly kill: (id: string) => Effect.Effect<ProcessInfo, ProcessNotFound | ProcessNotRunning | RequestError>
}

export class Processes extends Context.Tag("codex-harness/Processes")<Processes, ProcessesService>() {}

interface Entry {
  readonly id: string
  readonly options: SpawnOptions
  readonly cwd: string
  readonly buffer: OutputBuffer.OutputBuffer
  readonly connection: AppServerConnection
  readonly exit: Deferred.Deferred<ProcessInfo, SandboxRefused>
  readonly signals: Set<Queue.Queue<void>>
  status: ProcessStatus
  exitCode: number | undefined
  error: string | undefined
  killed: boolean
}

interface Client {
  readonly connection: AppServerConnection
  readonly scope: Scope.CloseableScope
  /** waits until every notification published before it was called has been handled */
  readonly barrier: Effect.Effect<void>
}

interface DispatchState {
  count: number
  inFlight: boolean
  readonly handled: SubscriptionRef.SubscriptionRef<number>
}

const infoOf = (entry: Entry): ProcessInfo => ({
  id: entry.id,
  command: entry.options.command,
  cwd: entry.cwd,
  pty: entry.options.pty === true,
  status: entry.status,
  exitCode: entry.exitCode,
  error: entry.error,
  writtenBytes: entry.buffer.written,
  droppedBytes: entry.buffer.droppedBytes,
  droppedLines: entry.buffer.droppedLines
})

/** The sandbox a command runs in under the harness's sandbox mode; danger-full-access has none and is refused. */
export const sandboxPolicyFor = (mode: string, cwd: string): ExecSandboxPolicy | undefined =>
  mode === "read-only" ? { type: "readOnly" } : mode === "workspace-write" ? { type: "workspaceWrite", writableRoots: [cwd] } : undefined

export interface ProcessesOptions {
  readonly bounds?: OutputBuffer.Bounds | undefined
  readonly maxRunning?: number | undefined
}

export const make = (options: ProcessesOptions = {}) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const runtimes = yield* SessionRuntime
    const serviceScope = yield* Effect.scope
    const maxRunning = options.maxRunning ?? defaults.maxRunning
    const entries = new Map<string, Entry>()
    let counter = 0
    let current: Client | undefined
    const lock = yield* Effect.makeSemaphore(1)

    const signal = (entry: Entry) => Effect.forEach(entry.signals, (q) => Queue.offer(q, undefined), { discard: true })

    // takes one notification at a time, so `barrier` knows exactly how many it has yet to handle
    const dispatch = (queue: Queue.Dequeue<ServerNotification>, state: DispatchState) =>
      Effect.gen(function* () {
        const n = yield* Queue.take(queue)
        state.inFlight = true
        if (n._tag === "CommandExecOutputDelta") {
          const entry = entries.get(n.params.processId)
          if (entry !== undefined) {
            OutputBuffer.append(entry.buffer, n.params.stream, Buffer.from(n.params.deltaBase64, "base64"))
            yield* signal(entry)
          }
        }
        yield* Effect.suspend(() => {
          state.inFlight = false
          state.count++
          return SubscriptionRef.set(state.handled, state.count)
        })
      }).pipe(Effect.forever)

    // one shared client per service, leased for as long as it lives (a process ends with its connection)
    const client = lock.withPermits(1)(
      Effect.gen(function* () {
        if (current !== undefined && Option.isNone(yield* current.connection.terminationCause)) return current
        if (current !== undefined) yield* Scope.close(current.scope, Exit.void)
        const scope = yield* Scope.fork(serviceScope, ExecutionStrategy.sequential)
        const resolved = yield* runtimes.resolve("codex-harness-processes", {}).pipe(Effect.orDie)
        const connection = yield* runtimes.leaseRuntime(resolved.runtime, resolved.spec).pipe(
          Scope.extend(scope),
          Effect.tapError(() => Scope.close(scope, Exit.void))
        )
        const queue = yield* connection.subscribeQueue.pipe(Scope.extend(scope))
        const state: DispatchState = { count: 0, inFlight: false, handled: yield* SubscriptionRef.make(0) }
        yield* Effect.forkIn(Effect.interruptible(dispatch(queue, state)), scope)
        // added after the lease, so it runs before the lease is given back: nothing this client started outlives it
        yield* Scope.addFinalizer(scope, killAll(connection))
        // everything published before now has been handled (a response comes after its command's output deltas)
        const barrier = Effect.gen(function* () {
          const target = state.count + (state.inFlight ? 1 : 0) + (yield* Queue.size(queue))
          yield* state.handled.changes.pipe(Stream.takeUntil((k) => k >= target), Stream.runDrain)
        })
        // the environment commands run in must be there: a failed registration is an error, never the host
        const env = yield* connection.request("environment/status", { environmentId: "local" }).pipe(
          Effect.mapError((e) => new SandboxUnavailable({ reason: `the app-server could not say whether its local environment is ready (${e.message})` })),
          Effect.tapError(() => Scope.close(scope, Exit.void))
        )
        if (env.status !== "ready") {
          yield* Scope.close(scope, Exit.void)
          return yield* new SandboxUnavailable({
            reason: `the app-server's local environment is ${env.status}${env.error ? ` (${env.error})` : ""}`
          })
        }
        current = { connection, scope, barrier }
        return current
      })
    )

    const killAll = (connection: AppServerConnection) =>
      Effect.forEach(
        [...entries.values()].filter((e) => e.connection === connection && e.status === "running"),
        (entry) => terminate(entry),
        { concurrency: "unbounded", discard: true }
      )

    const terminate = (entry: Entry) =>
      Effect.gen(function* () {
        entry.killed = true
        yield* entry.connection.request("command/exec/terminate", { processId: entry.id }).pipe(
          // it may have ended meanwhile: "no active command/exec"
          Effect.catchIf((e) => e instanceof RpcError && /no active command\/exec/.test(e.rpcMessage), () => Effect.void)
        )
        return yield* Deferred.await(entry.exit).pipe(Effect.orElseSucceed(() => infoOf(entry)))
      }).pipe(Effect.timeoutOption(defaults.killWait), Effect.ignore)

    const forget = () => {
      const finished = [...entries.values()].filter((e) => e.status !== "running")
      for (const e of finished.slice(0, Math.max(0, finished.length - defaults.keepFinished))) entries.delete(e.id)
    }

    const start = (spawnOptions: SpawnOptions) =>
      Effect.gen(function* () {
        if (settings.sandboxExecServer !== true) return yield* new SandboxExecDisabled()
        if (spawnOptions.command.length === 0) return yield* new SandboxUnavailable({ reason: "no command was given" })
        const cwd = spawnOptions.cwd ?? settings.cwd
        const sandboxPolicy = sandboxPolicyFor(settings.sandbox, cwd)
        if (sandboxPolicy === undefined) {
          return yield* new SandboxUnavailable({ reason: `the sandbox mode is ${settings.sandbox}, which runs commands unsandboxed on the host (use read-only or workspace-write)` })
        }
        if ([...entries.values()].filter((e) => e.status === "running").length >= maxRunning) return yield* new TooManyProcesses({ max: maxRunning })
        const { connection, barrier } = yield* client
        const id = `p${++counter}`
        const pty = spawnOptions.pty === true
        const entry: Entry = {
          id,
          options: spawnOptions,
          cwd,
          buffer: OutputBuffer.make(options.bounds),
          connection,
          exit: yield* Deferred.make<ProcessInfo, SandboxRefused>(),
          signals: new Set(),
          status: "running",
          exitCode: undefined,
          error: undefined,
          killed: false
        }
        entries.set(id, entry)
        forget()
        const finish = (update: () => void) =>
          Effect.sync(update).pipe(Effect.zipRight(signal(entry)))
        yield* connection.request(
          "command/exec",
          {
            command: spawnOptions.command,
            processId: id,
            cwd,
            sandboxPolicy,
            streamStdoutStderr: true,
            ...(pty ? { tty: true, size: spawnOptions.size ?? defaults.ptySize } : {}),
            ...(spawnOptions.stdin === true ? { streamStdin: true } : {}),
            // the harness bounds the output itself, and a long-lived process has no deadline but its kill
            disableTimeout: true,
            disableOutputCap: true
          },
          { timeout: Duration.infinity }
        ).pipe(
          Effect.matchEffect({
            onSuccess: (result) =>
              barrier.pipe(
                Effect.zipRight(finish(() => {
                  entry.status = entry.killed ? "killed" : "exited"
                  entry.exitCode = result.exitCode
                })),
                Effect.zipRight(Effect.suspend(() => Deferred.succeed(entry.exit, infoOf(entry))))
              ),
            onFailure: (error) =>
              finish(() => {
                entry.status = "failed"
                entry.error = error instanceof RpcError ? error.rpcMessage : error.message
              }).pipe(Effect.zipRight(Deferred.fail(entry.exit, new SandboxRefused({ id, reason: entry.error ?? "" }))))
          }),
          Effect.interruptible,
          Effect.forkIn(serviceScope)
        )
        yield* HarnessLog.debug(`started sandboxed process ${id}: ${spawnOptions.command.join(" ")}`)
        return infoOf(entry)
      }).pipe(Effect.withSpan("Processes.start"))

    const find = (id: string) => Effect.suspend(() => {
      const entry = entries.get(id)
      return entry === undefined ? Effect.fail(new ProcessNotFound({ id })) : Effect.succeed(entry)
    })
    const running = (id: string) =>
      Effect.flatMap(find(id), (entry) => entry.status === "running" ? Effect.succeed(entry) : Effect.fail(new ProcessNotRunning({ id, status: entry.status })))

    const follow = (id: string): Stream.Stream<OutputBuffer.Slice, ProcessNotFound> =>
      Stream.unwrapScoped(
        Effect.gen(function* () {
          const entry = yield* find(id)
          const wake = yield* Queue.sliding<void>(1)
          yield* Effect.acquireRelease(Effect.sync(() => entry.signals.add(wake)), () => Effect.sync(() => entry.signals.delete(wake)))
          let cursor = 0
          const next: Effect.Effect<OutputBuffer.Slice, Option.Option<never>> = Effect.suspend(() => {
            const ended = entry.status !== "running"
            const slice = OutputBuffer.since(entry.buffer, cursor)
            if (slice.pieces.length > 0 || slice.missedBytes > 0) {
              cursor = slice.next
              return Effect.succeed(slice)
            }
            return ended ? Effect.fail(Option.none()) : Queue.take(wake).pipe(Effect.zipRight(next))
          })
          return Stream.repeatEffectOption(next)
        })
      )

    const service: ProcessesService = {
      // not an acquireRelease: what `start` forks and leases (the client pool's idle timers among them) must stay
      // interruptible; the finalizer is added before anything can interrupt
      spawn: (spawnOptions) =>
        Effect.uninterruptibleMask((restore) =>
          restore(start(spawnOptions)).pipe(
            Effect.tap((info) =>
              Effect.addFinalizer(() =>
                Effect.suspend(() => {
                  const entry = entries.get(info.id)
                  return entry !== undefined && entry.status === "running" ? terminate(entry) : Effect.void
                })
              )
            )
          )
        ),
      start,
      list: Effect.sync(() => [...entries.values()].map(infoOf)),
      logs: (id, since) => Effect.map(find(id), (entry) => ({ ...OutputBuffer.since(entry.buffer, since), info: infoOf(entry) })),
      follow,
      awaitExit: (id) => Effect.flatMap(find(id), (entry) => Deferred.await(entry.exit)),
      writeStdin: (id, data, close) =>
        Effect.flatMap(running(id), (entry) =>
          entry.connection.request("command/exec/write", {
            processId: id,
            deltaBase64: Buffer.from(data).toString("base64"),
            ...(close === true ? { closeStdin: true } : {})
          })).pipe(Effect.asVoid),
      resize: (id, size) =>
        Effect.flatMap(running(id), (entry) => entry.connection.request("command/exec/resize", { processId: id, size })).pipe(Effect.asVoid),
      kill: (id) =>
        Effect.flatMap(running(id), (entry) => terminate(entry).pipe(Effect.as(infoOf(entry))))
    }
    return service
  })

export const layer = (options: ProcessesOptions = {}): Layer.Layer<Processes, never, Settings | SessionRuntime> =>
  Layer.scoped(Processes, make(options))
