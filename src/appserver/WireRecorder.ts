// Records a session's app-server traffic to a file (WireRecording.ts has the format): every line the harness writes to
// an app-server and every line it reads back, with the connection, the direction and the time since the recording
// began, secrets masked before anything is written. It sits at the transport: the Live transport wraps each handle it
// spawns when a recorder is provided (an optional port, like the harness's others), so nothing above the wire changes.
// The file is opened (mode 0600) when the layer is built, so a recording that cannot be opened fails the run before
// anything is sent; a write that fails later ends that app-server's connection (a recording with a hole is
// not one to replay) and is kept for the caller to report (`failure`).
import { Clock, Context, Effect, Layer, Option, Schema, type Scope, Stream } from "effect"
import * as nodeFs from "node:fs"
import type { TransportHandle, TransportOptions } from "./Transport.js"
import type { FramedLine } from "./LineFramer.js"
import * as WireRecording from "./WireRecording.js"

export class WireRecordingFailed extends Schema.TaggedError<WireRecordingFailed>()("WireRecordingFailed", {
  file: Schema.String,
  /** open: the file could not be created (nothing was sent); write: a line could not be written during the session */
  stage: Schema.Literal("open", "write"),
  reason: Schema.String
}) {
  override get message() {
    return this.stage === "open"
      ? `cannot record the app-server traffic to ${this.file}: ${this.reason}`
      : `recording the app-server traffic to ${this.file} failed: ${this.reason}`
  }
}

export interface WireRecorderService {
  /** the same transport, its traffic recorded; for the lifetime of the spawn's Scope */
  readonly wrap: (handle: TransportHandle, options: TransportOptions) => Effect.Effect<TransportHandle, never, Scope.Scope>
  /** the first write that failed, if one did */
  readonly failure: Effect.Effect<Option.Option<WireRecordingFailed>>
}

/** No recording: the handle as it is. */
export const none: WireRecorderService = { wrap: (handle) => Effect.succeed(handle), failure: Effect.succeedNone }

/** The recorder the Live transport wraps its spawns with; records nothing unless provided (`layer`). */
export class WireRecorder extends Context.Reference<WireRecorder>()("codex-harness/WireRecorder", {
  defaultValue: (): WireRecorderService => none
}) {}

export interface RecorderOptions {
  /** the harness's workspace and state dir, written as `{{cwd}}` and `{{stateDir}}` (see WireRecording.Roots) */
  readonly roots?: { readonly cwd?: string | undefined; readonly stateDir?: string | undefined } | undefined
}

/** Where the lines go: the file (`openFile`), or a test's stand-in. A failure says why, in words. */
export interface RecordingSink {
  readonly write: (line: string) => Effect.Effect<void, string>
  readonly close: Effect.Effect<void>
}

const reasonOf = (error: unknown) => {
  const e = error as NodeJS.ErrnoException
  if (e?.code === "ELOOP") return "it is a symbolic link"
  if (e?.code === "ENOENT") return "no such directory"
  // a FIFO nobody reads (opened without blocking)
  if (e?.code === "ENXIO") return "not a regular file"
  return e instanceof Error ? e.message.replace(/^[A-Z]+: /, "") : String(error)
}

/**
 * `file` opened for the recording: created with mode 0600, or an existing regular file truncated and made 0600. A
 * symbolic link is not followed and a FIFO or device is refused (a recording is a file, and `/dev/stdout` would mix it
 * into the replies); nothing is removed.
 */
export const openFile = (file: string): Effect.Effect<RecordingSink, WireRecordingFailed> =>
  Effect.try({
    try: () => {
      const c = nodeFs.constants
      const fd = nodeFs.openSync(file, c.O_WRONLY | c.O_CREAT | c.O_TRUNC | c.O_NOFOLLOW | c.O_NONBLOCK, 0o600)
      try {
        if (!nodeFs.fstatSync(fd).isFile()) throw new Error("not a regular file")
        nodeFs.fchmodSync(fd, 0o600)
      } catch (error) {
        nodeFs.closeSync(fd)
        throw error
      }
      return fd
    },
    catch: (error) => new WireRecordingFailed({ file, stage: "open", reason: reasonOf(error) })
  }).pipe(
    Effect.map((fd): RecordingSink => ({
      write: (line) =>
        Effect.try({
          try: () => {
            const bytes = Buffer.from(`${line}\n`, "utf8")
            for (let at = 0; at < bytes.length;) at += nodeFs.writeSync(fd, bytes, at)
          },
          catch: reasonOf
        }),
      close: Effect.sync(() => nodeFs.closeSync(fd))
    }))
  )

/**
 * Records every app-server the harness starts while the layer lives into `file` (see `openFile`), the file closed
 * when the layer ends.
 */
export const layer = (file: string, options: RecorderOptions = {}): Layer.Layer<WireRecorder, WireRecordingFailed> =>
  Layer.scoped(WireRecorder, make(file, options))

/** The recorder of `layer`, for the current Scope. */
export const make = (file: string, options: RecorderOptions = {}): Effect.Effect<WireRecorderService, WireRecordingFailed, Scope.Scope> =>
  Effect.flatMap(Effect.acquireRelease(openFile(file), (sink) => sink.close), (sink) => recordTo(sink, file, options))

/** A recorder writing to `sink`; `file` names it in errors. */
export const recordTo = (sink: RecordingSink, file: string, options: RecorderOptions = {}): Effect.Effect<WireRecorderService, WireRecordingFailed, Scope.Scope> =>
  Effect.gen(function* () {
    const lock = yield* Effect.makeSemaphore(1)
    const started = yield* Clock.currentTimeMillis
    let failed: WireRecordingFailed | undefined
    let closed = false
    yield* Effect.addFinalizer(() => Effect.sync(() => void (closed = true)))
    let connections = 0

    /** one line, whole, or the first failure (kept: every later write fails with it) */
    const writeLine = (line: string): Effect.Effect<void, WireRecordingFailed> =>
      Effect.suspend(() => {
        if (failed !== undefined) return Effect.fail(failed)
        if (closed) return Effect.void
        return sink.write(line).pipe(
          Effect.mapError((reason) => {
            failed ??= new WireRecordingFailed({ file, stage: "write", reason })
            return failed
          }),
          lock.withPermits(1)
        )
      })

    yield* writeLine(WireRecording.headerLine(new Date(started).toISOString())).pipe(
      Effect.mapError((e) => new WireRecordingFailed({ file, stage: "open", reason: e.reason }))
    )

    const wrap = (inner: TransportHandle, spawnOptions: TransportOptions) =>
      Effect.gen(function* () {
        const conn = ++connections
        const keep = WireRecording.keeper(WireRecording.secretsFor(spawnOptions), WireRecording.rootsFor(options.roots ?? {}, spawnOptions))
        const entry = (body: Record<string, unknown>) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => writeLine(JSON.stringify({ t: now - started, conn, ...body })))
        const line = (from: WireRecording.From, text: string) => entry({ from, ...keep.entryBody(text, from) })
        // a hole in the recording ends this connection: what comes after it could not be replayed
        const broken = Effect.zipRight(inner.endInput, Effect.succeed(false))
        let closedSide = false
        const close = Effect.suspend(() => {
          if (closedSide) return Effect.void
          closedSide = true
          return Effect.ignore(entry({ from: "harness", event: "close" }))
        })
        yield* Effect.addFinalizer(() => close)
        yield* inner.exited.pipe(
          Effect.flatMap((info) => entry({ from: "app-server", event: "exit", exitCode: info.exitCode, signal: info.signal })),
          Effect.ignore,
          Effect.forkScoped
        )
        // each line the app-server sent is recorded before the connection reads it; a line the recording could not keep
        // ends the connection's input
        const record = (framed: FramedLine) =>
          (framed._tag === "Oversized" ? entry({ from: "app-server", oversized: framed.bytes }) : line("app-server", framed.text)).pipe(
            Effect.catchAll(() => inner.endInput)
          )
        const readLines = inner.readLines
        return {
          ...inner,
          incoming: inner.incoming.pipe(Stream.tap(record)),
          readLines: readLines === undefined
            ? undefined
            : (onLine) => readLines((framed) => Effect.zipRight(record(framed), onLine(framed))),
          // recorded before it is sent: a line the recording could not keep is never sent
          send: (text) => line("harness", text).pipe(Effect.matchEffect({ onFailure: () => broken, onSuccess: () => inner.send(text) })),
          endInput: Effect.zipRight(close, inner.endInput),
          // the connection names the last telling stderr line as the cause: the failed recording, when it ended it
          stderrTail: Effect.map(inner.stderrTail, (tail) => (failed === undefined ? tail : `${tail}\n${failed.message}`))
        } satisfies TransportHandle
      })

    return { wrap, failure: Effect.sync(() => Option.fromNullable(failed)) } satisfies WireRecorderService
  })
