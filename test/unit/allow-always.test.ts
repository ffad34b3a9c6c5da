// Allow-always memory (S28): exact fingerprints only, a limited window on the Effect Clock, a bounded number of entries.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FastCheck as fc, TestClock, TestContext } from "effect"
import * as AllowAlways from "../../src/approvals/AllowAlways.js"

const json: fc.Arbitrary<unknown> = fc.jsonValue()
const parts = fc.record({
  provider: fc.string(),
  sessionId: fc.string(),
  input: json,
  cwd: fc.string()
})
const field = fc.constantFrom("provider", "sessionId", "input", "cwd")

const changed = (p: AllowAlways.FingerprintParts, which: string, other: AllowAlways.FingerprintParts) => ({ ...p, [which]: (other as any)[which] })

describe("allow-always", () => {
  it("[S28] canonical JSON ignores key order, nothing else", () => {
    expect(AllowAlways.canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"x":1,"y":2}]},"b":1}')
    expect(AllowAlways.fingerprint({ provider: "p", sessionId: "s", input: { a: 1, b: 2 }, cwd: "/w" })).toBe(
      AllowAlways.fingerprint({ provider: "p", sessionId: "s", input: { b: 2, a: 1 }, cwd: "/w" })
    )
    // the parts are kept apart: moving characters between parts changes the fingerprint
    expect(AllowAlways.fingerprint({ provider: "ab", sessionId: "c", input: 1, cwd: "/" })).not.toBe(
      AllowAlways.fingerprint({ provider: "a", sessionId: "bc", input: 1, cwd: "/" })
    )
  })

  it.effect("[S28] the exact fingerprint is allowed; any difference in any of the four parts asks again", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(parts, parts, field, async (p, q, which) => {
          const other = changed(p, which, q)
          const differs = AllowAlways.canonicalJson(other) !== AllowAlways.canonicalJson(p)
          const [same, different] = await Effect.runPromise(
            Effect.gen(function* () {
              const store = yield* AllowAlways.make()
              yield* store.remember(p)
              return [yield* store.allows({ ...p }), yield* store.allows(other)] as const
            })
          )
          expect(same).toBe(true)
          expect(different).toBe(!differs)
        }),
        { numRuns: 300 }
      )
    )
  )

  it.effect("[S28] an entry expires at the end of its window (TestClock), and remembering again renews it", () =>
    Effect.gen(function* () {
      const p = { provider: "p", sessionId: "s", input: { cmd: "touch x" }, cwd: "/w" }
      const store = yield* AllowAlways.make()
      yield* store.remember(p)
      yield* TestClock.adjust(Duration.minutes(29))
      expect(yield* store.allows(p)).toBe(true)
      yield* TestClock.adjust(Duration.minutes(1))
      expect(yield* store.allows(p)).toBe(false)
      yield* store.remember(p)
      yield* TestClock.adjust(Duration.minutes(29))
      expect(yield* store.allows(p)).toBe(true)
    })
  )

  it.effect("[S28] expiry holds for any window and any elapsed time", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 0, max: 20_000 }), async (windowMs, elapsed) => {
          const allowed = await Effect.runPromise(
            Effect.gen(function* () {
              const store = yield* AllowAlways.make({ window: Duration.millis(windowMs) })
              const p = { provider: "p", sessionId: "s", input: 1, cwd: "/" }
              yield* store.remember(p)
              yield* TestClock.adjust(Duration.millis(elapsed))
              return yield* store.allows(p)
            }).pipe(Effect.provide(TestContext.TestContext))
          )
          expect(allowed).toBe(elapsed < windowMs)
        }),
        { numRuns: 200 }
      )
    )
  )

  it.effect("[S28] the bound holds: at most maxEntries, the oldest dropped first", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 20 }), fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 80 }), async (max, keys) => {
          await Effect.runPromise(
            Effect.gen(function* () {
              const store = yield* AllowAlways.make({ maxEntries: max })
              const at = (k: number) => ({ provider: "p", sessionId: "s", input: k, cwd: "/" })
              // a model: keys in recency order
              let model: Array<number> = []
              for (const k of keys) {
                yield* store.remember(at(k))
                model = [...model.filter((m) => m !== k), k].slice(-max)
                expect(yield* store.size).toBeLessThanOrEqual(max)
              }
              for (let k = 0; k <= 40; k++) expect(yield* store.allows(at(k))).toBe(model.includes(k))
            })
          )
        }),
        { numRuns: 200 }
      )
    )
  )

  it.effect("[S28] defaults: 30 minutes and 512 entries", () =>
    Effect.gen(function* () {
      expect(Duration.toMinutes(AllowAlways.defaults.window)).toBe(30)
      expect(AllowAlways.defaults.maxEntries).toBe(512)
      const store = yield* AllowAlways.make()
      for (let k = 0; k < 600; k++) yield* store.remember({ provider: "p", sessionId: "s", input: k, cwd: "/" })
      expect(yield* store.size).toBe(512)
      expect(yield* store.allows({ provider: "p", sessionId: "s", input: 87, cwd: "/" })).toBe(false)
      expect(yield* store.allows({ provider: "p", sessionId: "s", input: 88, cwd: "/" })).toBe(true)
    })
  )
})
