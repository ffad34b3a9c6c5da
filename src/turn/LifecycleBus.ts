// One bus for lifecycle observations (S23, S24): every room hands its events here, and one observer fiber passes them
// to the PluginHooks port behind a bounded queue, so an observer can never block, delay or alter a turn. When the
// observer falls behind by `backlog` events the newest are dropped (and logged) rather than memory growing. Without
// observers (the port's default) nothing is queued at all.
import { Context, Effect, Layer, Queue } from "effect"
import { type LifecycleEvent, noObservers, PluginHooks } from "../ports/PluginHooks.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** Lifecycle events waiting for a slow observer before the newest are dropped. */
export const backlog = 1_024

export interface LifecycleBusService {
  /** queues the event for the observers; never waits */
  readonly observe: (event: LifecycleEvent) => Effect.Effect<void>
  /** false when nobody observes: callers may skip building events */
  readonly observed: boolean
}

export class LifecycleBus extends Context.Tag("codex-harness/LifecycleBus")<LifecycleBus, LifecycleBusService>() {}

export const make = Effect.gen(function* () {
  const hooks = yield* PluginHooks
  if (hooks === noObservers) return { observe: () => Effect.void, observed: false } satisfies LifecycleBusService
  const events = yield* Queue.dropping<LifecycleEvent>(backlog)
  yield* Queue.take(events).pipe(
    Effect.flatMap((event) =>
      hooks.observe(event).pipe(Effect.catchAllCause((cause) => HarnessLog.warning("a lifecycle observer failed", cause)))
    ),
    Effect.forever,
    Effect.forkScoped
  )
  return {
    observe: (event) =>
      Queue.offer(events, event).pipe(
        Effect.flatMap((accepted) => (accepted ? Effect.void : HarnessLog.warning(`lifecycle observer backlog full; dropped ${event.type}`)))
      ),
    observed: true
  } satisfies LifecycleBusService
})

export const layer: Layer.Layer<LifecycleBus> = Layer.scoped(LifecycleBus, make)
