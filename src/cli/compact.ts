// `codex-harness compact --session ID`: a manual native compaction of the session's thread (S37). Progress goes to
// stderr while Codex compacts (a spinner at a terminal, else one line); the outcome goes to stdout. Failures end as one
// line through the CLI's error rendering (exit 1). The timeout and interrupt grace come from the config file. Loaded
// when the command runs; its flags are in commands/compact.ts.
import { Clock, Console, Effect, Layer, Schedule } from "effect"
import * as Live from "../../layers/internal/Live.js"
import * as Compaction from "../compaction/Compaction.js"
import { checkSessionId } from "../session/SessionStore.js"
import * as ApprovalPromptsCli from "./approvalPrompts.js"
import type { CompactOptions } from "./commands/compact.js"
import * as Connect from "./connect.js"
import { toSettings } from "./settings.js"
import * as TerminalDelivery from "./TerminalDelivery.js"

const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

const write = (text: string) => Effect.sync(() => void process.stderr.write(text))

/** Runs until interrupted: a spinner with the elapsed seconds on a TTY (the line is cleared at the end), else one line. */
export const progress = (stream: { readonly isTTY?: boolean | undefined } = process.stderr): Effect.Effect<void> =>
  stream.isTTY !== true
    ? write("compacting…\n").pipe(Effect.zipRight(Effect.never))
    : Effect.gen(function* () {
      const startedAt = yield* Clock.currentTimeMillis
      let frame = 0
      yield* Effect.gen(function* () {
        const seconds = Math.floor(((yield* Clock.currentTimeMillis) - startedAt) / 1000)
        yield* write(`\r${frames[frame++ % frames.length]} compacting… ${seconds} s`)
      }).pipe(Effect.repeat(Schedule.spaced("100 millis")))
    }).pipe(Effect.ensuring(write("\r\x1b[2K")), Effect.asVoid)

export const compact = (options: CompactOptions) =>
  Connect.orLocal(
    options,
    true,
    (client) =>
      Effect.gen(function* () {
        const r = yield* Effect.scoped(
          Effect.zipRight(Effect.forkScoped(progress()), client.Compact({ session: options.session }))
        )
        yield* options.json
          ? Console.log(JSON.stringify({ type: "compaction.completed", sessionId: r.session_id, threadId: r.thread_id, turnId: r.turn_id, durationMs: r.duration_ms }))
          : Console.log(`compacted thread ${r.thread_id} in ${(r.duration_ms / 1000).toFixed(1)} s`)
      }),
    compactLocal(options)
  )

const compactLocal = (options: CompactOptions) =>
  Effect.gen(function* () {
    const settings = yield* toSettings(options)
    const sessionId = yield* checkSessionId(options.session)
    // the timeouts come with the settings (compaction.timeoutSeconds, compaction.interruptGraceSeconds)
    const services = Live.layer(settings, undefined, { probeCodex: false }).pipe(
      Layer.provide(TerminalDelivery.layer({ json: options.json })),
      // a compaction runs no commands, so no approval is asked; should one come, it is refused
      Layer.provide(ApprovalPromptsCli.fixed("deny"))
    )
    const result = yield* Effect.scoped(
      Effect.gen(function* () {
        yield* Effect.forkScoped(progress())
        return yield* Effect.flatMap(Compaction.Compaction, (compaction) => compaction.compact(sessionId))
      })
    ).pipe(Effect.provide(services))
    yield* options.json
      ? Console.log(JSON.stringify({ type: "compaction.completed", ...result }))
      : Console.log(`compacted thread ${result.threadId} in ${(result.durationMs / 1000).toFixed(1)} s`)
  })
