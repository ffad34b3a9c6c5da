// Who is known to be running on a thread right now (S16): the local sessions whose turn (or manual compaction) is in
// flight on it, as this process's CodexHarness tracks them. It cannot see other processes; that gap is what the
// operator's no-other-runner confirmation covers. Without a CodexHarness in the context nobody is known to run.
import { Context, Effect, Layer, Option } from "effect"
import { CodexHarness } from "../harness/CodexHarness.js"
import { SessionStore, type SessionStoreError } from "../session/SessionStore.js"

export interface RunOwner {
  readonly sessionId: string
  readonly threadId: string
  readonly turnId: string
}

export interface ActiveRunsService {
  /** the local sessions with a run in flight on any of these threads */
  readonly owners: (threadIds: ReadonlySet<string>) => Effect.Effect<ReadonlyArray<RunOwner>, SessionStoreError>
}

export class ActiveRuns extends Context.Tag("codex-harness/supervision/ActiveRuns")<ActiveRuns, ActiveRunsService>() {}

export const make = Effect.gen(function* () {
  const store = yield* SessionStore
  const harness = yield* Effect.serviceOption(CodexHarness)
  return {
    owners: (threadIds) =>
      Option.match(harness, {
        onNone: () => Effect.succeed([]),
        onSome: (h) =>
          Effect.flatMap(store.list, (sessions) =>
            Effect.forEach(sessions, (s) =>
              Effect.map(h.activeTurn(s.sessionId), (active): ReadonlyArray<RunOwner> =>
                active !== undefined && threadIds.has(active.threadId)
                  ? [{ sessionId: s.sessionId, threadId: active.threadId, turnId: active.turnId }]
                  : []
              )
            )
          ).pipe(Effect.map((found) => found.flat()))
      })
  } satisfies ActiveRunsService
})

export const layer: Layer.Layer<ActiveRuns, never, SessionStore> = Layer.effect(ActiveRuns, make)
