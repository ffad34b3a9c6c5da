// `codex-harness exec -- CMD`: one sandboxed process through the app-server (S25). Its stdout and stderr are written
// as they come, a note on stderr says when output was dropped past the buffer's bounds, and the harness exits with
// the command's status. Off unless the config turns it on (then a one-line refusal, exit 2).
import { Effect, Layer, Stream } from "effect"
import * as Live from "../../layers/internal/Live.js"
import { Processes, SandboxExecDisabled } from "../processes/index.js"
import * as ProcessesLive from "../processes/Processes.js"
import * as ApprovalPromptsCli from "./approvalPrompts.js"
import type { ExecOptions } from "./commands/exec.js"
import { ExitStatus, UsageError } from "./errors.js"
import { toSettings } from "./settings.js"
import * as TerminalDelivery from "./TerminalDelivery.js"

const write = (stream: NodeJS.WriteStream, bytes: Uint8Array) =>
  Effect.async<void>((resume) => void stream.write(bytes, () => resume(Effect.void)))

export const exec = (options: ExecOptions) =>
  Effect.gen(function* () {
    const settings = yield* toSettings(options)
    if (settings.sandboxExecServer !== true) return yield* new UsageError({ line: new SandboxExecDisabled().message })
    const services = ProcessesLive.layer().pipe(
      Layer.provideMerge(Live.layer(settings, undefined, { probeCodex: false })),
      Layer.provide(TerminalDelivery.layer({ json: false })),
      // no turn runs, so no approval is asked; should one come, it is refused
      Layer.provide(ApprovalPromptsCli.fixed("deny"))
    )
    const pty = options.pty
    const info = yield* Effect.scoped(
      Effect.gen(function* () {
        const processes = yield* Processes
        const started = yield* processes.spawn({
          command: options.command,
          pty,
          ...(pty && process.stdout.isTTY ? { size: { rows: process.stdout.rows, cols: process.stdout.columns } } : {})
        })
        yield* processes.follow(started.id).pipe(
          Stream.runForEach((slice) =>
            Effect.gen(function* () {
              if (slice.missedBytes > 0) {
                yield* write(process.stderr, Buffer.from(`codex-harness: ${slice.missedBytes} bytes of output dropped (buffer bounds)\n`))
              }
              for (const piece of slice.pieces) yield* write(piece.stream === "stderr" ? process.stderr : process.stdout, piece.bytes)
            })
          )
        )
        return yield* processes.awaitExit(started.id)
      })
    ).pipe(Effect.provide(services))
    if (info.exitCode !== 0) return yield* new ExitStatus({ code: info.exitCode ?? 1 })
  })


