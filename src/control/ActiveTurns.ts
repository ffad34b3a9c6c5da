// The turns `serve` is running, one per session: a second `StartTurn` for a session with a running turn is refused
// (`Steer` adds to it instead), `Interrupt` reaches the turn's fiber from any client, and shutdown drains them: new
// turns are refused, running ones get a grace period to finish, then they are interrupted (and Codex is told, as on
// Ctrl-C) and waited for within a bound.
import { Context, Deferred, Duration, Effect, Fiber, Layer, Option, Ref } from "effect"

interface Running {
  readonly fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  readonly turnId: string | undefined
}

export interface ActiveTurnsService {
  /** false when the session already has a turn (or the service is draining) */
  readonly claim: (sessionId: string) => Effect.Effect<"claimed" | "busy" | "draining">
  readonly attach: (sessionId: string, fiber: Fiber.RuntimeFiber<unknown, unknown>) => Effect.Effect<void>
  readonly started: (sessionId: string, turnId: string) => Effect.Effect<void>
  readonly release: (sessionId: string) => Effect.Effect<void>
  readonly interrupt: (sessionId: string) => Effect.Effect<boolean>
  readonly list: Effect.Effect<ReadonlyArray<{ readonly session_id: string; readonly turn_id?: string }>>
  readonly draining: Effect.Effect<boolean>
  /** refuses new turns; waits up to `grace` for running ones, then interrupts them and waits up to `bound` more */
  readonly drain: (grace: Duration.DurationInput, bound: Duration.DurationInput) => Effect.Effect<{ readonly interrupted: number }>
}

export class ActiveTurns extends Context.Tag("codex-harness/control/ActiveTurns")<ActiveTurns, ActiveTurnsService>() {}

export const make = Effect.gen(function* () {
  const turns = yield* Ref.make(new Map<string, Running>())
  const draining = yield* Ref.make(false)
  // completed each time the last turn ends, so a drain waits on a receipt instead of polling
  const idle = yield* Ref.make(yield* Deferred.make<void>())

  const update = (f: (m: Map<string, Running>) => void) =>
    Ref.update(turns, (m) => {
      const next = new Map(m)
      f(next)
      return next
    })

  const release = (sessionId: string) =>
    Effect.gen(function* () {
      yield* update((m) => m.delete(sessionId))
      if ((yield* Ref.get(turns)).size === 0) {
        const done = yield* Ref.get(idle)
        yield* Deferred.succeed(done, undefined)
        yield* Ref.set(idle, yield* Deferred.make<void>())
      }
    })

  const service: ActiveTurnsService = {
    claim: (sessionId) =>
      Effect.flatMap(Ref.get(draining), (isDraining) =>
        isDraining
          ? Effect.succeed("draining" as const)
          : Ref.modify(turns, (m) =>
            m.has(sessionId)
              ? ["busy" as const, m]
              : ["claimed" as const, new Map(m).set(sessionId, { fiber: undefined, turnId: undefined })]
          )),
    attach: (sessionId, fiber) => update((m) => m.set(sessionId, { fiber, turnId: m.get(sessionId)?.turnId })),
    started: (sessionId, turnId) => update((m) => m.set(sessionId, { fiber: m.get(sessionId)?.fiber, turnId })),
    release,
    interrupt: (sessionId) =>
      Effect.flatMap(Ref.get(turns), (m) => {
        const fiber = m.get(sessionId)?.fiber
        return fiber === undefined ? Effect.succeed(false) : Fiber.interrupt(fiber).pipe(Effect.as(true))
      }),
    list: Effect.map(Ref.get(turns), (m) =>
      [...m.entries()].map(([session_id, r]) => (r.turnId === undefined ? { session_id } : { session_id, turn_id: r.turnId }))),
    draining: Ref.get(draining),
    drain: (grace, bound) =>
      Effect.gen(function* () {
        yield* Ref.set(draining, true)
        if ((yield* Ref.get(turns)).size === 0) return { interrupted: 0 }
        // Fix: `serve` drains in a finalizer, which runs uninterruptibly, and a timeout cannot interrupt an
        // uninterruptible wait: the grace (and the bound) never ended while a turn hung, so SIGTERM never stopped the
        // service. Each timed wait is made interruptible inside its timeout (only the wait is abandoned, not the drain).
        const finished = yield* Effect.flatMap(Ref.get(idle), Deferred.await).pipe(Effect.interruptible, Effect.timeoutOption(grace))
        if (Option.isSome(finished)) return { interrupted: 0 }
        const fibers = [...(yield* Ref.get(turns)).values()].flatMap((r) => (r.fiber === undefined ? [] : [r.fiber]))
        yield* Effect.forEach(fibers, (f) => Fiber.interrupt(f), { concurrency: "unbounded", discard: true }).pipe(
          Effect.interruptible,
          Effect.timeoutOption(bound)
        )
        return { interrupted: fibers.length }
      })
  }
  return service
})

export const layer = Layer.effect(ActiveTurns, make)
