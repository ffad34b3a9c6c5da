// The harness's own reply tools as a turn extension: `message` (in message_tool mode the only visible path, S18) and
// `heartbeat_respond` (answered only inside a heartbeat turn, S19). What they send goes to Delivery and the transcript
// mirror; a failed delivery or record becomes a failed tool result or a logged warning, never a dropped call.
import { Effect } from "effect"
import { Settings } from "../config/Settings.js"
import { Delivery, type Reply } from "../ports/Delivery.js"
import { TranscriptMirror } from "../session/TranscriptMirror.js"
import type { InstalledTurn, TurnExtension } from "../turn/TurnExtension.js"
import * as HarnessTools from "./HarnessTools.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export const make = Effect.gen(function* () {
  const settings = yield* Settings
  const delivery = yield* Delivery
  const mirror = yield* TranscriptMirror
  const messageToolMode = settings.visibleReplies === "message_tool"
  // threads running a heartbeat turn right now (marked before turn/start, so no tool call can race it)
  const heartbeatThreads = new Set<string>()

  const deliver = (reply: Reply) =>
    delivery.deliver(reply).pipe(Effect.withSpan("Delivery.deliver", { attributes: { source: reply.source } }))

  const tools = (sessionId: string) => [
    ...(messageToolMode
      ? [
        HarnessTools.messageTool((text, call) =>
          deliver({ sessionId, text, media: [], source: "message_tool" }).pipe(
            Effect.zipRight(mirror.message(sessionId, call, text)),
            Effect.mapError((error) => ({ message: error.message }))
          )
        )
      ]
      : []),
    HarnessTools.heartbeatRespondTool(
      (call) => heartbeatThreads.has(call.threadId),
      (outcome, message, call) =>
        Effect.gen(function* () {
          if (outcome === "notify" && message !== undefined) {
            yield* deliver({ sessionId, text: message, media: [], source: "heartbeat" }).pipe(
              Effect.catchAll((error) => HarnessLog.warning(error.message))
            )
          }
          yield* mirror.heartbeat(sessionId, call, outcome, message).pipe(Effect.catchAll((error) => HarnessLog.warning(error.message)))
        })
    )
  ]

  const install = (turn: InstalledTurn) =>
    turn.kind !== "heartbeat"
      ? Effect.void
      : Effect.acquireRelease(Effect.sync(() => void heartbeatThreads.add(turn.threadId)), () =>
        Effect.sync(() => void heartbeatThreads.delete(turn.threadId)))

  return { name: "reply-tools", tools, install } satisfies TurnExtension
})
