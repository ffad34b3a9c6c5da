// An "always" answer that later allows a request by itself tells the prompt port (`remembered`), so a terminal can
// say what it let through; a request that is asked is not announced, and neither is one asked again after a deny.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type ApprovalDecision, ApprovalPrompts, type ApprovalRequest } from "../../src/ports/ApprovalPrompts.js"
import { type ClientReply, type Handler, MockAppServer } from "../../src/testing/MockAppServer.js"

/** a turn/start that asks to run each command in turn, records the replies, then completes the turn */
const turnAsking = (commands: ReadonlyArray<string>, replies: Array<ClientReply>): Handler => (params, ctx) =>
  Effect.tap(ctx.fallback, () =>
    ctx.afterReply(
      Effect.gen(function* () {
        const turnId = yield* ctx.awaitActiveTurn(params.threadId)
        for (const cmd of commands) {
          replies.push(yield* ctx.request("item/commandExecution/requestApproval", {
            kind: "command", threadId: params.threadId, turnId, itemId: "call_cmd", startedAtMs: 0, environmentId: "local",
            command: cmd, cwd: "/mock/workspace", commandActions: [], availableDecisions: ["accept", "cancel"]
          }))
        }
        yield* ctx.finishTurn(params.threadId, { status: "completed", text: "ok" })
      })
    )
  )

describe("allow-always announced", () => {
  it.scoped("[S28] a request an earlier \"always\" allowed without asking reaches `remembered`, once per such request", () => {
    const asked: Array<string> = []
    const remembered: Array<string> = []
    let answer: ApprovalDecision = "allowAlways"
    const prompts = Layer.succeed(ApprovalPrompts, {
      ask: (r: ApprovalRequest) => Effect.sync(() => (asked.push(r.kind === "command" ? r.command : r.kind), answer)),
      remembered: (r: ApprovalRequest) => Effect.sync(() => void remembered.push(r.kind === "command" ? r.command : r.kind))
    })
    return Effect.gen(function* () {
      const mock = yield* MockAppServer
      const replies: Array<ClientReply> = []
      yield* mock.setHandler("turn/start", turnAsking(["touch x", "touch x", "touch y"], replies))
      answer = "allowAlways"
      yield* (yield* CodexHarness).runTurn({ sessionId: "s1", prompt: "go" })
      // the first "touch x" and "touch y" were asked; the second "touch x" went through on the first's "always"
      expect(asked).toEqual(["touch x", "touch y"])
      expect(remembered).toEqual(["touch x"])
      expect(replies.map((r) => (r._tag === "Result" ? r.result : r))).toEqual([
        { decision: "accept" }, { decision: "accept" }, { decision: "accept" }
      ])
    }).pipe(Effect.provide(Test.layer({ script: { turns: "hang" } }).pipe(Layer.provide(prompts))))
  })
})
