// The chat view at a terminal streams the reply as it is written and names what the agent runs; both come from the
// model, so an escape sequence in them (even split over deltas) never reaches the terminal raw.
import { describe, expect, it, vi } from "@effect/vitest"
import { Effect } from "effect"
import type { ServerNotification } from "../../schemas/protocol.js"
import { makeView } from "../../src/cli/chat/view.js"
import { TurnEvent } from "../../src/turn/TurnEvent.js"

const notification = (_tag: string, params: Record<string, unknown>) =>
  TurnEvent.Notification({ notification: { _tag, params } as unknown as ServerNotification })

describe("chat view", () => {
  it.scoped("streamed deltas and progress labels are printed without their escape sequences", () =>
    Effect.gen(function* () {
      const out: Array<string> = []
      const err: Array<string> = []
      const stdout = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => (out.push(String(chunk)), true))
      const stderr = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => (err.push(String(chunk)), true))
      yield* Effect.addFinalizer(() => Effect.sync(() => (stdout.mockRestore(), stderr.mockRestore())))
      const view = yield* makeView({ json: false, sessionId: () => "chat-view", stream: true, progress: true })
      yield* view.begin
      const ids = { threadId: "th", turnId: "t" }
      yield* view.onEvent(notification("ItemStarted", { ...ids, item: { type: "commandExecution", id: "c1", command: "\u001b]0;pwned\u0007ls\u001b[2J" } }))
      for (const delta of ["\u001b[2", "J\u001b]0;pw", "ned\u0007hel", "lo\u0007", "\r\n"]) {
        yield* view.onEvent(notification("AgentMessageDelta", { ...ids, itemId: "m1", delta }))
      }
      yield* view.onEvent(notification("ItemCompleted", { ...ids, item: { type: "agentMessage", id: "m1", text: "(raw)" } }))
      yield* view.end
      expect(out.join("")).toBe("hello␇\n")
      // the progress line's own cursor control is the only escape sequence on stderr; the label is the command's text
      const labels = err.join("").replaceAll("\r\u001b[2K", "")
      expect(labels).not.toContain("\u001b")
      expect(labels).toContain("running ls")
    }))
})
