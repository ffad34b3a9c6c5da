// Allow-always memory (S28): an operator's "always" is remembered for the exact (provider, session, tool input, cwd)
// fingerprint, for a limited window, and for a bounded number of entries (oldest dropped). It never generalises: any
// difference in any part, or an expired entry, means asking again. Time comes from the Effect Clock.
import { Clock, Duration, Effect, Ref } from "effect"
import { createHash } from "node:crypto"

export interface FingerprintParts {
  readonly provider: string
  readonly sessionId: string
  /** the tool input: compared as canonical JSON (keys sorted, undefined dropped as JSON does) */
  readonly input: unknown
  readonly cwd: string
}

export interface AllowAlwaysOptions {
  readonly window?: Duration.DurationInput | undefined
  readonly maxEntries?: number | undefined
}

export const defaults = { window: Duration.minutes(30), maxEntries: 512 } as const

/** JSON with object keys sorted at every depth, so equal inputs have one spelling. Pure. */
export const canonicalJson = (value: unknown): string => JSON.stringify(sortKeys(value)) ?? "null"

const sortKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : sortKeys(v)))
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key]
      if (v !== undefined) out[key] = sortKeys(v)
    }
    return out
  }
  return value
}

/** The exact fingerprint: a digest of the four parts, each kept apart (no concatenation ambiguity). Pure. */
export const fingerprint = (parts: FingerprintParts): string =>
  createHash("sha256")
    .update(JSON.stringify([parts.provider, parts.sessionId, canonicalJson(parts.input), parts.cwd]))
    .digest("hex")

export interface AllowAlways {
  readonly remember: (parts: FingerprintParts) => Effect.Effect<void>
  /** an exact, unexpired match */
  readonly allows: (parts: FingerprintParts) => Effect.Effect<boolean>
  readonly size: Effect.Effect<number>
}

export const make = (options: AllowAlwaysOptions = {}): Effect.Effect<AllowAlways> =>
  Effect.gen(function* () {
    const windowMillis = Duration.toMillis(options.window ?? defaults.window)
    const maxEntries = Math.max(1, Math.floor(options.maxEntries ?? defaults.maxEntries))
    // insertion order is age order: the first key is the oldest
    const entries = yield* Ref.make(new Map<string, number>())
    return {
      remember: (parts) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Ref.update(entries, (current) => {
            const next = new Map<string, number>()
            for (const [key, expiry] of current) if (expiry > now) next.set(key, expiry)
            const key = fingerprint(parts)
            next.delete(key)
            next.set(key, now + windowMillis)
            for (const oldest of next.keys()) {
              if (next.size <= maxEntries) break
              next.delete(oldest)
            }
            return next
          })
        ),
      allows: (parts) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.map(Ref.get(entries), (current) => {
            const expiry = current.get(fingerprint(parts))
            return expiry !== undefined && now < expiry
          })
        ),
      size: Effect.map(Ref.get(entries), (m) => m.size)
    }
  })
