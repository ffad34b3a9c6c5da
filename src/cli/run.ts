// `codex-harness run [PROMPT]`: one turn, the final reply on stdout (or the `--json` event stream). Loaded when the
// command runs; its flags are in commands/run.ts.
import { Console, Effect, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as Live from "../../layers/internal/Live.js"
import type { HarnessEvent } from "../../schemas/events.js"
import { ClientPool } from "../appserver/ClientPool.js"
import * as WireRecorder from "../appserver/WireRecorder.js"
import { CodexHarness } from "../harness/CodexHarness.js"
import * as ApprovalPromptsCli from "./approvalPrompts.js"
import type { RunOptions } from "./commands/run.js"
import { TurnDidNotComplete, UsageError } from "./errors.js"
import * as JsonEvents from "./jsonEvents.js"
import * as QuestionPromptsCli from "./questionPrompts.js"
import { sessionToUse } from "./sessionRef.js"
import * as RunProgress from "./runProgress.js"
import { toSettings } from "./settings.js"
import * as TerminalDelivery from "./TerminalDelivery.js"

const print = (event: HarnessEvent) => Effect.sync(() => void process.stdout.write(JsonEvents.line(event)))

const writeLastMessage = (file: string, text: string) =>
  Effect.try({
    try: () => fs.writeFileSync(file, text.endsWith("\n") ? text : `${text}\n`),
    catch: (e) => new UsageError({ line: `--output-last-message ${file}: ${e instanceof Error ? e.message : String(e)}` })
  })

/**
 * `--record FILE`: the recorder, its file created now (before anything is sent: a file that cannot be made is a usage
 * error); without the flag, none. Lives as long as the caller's scope, which outlives the harness's.
 */
const recorderFor = (file: Option.Option<string>, roots: WireRecorder.RecorderOptions["roots"]) =>
  Option.match(file, {
    onNone: () => Effect.succeed(WireRecorder.none),
    onSome: (path) =>
      WireRecorder.make(path, { roots }).pipe(
        Effect.mapError((e) => new UsageError({ line: `--record ${path}: ${e.reason}` }))
      )
  })

/** The turn in this process, with its own app-server (runDispatch.ts decided no serve takes it). */
export const runLocal = (options: RunOptions, prompt: string, approvals: "deny" | "allow") =>
  Effect.scoped(Effect.gen(function* () {
    const settings = yield* toSettings(options)
    const recorder = yield* recorderFor(options.record, { cwd: settings.cwd, stateDir: settings.stateDir })
    const sessionId = yield* sessionToUse(options, settings.stateDir)
    // said first when the user did not type it whole, so a turn that hangs, fails or is interrupted still tells where
    // its conversation is
    if (!options.json && Option.getOrUndefined(options.session) !== sessionId) yield* Console.error(`session: ${sessionId}`)
    const encoder = JsonEvents.turnEncoder(sessionId)
    const progress = !options.json && process.stderr.isTTY === true ? RunProgress.make() : undefined
    const outcome = yield* Effect.flatMap(CodexHarness, (harness) =>
      harness.runTurn({
        sessionId,
        prompt,
        model: Option.getOrUndefined(options.model),
        kind: Option.getOrUndefined(options.turnKind),
        onEvent: options.json
          ? (event) => Effect.forEach(encoder.turnEvent(event), print, { discard: true })
          : progress?.onEvent
      }).pipe(
        // the turn has ended (and is recorded) however it went: the app-server is told to exit now, so its exit
        // overlaps the harness's teardown instead of following it (a cold run's last tens of milliseconds)
        Effect.ensuring(Effect.flatMap(ClientPool, (pool) => pool.windDown))
      )
    ).pipe(
      // the layer is provided first, so a harness that cannot start (its build fails with a typed error) still ends
      // the --json stream with turn.failed
      Effect.provide(
        Live.layer(settings, undefined, { probeCodex: false }).pipe(
          Layer.provide(Layer.succeed(WireRecorder.WireRecorder, recorder)),
          Layer.provide(TerminalDelivery.layer({ json: options.json })),
          Layer.provide(
            ApprovalPromptsCli.fixed(
              approvals,
              options.json ? (request, decision) => print(JsonEvents.approvalEvent(request, decision, "policy")) : undefined
            )
          ),
          // one turn, nobody to ask: questions are declined, each said on stderr
          Layer.provide(
            options.json
              ? QuestionPromptsCli.decliningReported((prompt) => print(JsonEvents.questionDeclinedEvent(prompt)))
              : QuestionPromptsCli.decliningLayer
          )
        )
      ),
      Effect.tapErrorCause((cause) =>
        options.json ? print(encoder.failed(JsonEvents.causeLine(cause))) : Effect.void
      ),
      Effect.onInterrupt(() =>
        Console.error(`interrupted; continue the session with: codex-harness run --session ${sessionId} PROMPT`)
      )
    )
    // a recording with a hole is not the conversation: said even when the turn itself went well
    const recordingFailed = yield* recorder.failure
    if (Option.isSome(recordingFailed)) return yield* Effect.fail(recordingFailed.value)
    if (Option.isSome(options.outputLastMessage) && outcome.finalText !== undefined) {
      yield* writeLastMessage(options.outputLastMessage.value, outcome.finalText)
    }
    if (outcome.status !== "completed") {
      return yield* Effect.fail(new TurnDidNotComplete({ status: outcome.status, detail: outcome.error ?? "" }))
    }
  }))
