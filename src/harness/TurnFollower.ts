// What the harness does with a turn's events while it runs, besides passing them on: the running turn is told to
// whoever runs it (the session's work registry, for steering and the archive guard), the lifecycle observations are projected (llm_input, llm_output,
// compaction, native hook runs, S24), an in-turn native compaction's start is mirrored, and the last completed reply is
// kept so a turn that fails or is interrupted later still delivers it.
import { Effect } from "effect"
import type { ServerNotification, UserInput } from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { TranscriptMirrorService } from "../session/TranscriptMirror.js"
import type { LifecycleBusService } from "../turn/LifecycleBus.js"
import type { EventSink, LiveTurn } from "../turn/TurnEvent.js"

export interface FollowerOptions {
  readonly sessionId: string
  readonly threadId: string
  readonly connection: AppServerConnection
  readonly input: ReadonlyArray<UserInput>
  readonly onEvent: EventSink
  readonly bus: LifecycleBusService
  /** told when the app-server has started the turn, before the TurnStarted event */
  readonly onLive: (turn: LiveTurn) => Effect.Effect<void>
  readonly mirror: TranscriptMirrorService
}

export interface Follower {
  /** the sink for the turn runner */
  readonly sink: EventSink
  /** the turn, once the app-server started it */
  readonly startedTurnId: () => string | undefined
  /** the last agent message that completed */
  readonly lastText: () => { readonly text: string; readonly turnId: string } | undefined
  /** native compactions that started in the turn and have not completed */
  readonly openCompactions: () => number
}

export const make = (options: FollowerOptions): Follower => {
  const { bus, connection, mirror, onEvent, onLive, sessionId, threadId } = options
  let startedTurnId: string | undefined
  let lastText: { readonly text: string; readonly turnId: string } | undefined
  const compacting = new Set<string>()
  const where = (turnId: string) => ({ sessionId, threadId, turnId })

  const observe = (n: ServerNotification): Effect.Effect<void> => {
    switch (n._tag) {
      case "ItemCompleted": {
        const item = n.params.item
        if (item.type === "agentMessage" && "text" in item && typeof item.text === "string") {
          lastText = { text: item.text, turnId: n.params.turnId }
          return bus.observe({ type: "llm_output", ...where(n.params.turnId), text: item.text })
        }
        if (item.type === "contextCompaction") {
          compacting.delete(item.id)
          return bus.observe({ type: "after_compaction", ...where(n.params.turnId), status: "completed" })
        }
        return Effect.void
      }
      case "ItemStarted": {
        if (n.params.item.type !== "contextCompaction") return Effect.void
        compacting.add(n.params.item.id)
        return mirror.compaction(sessionId, { threadId, turnId: n.params.turnId }, "started").pipe(
          Effect.catchAll((error) => Effect.logWarning(error.message)),
          Effect.zipRight(bus.observe({ type: "before_compaction", ...where(n.params.turnId) }))
        )
      }
      case "HookStarted":
      case "HookCompleted":
        return bus.observe({
          type: "agent_event",
          name: "codex_app_server.hook",
          sessionId,
          phase: n._tag === "HookStarted" ? "started" : "completed",
          payload: n.params
        })
      default:
        return Effect.void
    }
  }

  const sink: EventSink = (event) => {
    switch (event._tag) {
      case "TurnStarted": {
        startedTurnId = event.turnId
        const registered = onLive({ connection, threadId, turnId: event.turnId })
        const observed = bus.observed
          ? bus.observe({
            type: "llm_input",
            ...where(event.turnId),
            input: options.input.flatMap((i) => (i.type === "text" ? [i.text] : []))
          })
          : Effect.void
        return registered.pipe(Effect.zipRight(observed), Effect.zipRight(onEvent(event)))
      }
      case "Notification":
        return observe(event.notification).pipe(Effect.zipRight(onEvent(event)))
      default:
        return onEvent(event)
    }
  }

  return {
    sink,
    startedTurnId: () => startedTurnId,
    lastText: () => lastText,
    openCompactions: () => compacting.size
  }
}
