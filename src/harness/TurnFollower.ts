// What the harness does with a turn's events while it runs, besides passing them on: the running turn is told to
// whoever runs it (the session's work registry, for steering and the archive guard), the lifecycle observations are
// projected (llm_input, llm_output, compaction, native hook runs, S24), an in-turn native compaction's start is
// mirrored, and each Codex-native tool call that completes (a shell command, a file change, an MCP call) is described
// in the transcript (S38) before the turn reads its next notification, so the records keep the order of the calls and
// a turn that ends early keeps those that completed. It keeps nothing: what the turn has produced so far is the turn's
// own progress (TurnRunner.RunningTurn).
import { Effect } from "effect"
import type { ServerNotification, UserInput } from "../../schemas/protocol.js"
import type { AppServerConnection } from "../appserver/AppServerConnection.js"
import type { TranscriptMirrorService } from "../session/TranscriptMirror.js"
import type { RecordNativeCall } from "../tools/NativeToolCalls.js"
import type { LifecycleBusService } from "../turn/LifecycleBus.js"
import type { EventSink, LiveTurn } from "../turn/TurnEvent.js"
import * as HarnessLog from "../platform/HarnessLog.js"

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
  /** describes a completed Codex-native tool call in the transcript (NativeToolCalls); without it none is recorded */
  readonly recordNative?: RecordNativeCall | undefined
}

/** The sink the turn runner is given: it observes each event, then passes it on to `onEvent`. */
export const make = (options: FollowerOptions): EventSink => {
  const { bus, connection, mirror, onEvent, onLive, recordNative, sessionId, threadId } = options
  const where = (turnId: string) => ({ sessionId, threadId, turnId })

  const observe = (n: ServerNotification): Effect.Effect<void> => {
    switch (n._tag) {
      case "ItemCompleted": {
        const item = n.params.item
        if (item.type === "agentMessage") {
          return bus.observe({ type: "llm_output", ...where(n.params.turnId), text: item.text })
        }
        if (item.type === "contextCompaction") {
          return bus.observe({ type: "after_compaction", ...where(n.params.turnId), status: "completed" })
        }
        return recordNative === undefined ? Effect.void : recordNative(sessionId, { threadId, turnId: n.params.turnId }, item)
      }
      case "ItemStarted": {
        if (n.params.item.type !== "contextCompaction") return Effect.void
        return mirror.compaction(sessionId, { threadId, turnId: n.params.turnId }, "started").pipe(
          Effect.catchAll((error) => HarnessLog.warning(error.message)),
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

  return sink
}
