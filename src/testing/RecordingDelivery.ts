// A Delivery for tests: keeps every reply in order, so a test can assert exactly what a person would have seen.
import { Context, Effect, Layer, Ref } from "effect"
import { Delivery, type Reply } from "../ports/Delivery.js"

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
