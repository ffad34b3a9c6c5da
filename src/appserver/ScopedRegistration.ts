// An entry registered in place for the life of the current Scope (a connection's routes and observers, a dozen a turn),
// cheaper than an acquireRelease on that hot path. The removal is added to the Scope first and the entry registered
// after it, unless the removal has already run (a Scope already closed runs it at once); an interruption between the
// two leaves a removal of nothing.
import { Effect, Scope } from "effect"

export const registerForScope = (register: () => void, remove: Effect.Effect<void>): Effect.Effect<void, never, Scope.Scope> =>
  Effect.flatMap(Effect.scope, (scope) => {
    let gone = false
    const removal = Effect.zipRight(Effect.sync(() => void (gone = true)), remove)
    return Effect.map(Scope.addFinalizer(scope, removal), () => {
      if (!gone) register()
    })
  })
