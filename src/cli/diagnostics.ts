// `codex-harness diagnostics`: S36 at the command line. Without --bundle it plans the upload (the session's thread and
// its spawned sub-agent threads, or the bound thread alone with --thread-only), asks for approval (at a terminal you
// are asked; otherwise --approvals answers, deny by default) and, approved, uploads through Codex's `feedback/upload`,
// printing the channel, the session, each thread with the id Codex returned and a `codex resume` line. Denied or no
// answer: nothing is sent, nothing printed on stdout, one line and exit 1. Codex's refusal (feedback disabled, OpenAI
// unreachable) is the app-server's error, exit 1. --bundle FILE writes the local bundle instead (no approval: it never
// leaves the machine); with --upload it uploads as well. Loaded when the command runs; its flags are in
// commands/diagnostics.ts.
import { Console, Effect, Layer, Option } from "effect"
import * as Live from "../../layers/internal/Live.js"
import * as HarnessConfig from "../config/HarnessConfig.js"
import { Diagnostics, type DiagnosticsReport, layer as diagnosticsLayer } from "../diagnostics/Diagnostics.js"
import { DiagnosticsBundle, layer as bundleLayer } from "../diagnostics/DiagnosticsBundle.js"
import { type ApprovalDecision, ApprovalPrompts } from "../ports/ApprovalPrompts.js"
import * as ApprovalPromptsCli from "./approvalPrompts.js"
import type { DiagnosticsOptions } from "./commands/diagnostics.js"
import { UsageError } from "./errors.js"
import { resolveSessionRef } from "./sessionRef.js"
import { codexHomeOverrides, loadFor, toSettings } from "./settings.js"
import { terminalText as safeText } from "../platform/terminalText.js"
import * as TerminalDelivery from "./TerminalDelivery.js"
import { packageVersion } from "./version.js"

/** --approvals without a terminal: decides silently (the failure line says what was decided), so a denial is one line */
const policy = (mode: "deny" | "allow") =>
  Layer.succeed(ApprovalPrompts, { ask: () => Effect.succeed<ApprovalDecision>(mode === "allow" ? "allowOnce" : "deny") })

/** What an approved upload prints on stdout. Pure. */
export const reportLines = (report: DiagnosticsReport): ReadonlyArray<string> => [
  `channel: ${safeText(report.channel)}`,
  `session: ${report.sessionId ?? "(none)"}`,
  ...(report.logsUploadId !== undefined ? [`Codex's logs uploaded: ${report.logsUploadId}`] : []),
  ...report.threads.flatMap((t) => [
    `thread ${t.threadId}${t.role === "subAgent" ? ` (sub-agent of ${t.parentThreadId ?? "?"})` : ""}: uploaded, id ${t.uploadId}`,
    `  ${t.resume}`
  ])
]

export const diagnostics = (options: DiagnosticsOptions) =>
  Effect.gen(function* () {
    // flags that would be silently ignored are usage errors
    if (Option.isSome(options.bundle) && !options.upload && Option.isSome(options.note)) {
      return yield* new UsageError({ line: "NOTE is sent with an upload: add --upload, or leave NOTE out of a bundle" })
    }
    if (options.threadOnly && Option.isNone(options.session)) {
      return yield* new UsageError({ line: "--thread-only needs --session (the threads of which session?)" })
    }
    const settings = yield* toSettings(options)
    const sessionId = Option.isSome(options.session) ? yield* resolveSessionRef(settings.stateDir, options.session.value) : undefined
    const note = Option.getOrUndefined(options.note)
    const upload = Option.isNone(options.bundle) || options.upload
    const prompts = options.approvals === "allow" || process.stdin.isTTY !== true
      ? policy(options.approvals)
      : ApprovalPromptsCli.terminal
    const services = Layer.mergeAll(diagnosticsLayer, bundleLayer).pipe(
      Layer.provideMerge(Live.layer(settings, undefined, { probeCodex: false })),
      Layer.provide(TerminalDelivery.layer({ json: options.json })),
      Layer.provide(prompts)
    )
    yield* Effect.gen(function* () {
      if (Option.isSome(options.bundle)) {
        // the effective config as `config show` prints it (flags over the file over the defaults), redacted in the bundle
        const file = yield* loadFor(options)
        const config = HarnessConfig.merge(file, {
          providerUrl: settings.providerUrl,
          providerKeyEnv: settings.providerKeyEnv,
          ...codexHomeOverrides(options),
          codexBin: Option.getOrUndefined(options.codexBin)
        })
        const written = yield* (yield* DiagnosticsBundle).write({
          file: options.bundle.value,
          sessionId,
          config,
          harnessVersion: packageVersion()
        })
        yield* options.json
          ? Console.log(JSON.stringify({ type: "diagnostics.bundle", ...written }))
          : Console.log(`bundle written: ${written.file} (${written.bytes} bytes, ${written.records} session records; local only, not uploaded)`)
      }
      if (!upload) return
      const report = yield* (yield* Diagnostics).upload({ sessionId, threadOnly: options.threadOnly, note })
      yield* options.json
        ? Console.log(JSON.stringify({ type: "diagnostics.uploaded", ...report }))
        : Effect.forEach(reportLines(report), (line) => Console.log(line), { discard: true })
    }).pipe(Effect.provide(services))
  })
