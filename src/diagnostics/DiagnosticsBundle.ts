// S36's local half: a diagnostics bundle written to a file of the operator's choosing, which never leaves the machine
// (so it needs no approval). It holds the harness's and Codex's versions, the effective config with every secret
// redacted (appserver/Redaction.ts), what `server/diagnostics` reports of the app-server process (memory, gauges), and the
// session's last records (bounded: `recordLimit` records, each string clipped). The file is created 0600 and never
// written over. A failure to reach the app-server is recorded in the bundle instead of failing it: a bundle is most
// wanted when things fail.
import { FileSystem } from "@effect/platform"
import { Context, Effect, Layer, Option } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import { Settings } from "../config/Settings.js"
import { SessionRuntime } from "../session/SessionRuntime.js"
import type { SessionState } from "../session/SessionState.js"
import { type MirrorError, TranscriptMirror } from "../session/TranscriptMirror.js"
import { BundleExists, BundleWriteFailed } from "./errors.js"
import { clipStrings, redactValue, scrubValues, secretValues } from "../appserver/Redaction.js"

export interface BundleOptions {
  /** where to write it; refused when something is already there */
  readonly file: string
  /** the session whose records and thread go in; absent: versions, config and the app-server's diagnostics only */
  readonly sessionId?: string | undefined
  /** the effective config to record (redacted here); default: the harness settings */
  readonly config?: unknown
  /** the embedding program's or CLI's version */
  readonly harnessVersion?: string | undefined
  /** how many of the session's last records (default 50) */
  readonly recordLimit?: number | undefined
}

export interface BundleResult {
  readonly file: string
  readonly bytes: number
  readonly sessionId: string | undefined
  readonly threadId: string | undefined
  readonly records: number
}

export interface DiagnosticsBundleService {
  readonly write: (options: BundleOptions) => Effect.Effect<BundleResult, BundleExists | BundleWriteFailed | MirrorError>
}

export class DiagnosticsBundle extends Context.Tag("codex-harness/DiagnosticsBundle")<DiagnosticsBundle, DiagnosticsBundleService>() {}

export const defaults = { recordLimit: 50, maxStringChars: 2_000 } as const

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const runtimes = yield* SessionRuntime
  const mirror = yield* TranscriptMirror
  const fs = yield* FileSystem.FileSystem

  const write = (options: BundleOptions) =>
    Effect.gen(function* () {
      const file = path.resolve(options.file)
      // a stat that fails is not "exists": the `wx` write below then says what is wrong
      const exists = yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false))
      if (exists) return yield* new BundleExists({ file })
      const limit = Math.max(0, options.recordLimit ?? defaults.recordLimit)
      const sessionId = options.sessionId
      const read = sessionId === undefined ? undefined : yield* mirror.read(sessionId)
      const state: SessionState = read?.state ?? {}
      const records = read?.contents.records ?? []
      const kept = limit === 0 ? [] : records.slice(-limit)

      // what the session's app-server says of itself; its failure is recorded, not fatal
      const server = yield* Effect.scoped(
        Effect.gen(function* () {
          const { connection, runtime } = sessionId === undefined ? yield* runtimes.leaseFresh : yield* runtimes.lease(sessionId, state)
          const diagnostics = yield* connection.request("server/diagnostics", {})
          return { codex: connection.initialize, runtime, diagnostics }
        })
      ).pipe(Effect.either)

      const bundle = {
        kind: "codex-harness diagnostics bundle",
        localOnly: "written by `codex-harness diagnostics --bundle`; never uploaded",
        createdAt: new Date().toISOString(),
        versions: {
          harness: options.harnessVersion ?? "unknown",
          codex: server._tag === "Right" ? server.right.codex.userAgent : "unknown (the app-server could not be reached)",
          node: process.version,
          platform: `${os.platform()} ${os.release()} ${os.arch()}`
        },
        config: redactValue(options.config ?? settings),
        serverDiagnostics: server._tag === "Right" ? server.right.diagnostics : { error: server.left.message },
        session:
          sessionId === undefined
            ? null
            : {
              sessionId,
              channel: settings.channel ?? "terminal",
              threadId: state.binding?.threadId ?? null,
              runtime: redactValue(state.runtime ?? (server._tag === "Right" ? server.right.runtime : null)),
              records: {
                total: records.length,
                kept: kept.length,
                limit,
                corruptLines: read?.contents.corrupt.length ?? 0,
                last: redactValue(clipStrings(kept, defaults.maxStringChars))
              }
            }
      }
      // the last word: no known secret value survives anywhere in the text
      const known = secretValues(process.env, settings.providerKeyEnv === undefined ? [] : [settings.providerKeyEnv])
      const text = `${scrubValues(JSON.stringify(bundle, null, 2), known)}\n`
      yield* fs.writeFileString(file, text, { flag: "wx", mode: 0o600 }).pipe(
        Effect.mapError((error): BundleExists | BundleWriteFailed =>
          error._tag === "SystemError" && error.reason === "AlreadyExists"
            ? new BundleExists({ file })
            : new BundleWriteFailed({ file, reason: error.message })
        )
      )
      // 0600 whatever the umask made of it
      yield* fs.chmod(file, 0o600).pipe(Effect.mapError((error) => new BundleWriteFailed({ file, reason: error.message })))
      return {
        file,
        bytes: Buffer.byteLength(text),
        sessionId,
        threadId: Option.getOrUndefined(Option.fromNullable(state.binding?.threadId)),
        records: kept.length
      } satisfies BundleResult
    }).pipe(Effect.withSpan("DiagnosticsBundle.write"))

  return { write } satisfies DiagnosticsBundleService
})

export const layer: Layer.Layer<DiagnosticsBundle, never, Settings | SessionRuntime | TranscriptMirror | FileSystem.FileSystem> =
  Layer.effect(DiagnosticsBundle, make)
