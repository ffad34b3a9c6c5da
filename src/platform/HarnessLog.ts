// The harness's own log lines. They go to whatever logger the app has, under the `codex-harness` log span, and only
// at or above the level the app chose for the harness (`HarnessSettings.logLevel`, provided as `HarnessLogLevel` by
// the layer for its own fibers and by the harness's front door for each call into it); without one, the app's own
// `Logger.minimumLogLevel` alone decides. Routine steps are Debug, trouble the harness rides out is Warning.
import { Context, Effect, FiberRef, List, LogLevel } from "effect"

/** The least severe harness log line that is written; undefined: every one (the app's logger still filters). */
export class HarnessLogLevel extends Context.Reference<HarnessLogLevel>()("codex-harness/HarnessLogLevel", {
  defaultValue: (): LogLevel.LogLevel | undefined => undefined
}) {}

/** The log span every harness log line is under; a call into the harness opens it, so it measures that call. */
export const span = "codex-harness"

const inSpan = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(FiberRef.get(FiberRef.currentLogSpan), (spans) =>
    List.some(spans, (s) => s.label === span) ? effect : Effect.withLogSpan(effect, span))

const at = (level: LogLevel.LogLevel) => (...message: ReadonlyArray<unknown>): Effect.Effect<void> =>
  Effect.flatMap(HarnessLogLevel, (least) =>
    least !== undefined && LogLevel.lessThan(level, least) ? Effect.void : inSpan(Effect.logWithLevel(level, ...message)))

export const debug = at(LogLevel.Debug)
export const info = at(LogLevel.Info)
export const warning = at(LogLevel.Warning)
export const error = at(LogLevel.Error)

/** Runs `effect` as a call into the harness: under its log span, with the harness's level when one is set. */
export const within = (level: LogLevel.Literal | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const spanned = inSpan(effect)
  return level === undefined ? spanned : Effect.provideService(spanned, HarnessLogLevel, LogLevel.fromLiteral(level))
}
