// A Delivery for tests: keeps every reply in order, so a test can assert exactly what a person would have seen.
import { Context, Effect, Layer, Ref } from "effect"
import { Delivery, type Reply } from "../ports/Delivery.js"

/**
 * A Delivery that keeps every reply, for a test that only reads them (`layer` provides both tags).
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Harness } from "codex-harness"
 * import * as Test from "codex-harness/layers/Test"
 * import { RecordingDelivery } from "codex-harness/testing"
 *
 * const replies = Effect.gen(function* () {
 *   yield* (yield* Harness.Harness).runTurn({ sessionId: "t1", prompt: "hi" })
 *   return yield* (yield* RecordingDelivery.RecordingDelivery).replies
 * }).pipe(Effect.provide(Test.layer().pipe(Layer.provideMerge(RecordingDelivery.layer))), Effect.scoped)
 * ```
 */
export class RecordingDelivery extends Context.Tag("codex-harness/testing/RecordingDelivery")<
  RecordingDelivery,
  { readonly replies: Effect.Effect<ReadonlyArray<Reply>> }
>() {}

/** Provides Delivery and the RecordingDelivery view of what was delivered. */
export const layer: Layer.Layer<Delivery | RecordingDelivery> = Layer.effectContext(
  Effect.gen(function* () {
    const replies = yield* Ref.make<ReadonlyArray<Reply>>([])
    return Context.make(Delivery, { deliver: (reply) => Ref.update(replies, (all) => [...all, reply]) }).pipe(
      Context.add(RecordingDelivery, { replies: Ref.get(replies) })
    )
  })
)
