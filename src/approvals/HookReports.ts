// Report mode (S22): a PreToolUse hook whose policy asks for approval while the native payload says
// `openclaw_approval_mode: "report"` records the requirement here and returns no decision; the app-server's approval
// request for the same tool use then finds it (Approvals.ts), shows the plugin prompt and maps its decision back.
import { Clock, Context, Effect, Layer, Option } from "effect"


export interface ReportedRequirement {
  readonly sessionId: string
  readonly threadId: string | undefined
  readonly turnId: string | undefined
  readonly toolUseId: string | undefined
  readonly command: string | undefined
  readonly toolName: string | undefined
  readonly toolInput: unknown
  readonly reason: string | undefined
  readonly recordedAt: number
}

export interface ReportLookup {
  readonly sessionId: string
  /** the app-server approval's itemId (Codex's call id, the hook's tool_use_id) */
  readonly itemId?: string | undefined
  /** the app-server approval's command */
  readonly command?: string | undefined
}

export interface HookReportsService {
  readonly record: (requirement: ReportedRequirement) => Effect.Effect<void>
  /** finds and removes the requirement for that tool use: by tool_use_id, else by the same command, else by a command
   * the approval's command contains (Codex may wrap it in a shell invocation) */
  readonly take: (lookup: ReportLookup) => Effect.Effect<Option.Option<ReportedRequirement>>
  readonly pending: Effect.Effect<ReadonlyArray<ReportedRequirement>>
}

export class HookReports extends Context.Tag("codex-harness/HookReports")<HookReports, HookReportsService>() {}

/** A bounded in-memory registry (oldest dropped first); entries older than `maxAgeMs` are ignored and dropped. */
export const makeReports = (options: { readonly maxEntries?: number; readonly maxAgeMs?: number } = {}) =>
  Effect.sync((): HookReportsService => {
    const maxEntries = options.maxEntries ?? 256
    const maxAgeMs = options.maxAgeMs ?? 30 * 60_000
    let entries: Array<ReportedRequirement> = []
    const prune = (now: number) => {
      entries = entries.filter((e) => now - e.recordedAt <= maxAgeMs).slice(-maxEntries)
    }
    return {
      record: (requirement) =>
        Effect.sync(() => {
          entries.push(requirement)
          prune(requirement.recordedAt)
        }),
      take: (lookup) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.sync(() => {
            prune(now)
            const mine = entries.filter((e) => e.sessionId === lookup.sessionId)
            const found = (lookup.itemId !== undefined ? mine.find((e) => e.toolUseId === lookup.itemId) : undefined) ??
              (lookup.command !== undefined ? mine.find((e) => e.command === lookup.command) : undefined) ??
              (lookup.command !== undefined
                ? mine.find((e) => e.command !== undefined && e.command !== "" && lookup.command!.includes(e.command))
                : undefined)
            if (found === undefined) return Option.none()
            entries = entries.filter((e) => e !== found)
            return Option.some(found)
          })
        ),
      pending: Effect.sync(() => [...entries])
    }
  })

export const reportsLayer: Layer.Layer<HookReports> = Layer.effect(HookReports, makeReports())

