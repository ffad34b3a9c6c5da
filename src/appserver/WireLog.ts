// `--log-level debug`: the JSON-RPC lines to and from the app-server on the log, one entry each, shortened and with
// what looks like a secret replaced. Decided once per connection, so a connection that does not log pays one
// comparison per line.
import { Effect, FiberRef, LogLevel } from "effect"
import * as HarnessLog from "../platform/HarnessLog.js"

const maxChars = 2_000

/** `"token":"…"`, `"apiKey":"…"`, `"authorization":"Bearer …"` and the like: the value becomes *** */
const secretField = /("(?:[A-Za-z_-]*(?:token|secret|password|api[_-]?key|authorization|credential)[A-Za-z_-]*)"\s*:\s*)"(?:[^"\\]|\\.)*"/gi

export const redactLine = (line: string): string => {
  const redacted = line.replace(secretField, '$1"***"')
  return redacted.length > maxChars ? `${redacted.slice(0, maxChars)}… (${redacted.length} chars)` : redacted
}

export interface WireLog {
  /** false when nothing is logged: the caller skips the call */
  readonly logs: boolean
  readonly sent: (line: string) => Effect.Effect<void>
  readonly received: (line: string) => Effect.Effect<void>
}

const silent: WireLog = { logs: false, sent: () => Effect.void, received: () => Effect.void }

/** A WireLog for the current fiber's minimum log level: silent unless Debug (or lower) is on. */
export const make: Effect.Effect<WireLog> = Effect.map(FiberRef.get(FiberRef.currentMinimumLogLevel), (level) =>
  LogLevel.greaterThan(level, LogLevel.Debug)
    ? silent
    : {
      logs: true,
      sent: (line) => HarnessLog.debug(`app-server <- ${redactLine(line)}`),
      received: (line) => HarnessLog.debug(`app-server -> ${redactLine(line)}`)
    })
