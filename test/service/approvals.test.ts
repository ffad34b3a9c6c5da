// Approvals against the in-memory app-server (S27-S29): explicit allow or decline only, allow-always for the exact
// fingerprint, MCP tool approvals classified first, other elicitations left alone, prompt timeouts on the TestClock.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, FastCheck as fc, Fiber, Layer, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import * as Approvals from "../../src/approvals/Approvals.js"
import { HookReports } from "../../src/approvals/HookRelay.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import {
  type ApprovalDecision,
  ApprovalPromptFailed,
  ApprovalPrompts,
  type ApprovalRequest
} from "../../src/ports/ApprovalPrompts.js"
import { type ClientReply, type Handler, MockAppServer } from "../../src/testing/MockAppServer.js"

interface Ids {
  readonly threadId: string
  readonly turnId: string
}
interface Step {
  readonly method: string
  readonly params: (ids: Ids) => Record<string, unknown>
  readonly before?: { readonly method: string; readonly params: (ids: Ids) => Record<string, unknown> } | undefined
}

/** a turn/start that sends these server requests one after another, records the replies, then completes the turn */
const turnAsking = (steps: ReadonlyArray<Step>, replies: Array<ClientReply>): Handler => (params, ctx) =>
  Effect.tap(ctx.fallback, () =>
    ctx.afterReply(
      Effect.gen(function* () {
        const turnId = yield* ctx.awaitActiveTurn(params.threadId)
        const ids = { threadId: params.threadId as string, turnId }
        for (const step of steps) {
          if (step.before !== undefined) yield* ctx.notify(step.before.method, step.before.params(ids))
          replies.push(yield* ctx.request(step.method, step.params(ids)))
        }
        yield* ctx.finishTurn(params.threadId, { status: "completed", text: "ok" })
      })
    )
  )

const command = (cmd: string, cwd = "/mock/workspace"): Step => ({
  method: "item/commandExecution/requestApproval",
  params: (ids) => ({
    kind: "command", ...ids, itemId: "call_cmd", startedAtMs: 0, environmentId: "local",
    command: `/bin/bash -lc '${cmd}'`, cwd, commandActions: [], availableDecisions: ["accept", "cancel"]
  })
})

const mcpApproval: Step = {
  method: "mcpServer/elicitation/request",
  params: (ids) => ({
    ...ids, serverName: "elic", environmentId: null, mode: "form",
    _meta: { codex_approval_kind: "mcp_tool_call", persist: ["session", "always"], tool_name: "ask_name", tool_description: "asks a name", tool_params: { q: 1 }, tool_params_display: [] },
    message: 'Allow the elic MCP server to run tool "ask_name"?',
    requestedSchema: { type: "object", properties: {} }
  })
}

/** A scripted prompt: records what it was asked and answers with `answer`. */
const scripted = () => {
  const asked: Array<ApprovalRequest> = []
  let answer: (r: ApprovalRequest) => Effect.Effect<ApprovalDecision, ApprovalPromptFailed> = () => Effect.succeed("deny")
  const layer = Layer.succeed(ApprovalPrompts, {
    ask: (request) => Effect.suspend(() => {
      asked.push(request)
      return answer(request)
    })
  })
  return {
    asked,
    layer,
    answer: (f: typeof answer) => {
      answer = f
    },
    always: (d: ApprovalDecision) => {
      answer = () => Effect.succeed(d)
    }
  }
}

/** the production composition (approvals among its turn extensions) with this prompt port */
const harnessWith = (prompts: Layer.Layer<ApprovalPrompts>, options: Approvals.ApprovalsOptions = {}) =>
  Test.layer({
    script: { turns: "hang" },
    settings: options.allowAlways?.window !== undefined ? { allowAlwaysWindow: options.allowAlways.window } : {}
  }).pipe(Layer.provide(prompts))

const runAsking = (sessionId: string, steps: ReadonlyArray<Step>) =>
  Effect.gen(function* () {
    const replies: Array<ClientReply> = []
    const mock = yield* MockAppServer
    yield* mock.setHandler("turn/start", turnAsking(steps, replies))
    const result = yield* (yield* CodexHarness).runTurn({ sessionId, prompt: "go" })
    expect(result.status).toBe("completed")
    return replies
  })

const results = (replies: ReadonlyArray<ClientReply>) => replies.map((r) => (r._tag === "Result" ? r.result : r))

describe("approvals", () => {
  it.scoped("[S27] allowOnce accepts; deny and noDecision decline; the prompt sees the command and cwd", () => {
    const prompts = scripted()
    return Effect.gen(function* () {
      prompts.always("allowOnce")
      expect(results(yield* runAsking("a1", [command("touch x")]))).toEqual([{ decision: "accept" }])
      expect(prompts.asked[0]).toMatchObject({
        kind: "command", sessionId: "a1", itemId: "call_cmd", command: "/bin/bash -lc 'touch x'", cwd: "/mock/workspace"
      })
      prompts.always("deny")
      expect(results(yield* runAsking("a1", [command("touch x")]))).toEqual([{ decision: "decline" }])
      prompts.always("noDecision")
      expect(results(yield* runAsking("a1", [command("touch x")]))).toEqual([{ decision: "decline" }])
      expect(prompts.asked).toHaveLength(3)
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })

  it.scoped("[S27] a prompt that never answers is declined after the prompt timeout (TestClock)", () => {
    const prompts = scripted()
    return Effect.gen(function* () {
      const asking = yield* Deferred.make<void>()
      prompts.answer(() => Effect.zipRight(Deferred.succeed(asking, undefined), Effect.never))
      const turn = yield* Effect.fork(runAsking("t1", [command("touch x")]))
      yield* Deferred.await(asking)
      yield* TestClock.adjust(Duration.minutes(4))
      expect(turn.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.seconds(61))
      expect(results(yield* Fiber.join(turn))).toEqual([{ decision: "decline" }])
    }).pipe(Effect.provide(harnessWith(prompts.layer, { promptTimeout: Duration.minutes(5) })))
  })

  it.scoped("[S27] a prompt that fails (or dies) is declined", () => {
    const prompts = scripted()
    return Effect.gen(function* () {
      prompts.answer(() => Effect.fail(new ApprovalPromptFailed({ reason: "channel gone" })))
      expect(results(yield* runAsking("f1", [command("touch x")]))).toEqual([{ decision: "decline" }])
      prompts.answer(() => Effect.die("boom"))
      expect(results(yield* runAsking("f1", [command("touch x")]))).toEqual([{ decision: "decline" }])
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })

  it.scoped("[S28] allowAlways: the exact same request is accepted without asking; another cwd, command or session asks again", () => {
    const prompts = scripted()
    return Effect.gen(function* () {
      prompts.always("allowAlways")
      const first = yield* runAsking("s1", [command("touch x"), command("touch x")])
      expect(results(first)).toEqual([{ decision: "accept" }, { decision: "accept" }])
      expect(prompts.asked).toHaveLength(1)
      // remembered across turns of the session
      prompts.always("deny")
      expect(results(yield* runAsking("s1", [command("touch x")]))).toEqual([{ decision: "accept" }])
      expect(prompts.asked).toHaveLength(1)
      // any other value asks again (and the deny is a decline)
      const others = yield* runAsking("s1", [command("touch x", "/elsewhere"), command("touch y")])
      expect(results(others)).toEqual([{ decision: "decline" }, { decision: "decline" }])
      expect(results(yield* runAsking("s2", [command("touch x")]))).toEqual([{ decision: "decline" }])
      expect(prompts.asked).toHaveLength(4)
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })

  it.scoped("[S28] allowAlways expires after its window", () => {
    const prompts = scripted()
    return Effect.gen(function* () {
      prompts.always("allowAlways")
      yield* runAsking("w1", [command("touch x")])
      prompts.always("deny")
      yield* TestClock.adjust(Duration.minutes(2))
      expect(results(yield* runAsking("w1", [command("touch x")]))).toEqual([{ decision: "decline" }])
      expect(prompts.asked).toHaveLength(2)
    }).pipe(Effect.provide(harnessWith(prompts.layer, { allowAlways: { window: Duration.minutes(1) } })))
  })

  it.scoped("[S27] a file-change approval shows the item's changes; accept and decline map back", () => {
    const prompts = scripted()
    const fileChange: Step = {
      before: {
        method: "item/started",
        params: (ids) => ({
          ...ids, startedAtMs: 0,
          item: { type: "fileChange", id: "c_patch", status: "inProgress", changes: [{ path: "/w/hello.txt", kind: { type: "add" }, diff: "hello\n" }] }
        })
      },
      method: "item/fileChange/requestApproval",
      params: (ids) => ({ ...ids, itemId: "c_patch", startedAtMs: 0, reason: null, grantRoot: null })
    }
    return Effect.gen(function* () {
      prompts.always("allowOnce")
      expect(results(yield* runAsking("fc", [fileChange]))).toEqual([{ decision: "accept" }])
      expect(prompts.asked[0]).toMatchObject({ kind: "fileChange", itemId: "c_patch", changes: [{ path: "/w/hello.txt", kind: "add", diff: "hello\n" }] })
      prompts.always("deny")
      expect(results(yield* runAsking("fc", [fileChange]))).toEqual([{ decision: "decline" }])
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })

  it.scoped("[S27] a permissions request grants what was asked on allow and nothing on deny", () => {
    const prompts = scripted()
    const permissions: Step = {
      method: "item/permissions/requestApproval",
      params: (ids) => ({
        ...ids, itemId: "p1", environmentId: null, startedAtMs: 0, cwd: "/mock/workspace", reason: "needs network",
        permissions: { network: { enabled: true }, fileSystem: null }
      })
    }
    return Effect.gen(function* () {
      prompts.always("allowOnce")
      expect(results(yield* runAsking("pm", [permissions]))).toEqual([{ permissions: { network: { enabled: true } }, scope: "turn" }])
      expect(prompts.asked[0]).toMatchObject({ kind: "permissions", reason: "needs network" })
      prompts.always("noDecision")
      expect(results(yield* runAsking("pm", [permissions]))).toEqual([{ permissions: {}, scope: "turn" }])
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })

  it.scoped("[S29] an MCP tool approval goes to the prompt as kind mcpTool and maps back (accept, decline)", () => {
    const prompts = scripted()
    return Effect.gen(function* () {
      prompts.always("allowOnce")
      expect(results(yield* runAsking("m1", [mcpApproval]))).toEqual([{ action: "accept", content: {}, _meta: null }])
      expect(prompts.asked[0]).toMatchObject({
        kind: "mcpTool", serverName: "elic", toolName: "ask_name", toolDescription: "asks a name", params: { q: 1 },
        message: 'Allow the elic MCP server to run tool "ask_name"?'
      })
      prompts.always("deny")
      expect(results(yield* runAsking("m1", [mcpApproval]))).toEqual([{ action: "decline", content: null, _meta: null }])
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })

  it.scoped("[S29] an ordinary elicitation never reaches the approval prompts (the question flow declines it); another thread's approval gets no answer here", () => {
    const prompts = scripted()
    const ordinary: Step = {
      method: "mcpServer/elicitation/request",
      params: (ids) => ({
        ...ids, serverName: "elic", environmentId: null, mode: "form", _meta: null, message: "What is your name?",
        requestedSchema: { type: "object", properties: { name: { type: "string" } } }
      })
    }
    const otherThread: Step = { ...command("touch x"), params: (ids) => ({ ...command("touch x").params(ids), threadId: "another-thread" }) }
    return Effect.gen(function* () {
      prompts.always("allowOnce")
      const replies = yield* runAsking("o1", [ordinary, otherThread])
      expect(replies.map((r) => r._tag)).toEqual(["Result", "Error"])
      expect(replies[0]).toMatchObject({ result: { action: "decline" } })
      expect(replies[1]).toMatchObject({ error: { code: -32601 } })
      expect(prompts.asked).toHaveLength(0)
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })

  it.scoped("[S29] unmappable requests are declined explicitly without asking", () => {
    const prompts = scripted()
    const brokenCommand: Step = {
      method: "item/commandExecution/requestApproval",
      params: (ids) => ({ ...ids, itemId: "c", command: null })
    }
    const brokenMcp: Step = {
      ...mcpApproval,
      params: (ids) => ({ ...mcpApproval.params(ids), _meta: { codex_approval_kind: "mcp_tool_call" } })
    }
    const brokenFile: Step = { method: "item/fileChange/requestApproval", params: (ids) => ({ threadId: ids.threadId, itemId: 7 }) }
    return Effect.gen(function* () {
      prompts.always("allowOnce")
      expect(results(yield* runAsking("u1", [brokenCommand, brokenMcp, brokenFile]))).toEqual([
        { decision: "decline" },
        { action: "decline", content: null, _meta: null },
        { decision: "decline" }
      ])
      expect(prompts.asked).toHaveLength(0)
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })
})

describe("report mode", () => {
  it.scoped("[S22] a requirement recorded in report mode shows with the app-server's later approval for the same tool use, and its decision maps back", () => {
    const prompts = scripted()
    return Effect.gen(function* () {
      const reports = yield* HookReports
      yield* reports.record({
        sessionId: "r1",
        threadId: undefined,
        turnId: undefined,
        toolUseId: "call_cmd",
        command: "touch x",
        toolName: "Bash",
        toolInput: { command: "touch x" },
        reason: "the deploy plugin wants to review shell commands",
        recordedAt: 0
      })
      prompts.always("allowOnce")
      expect(results(yield* runAsking("r1", [command("touch x")]))).toEqual([{ decision: "accept" }])
      expect(prompts.asked[0]).toMatchObject({ kind: "command", reason: "the deploy plugin wants to review shell commands" })
      // taken once: the requirement does not linger for later tool uses
      expect(yield* reports.pending).toEqual([])
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })
})

describe("no path turns a missing decision into an allow", () => {
  it.scoped("[S27] property: over random prompt outcomes, a request is accepted exactly when the prompt explicitly allowed it", () => {
    const prompts = scripted()
    type Outcome = "allowOnce" | "allowAlways" | "deny" | "noDecision" | "fail" | "die" | "interrupt"
    const outcomes = fc.sample(
      fc.constantFrom<Outcome>("allowOnce", "allowAlways", "deny", "noDecision", "fail", "die", "interrupt"),
      { numRuns: 60, seed: 7 }
    )
    return Effect.gen(function* () {
      let next = 0
      prompts.answer(() => {
        const outcome = outcomes[next++]!
        switch (outcome) {
          case "fail":
            return Effect.fail(new ApprovalPromptFailed({ reason: "the prompt went away" }))
          case "die":
            return Effect.die("prompt crashed")
          case "interrupt":
            return Effect.interrupt
          default:
            return Effect.succeed(outcome)
        }
      })
      // a distinct command each time, so an allow-always never answers a later request by itself
      const replies = yield* runAsking("prop", outcomes.map((_, i) => command(`touch file-${i}`)))
      expect(results(replies)).toEqual(
        outcomes.map((o) => ({ decision: o === "allowOnce" || o === "allowAlways" ? "accept" : "decline" }))
      )
    }).pipe(Effect.provide(harnessWith(prompts.layer)))
  })
})
