// `run`'s progress lines at a terminal: one when the turn starts and one per completed command, file change and tool
// call; nothing for the rest.
import { describe, expect, it } from "@effect/vitest"
import { progressLine } from "../../src/cli/runProgress.js"
import { TurnEvent } from "../../src/turn/TurnEvent.js"
import type { ServerNotification } from "../../schemas/protocol.js"

const completed = (item: Record<string, unknown>) =>
  TurnEvent.Notification({
    notification: { _tag: "ItemCompleted", method: "item/completed", params: { threadId: "t", turnId: "u", item } } as unknown as ServerNotification
  })

describe("progressLine", () => {
  it("names what the agent did, and nothing else", () => {
    expect(progressLine(TurnEvent.TurnStarted({ threadId: "t", turnId: "u" }))).toMatch(/^… working/)
    expect(progressLine(completed({ type: "commandExecution", id: "1", command: "ls -la", exitCode: 0 }))).toBe("› ran ls -la (exit 0)")
    expect(progressLine(completed({ type: "fileChange", id: "2", changes: [{ path: "a.txt" }, { path: "b.txt" }] }))).toBe("› changed a.txt, b.txt")
    expect(progressLine(completed({ type: "mcpToolCall", id: "3", server: "docs", tool: "search", status: "failed" }))).toBe("› called docs.search (failed)")
    expect(progressLine(completed({ type: "agentMessage", id: "4", text: "hi" }))).toBeUndefined()
    expect(progressLine(completed({ type: "commandExecution", id: "5", command: "x".repeat(500), exitCode: 1 }))!.length).toBeLessThan(180)
  })
})
