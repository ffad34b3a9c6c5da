// The questions extension against the in-memory app-server (S29-S34): visible declines for what cannot be asked,
// serverRequest/resolved by exact id on the wire, the turn's abort withdrawing the prompt, and plain-text messages that
// answer a pending question through the steering queue, or are steered when the question is already gone.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Option, TestClock } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type QuestionPrompt, type QuestionReply, Questions as QuestionsPort } from "../../src/ports/Questions.js"
import { type ClientReply, duringTurn, type Handler, MockAppServer } from "../../src/testing/MockAppServer.js"
import { SessionWork } from "../../src/harness/SessionWork.js"
import { untilHolds } from "../support/untilHolds.js"

/** A port recording what it showed, what was withdrawn and what it was told; it answers with `answer`. */
const recordingPort = (answer: (prompt: QuestionPrompt) => Effect.Effect<QuestionReply> = () => Effect.never) => {
  const shown: Array<QuestionPrompt> = []
  const withdrawn: Array<string> = []
  const notices: Array<string> = []
  const layer = Layer.succeed(QuestionsPort, {
    ask: (prompt) =>
      Effect.suspend(() => {
        shown.push(prompt)
        return answer(prompt)
      }).pipe(Effect.onInterrupt(() => Effect.sync(() => void withdrawn.push(prompt.key)))),
    notify: ({ text }) => Effect.sync(() => void notices.push(text))
  })
  return { shown, withdrawn, notices, layer }
}

/** the production composition (questions among its turn extensions) with this question port */
const harnessWith = (port: Layer.Layer<QuestionsPort>) =>
  Test.layer({ script: { turns: "hang" }, settings: { quietWindow: "10 millis" } }).pipe(Layer.provide(port))

const rui = (ids: { threadId: string; turnId: string }) => ({
  ...ids,
  itemId: "call_rui",
  questions: [{ id: "db_choice", header: "Database", question: "Which one?", isOther: false, isSecret: false, options: [
    { label: "Postgres", description: "Robust" },
    { label: "SQLite", description: "Simple" }
  ] }],
  isBlocking: true,
  autoResolutionMs: null
})

const elicitation = (ids: { threadId: string; turnId: string }, body: Record<string, unknown>) => ({
  ...ids,
  serverName: "elic",
  environmentId: null,
  _meta: null,
  ...body
})

/** a turn that sends one server request (with `id` when given), records the reply, then completes */
const turnAsking = (
  method: string,
  params: (ids: { threadId: string; turnId: string }) => unknown,
  replies: Array<ClientReply>,
  id?: string | number
): Handler =>
  duringTurn((turn, ctx) =>
    Effect.gen(function* () {
      replies.push(yield* ctx.request(method, params(turn), id === undefined ? {} : { id }))
      yield* ctx.finishTurn(turn.threadId, { status: "completed", text: "done" })
    }))

/** runs one turn of a session that sends one elicitation with this body, and yields the client's reply to it */
const elicitOnce = (sessionId: string, body: Record<string, unknown>) =>
  Effect.gen(function* () {
    const replies: Array<ClientReply> = []
    const mock = yield* MockAppServer
    yield* mock.setHandler("turn/start", turnAsking("mcpServer/elicitation/request", (ids) => elicitation(ids, body), replies))
    const result = yield* (yield* CodexHarness).runTurn({ sessionId, prompt: "go" })
    expect(result.status).toBe("completed")
    return replies[0]
  })

const resultOf = (reply: ClientReply | undefined) => (reply?._tag === "Result" ? reply.result : reply)

const waitUntil = (probe: () => boolean) => untilHolds(Effect.sync(probe))

describe("questions extension", () => {
  it.scoped("[S31] an unknown extended field type in openai/form: a visible operator message and an explicit decline, nobody asked", () => {
    const port = recordingPort()
    return Effect.gen(function* () {
      const reply = yield* elicitOnce("q1", {
        mode: "openai/form",
        message: "Pick a map",
        requestedSchema: { type: "object", properties: { where: { type: "openai/mapPicker", title: "Where" } } }
      })
      expect(resultOf(reply)).toEqual({ action: "decline", content: null, _meta: null })
      expect(port.shown).toHaveLength(0)
      expect(port.notices).toHaveLength(1)
      expect(port.notices[0]).toContain("openai/mapPicker")
    }).pipe(Effect.provide(harnessWith(port.layer)))
  })

  it.scoped("[S32] a URL with credentials is never shown: a visible explanation and an explicit decline", () => {
    const port = recordingPort()
    return Effect.gen(function* () {
      const reply = yield* elicitOnce("q2", { mode: "url", message: "Sign in", url: "https://user:pw@example.com/", elicitationId: "e1" })
      expect(resultOf(reply)).toEqual({ action: "decline", content: null, _meta: null })
      expect(port.shown).toHaveLength(0)
      expect(port.notices.join("\n")).toMatch(/credential/i)
    }).pipe(Effect.provide(harnessWith(port.layer)))
  })

  it.scoped("[S29] an MCP tool approval never reaches the question flow", () => {
    const port = recordingPort(() => Effect.succeed({ _tag: "Answered", answers: {} }))
    return Effect.gen(function* () {
      const reply = yield* elicitOnce("q3", {
        mode: "form",
        _meta: { codex_approval_kind: "mcp_tool_call", tool_name: "ask_name" },
        message: "Allow?",
        requestedSchema: { type: "object", properties: {} }
      })
      expect(port.shown).toHaveLength(0)
      // the approvals room answers it (no approval port here: an explicit decline), never the form flow
      expect(resultOf(reply)).toEqual({ action: "decline", content: null, _meta: null })
    }).pipe(Effect.provide(harnessWith(port.layer)))
  })

  it.scoped("[S33] serverRequest/resolved for the exact string id withdraws the prompt; the integer with the same digits does not", () => {
    const port = recordingPort()
    return Effect.gen(function* () {
      const replies: Array<ClientReply> = []
      const mock = yield* MockAppServer
      yield* mock.setHandler("turn/start", duringTurn((turn, ctx) =>
        Effect.gen(function* () {
          const asking = yield* ctx.request("item/tool/requestUserInput", rui(turn), { id: "41" }).pipe(Effect.fork)
          yield* waitUntil(() => port.shown.length === 1)
          yield* ctx.notify("serverRequest/resolved", { threadId: turn.threadId, requestId: 41 })
          yield* Effect.repeatN(Effect.yieldNow(), 200)
          expect(port.withdrawn).toHaveLength(0)
          yield* ctx.notify("serverRequest/resolved", { threadId: turn.threadId, requestId: "41" })
          replies.push(yield* Fiber.join(asking))
          yield* ctx.finishTurn(turn.threadId, { status: "completed", text: "done" })
        })))
      yield* (yield* CodexHarness).runTurn({ sessionId: "q4", prompt: "go" })
      expect(port.withdrawn).toEqual([port.shown[0]!.key])
      expect(resultOf(replies[0])).toEqual({ answers: { db_choice: { answers: [] } } })
    }).pipe(Effect.provide(harnessWith(port.layer)))
  })

  it.scoped("[S33] aborting the turn cancels the owner in front: the prompt is withdrawn and a later reply finds nothing", () => {
    const port = recordingPort()
    return Effect.gen(function* () {
      const mock = yield* MockAppServer
      const asked = yield* Deferred.make<void>()
      yield* mock.setHandler("turn/start", duringTurn((turn, ctx) =>
        ctx.request("item/tool/requestUserInput", rui(turn)).pipe(Effect.zipRight(Deferred.succeed(asked, undefined)))))
      const harness = yield* CodexHarness
      const turn = yield* harness.runTurn({ sessionId: "q5", prompt: "go" }).pipe(Effect.fork)
      yield* waitUntil(() => port.shown.length === 1)
      yield* Fiber.interrupt(turn)
      yield* waitUntil(() => port.withdrawn.length > 0)
      expect(port.withdrawn).toEqual([port.shown[0]!.key])
      expect(yield* harness.answer("q5", "SQLite")).toBe(false)
    }).pipe(Effect.provide(harnessWith(port.layer)))
  })

  it.scoped("[S33] a message during a pending question answers it; once the question is resolved, the next message is steered, not lost", () => {
    const port = recordingPort()
    return Effect.gen(function* () {
      const replies: Array<ClientReply> = []
      const mock = yield* MockAppServer
      const first = yield* Deferred.make<void>()
      yield* mock.setHandler("turn/start", duringTurn((turn, ctx) =>
        Effect.gen(function* () {
          replies.push(yield* ctx.request("item/tool/requestUserInput", rui(turn), { id: 7 }))
          yield* ctx.notify("serverRequest/resolved", { threadId: turn.threadId, requestId: 7 })
          yield* Deferred.succeed(first, undefined)
          // the turn goes on until the steer below has landed
        })))
      yield* mock.setHandler("turn/steer", (params: { threadId: string }, ctx) =>
        Effect.flatMap(ctx.activeTurn(params.threadId), (turnId) =>
          Option.isSome(turnId)
            ? Effect.as(ctx.afterReply(ctx.finishTurn(params.threadId, { status: "completed", text: "done" })), { turnId: turnId.value })
            : Effect.fail({ code: -32600, message: "no active turn" })))
      const queue = yield* SessionWork
      const started = yield* queue.submit("q6", "set up the database")
      yield* waitUntil(() => port.shown.length === 1)
      const answer = yield* queue.submit("q6", "SQLite")
      expect(answer.disposition).toBe("answer")
      expect(yield* answer.carried).toMatchObject({ _tag: "Answered" })
      yield* Deferred.await(first)
      expect(resultOf(replies[0])).toEqual({ answers: { db_choice: { answers: ["SQLite"] } } })
      const later = yield* queue.submit("q6", "and add an index")
      expect(later.disposition).toBe("steer")
      yield* Effect.repeatN(Effect.yieldNow(), 50) // the window's timer is forked
      yield* TestClock.adjust("10 millis") // the quiet window
      expect(yield* later.carried).toMatchObject({ _tag: "Steered" })
      expect((yield* started.reply).status).toBe("completed")
      const steers = yield* mock.requests("turn/steer")
      expect(JSON.stringify(steers[0]?.params)).toContain("and add an index")
    }).pipe(Effect.provide(harnessWith(port.layer)))
  })

  it.scoped("[S30] field names from the MCP server are data: an unanswered optional field named constructor is left out, __proto__ is an own key", () => {
    const port = recordingPort((prompt) =>
      Effect.succeed({
        _tag: "Answered",
        answers: Object.fromEntries(prompt.questions.filter((q) => q.header !== "constructor").map((q) => [q.id, ["Ada"]]))
      }))
    return Effect.gen(function* () {
      const reply = yield* elicitOnce("q8", {
        mode: "form",
        message: "Who?",
        requestedSchema: JSON.parse(
          '{"type":"object","properties":{"__proto__":{"type":"string","title":"__proto__"},"constructor":{"type":"string","title":"constructor"}},"required":["__proto__"]}'
        )
      })
      const result = resultOf(reply) as { action: string; content: Record<string, unknown> }
      expect(result.action).toBe("accept")
      expect(JSON.stringify(result.content)).toBe('{"__proto__":"Ada"}')
      expect(Object.getPrototypeOf(result.content)).toBe(Object.prototype)
    }).pipe(Effect.provide(harnessWith(port.layer)))
  })

  it.scoped("[S30] an answer that does not validate is asked again with the reason; after the last attempt the form is declined visibly", () => {
    const port = recordingPort((prompt) => Effect.succeed({ _tag: "Answered", answers: { [prompt.questions[0]!.id]: ["eleven"] } }))
    return Effect.gen(function* () {
      const reply = yield* elicitOnce("q7", {
        mode: "form",
        message: "How many?",
        requestedSchema: { type: "object", properties: { count: { type: "integer", minimum: 1, maximum: 10 } }, required: ["count"] }
      })
      // three attempts (the default), each after the first with the reason
      expect(port.shown).toHaveLength(3)
      expect(port.shown[0]!.problem).toBeUndefined()
      expect(port.shown[1]!.problem).toBeDefined()
      expect(port.shown[2]!.problem).toBeDefined()
      expect(resultOf(reply)).toEqual({ action: "decline", content: null, _meta: null })
      expect(port.notices).toHaveLength(1)
    }).pipe(Effect.provide(harnessWith(port.layer)))
  })
})
