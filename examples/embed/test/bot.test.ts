// The bot's own tests, run with Node's test runner against the installed package: a real turn (the pinned app-server
// against the package's ScriptedModel) with a tool call and an approval, a second turn interrupted, and the bot's
// Delivery and approvals on the package's Test layer with MockAppServer.
import { Effect, Exit, Layer, Scope } from "effect"
import { Harness } from "codex-harness"
import * as Test from "codex-harness/layers/Test"
import { MockAppServer, ScriptedModel } from "codex-harness/testing"
import assert from "node:assert/strict"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { test } from "node:test"
import { approver, type ChatMessage, chatDelivery, makeBot } from "../src/bot.js"

const tempDir = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix))

test("a turn with a tool call and an approval, then a turn interrupted, on the real app-server", async () => {
  const scope = Effect.runSync(Scope.make())
  const { reply } = ScriptedModel
  const model = await Effect.runPromise(Scope.extend(ScriptedModel.make({
    replies: [
      reply.steps({ type: "function_call", name: "ticket_status", namespace: "openclaw", arguments: { id: 42 } }),
      reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch approved.txt" } }),
      reply.text("Ticket 42 is open, and approved.txt is there."),
      reply.steps({ type: "hang" }),
      reply.text("Back again.")
    ]
  }), scope))
  const stateDir = tempDir("embed-bot-state-")
  const workspace = tempDir("embed-bot-work-")
  const posted: Array<ChatMessage> = []
  const bot = makeBot({
    stateDir,
    cwd: workspace,
    providerUrl: model.url,
    model: "mock-model",
    approvalPolicy: "untrusted",
    sandbox: "workspace-write"
  }, (message) => Effect.sync(() => void posted.push(message)))
  try {
    const first = await bot.ask("chat-1", "How is ticket 42? Then make approved.txt.")
    assert.equal(first.status, "completed")
    assert.deepEqual(posted, [{ chat: "chat-1", text: "Ticket 42 is open, and approved.txt is there." }])
    // the tool ran in the bot (its answer went back to the model), and the approved command ran in the workspace
    const requests = await Effect.runPromise(model.requests)
    assert.match(requests[1]!.body, /function_call_output[\s\S]*\\"status\\":\\"open\\"/)
    assert.ok(fs.existsSync(path.join(workspace, "approved.txt")))

    // the second turn hangs at the model: stop it once the model has its request
    const second = bot.ask("chat-1", "Count to a million.")
    await Effect.runPromise(model.waitForRequests(requests.length + 1))
    assert.equal(await bot.stop("chat-1"), true)
    await assert.rejects(second, (error: Error) => /interrupt/i.test(String(error)))
    assert.equal(await bot.stop("chat-1"), false)
    // the session goes on
    const third = await bot.ask("chat-1", "Still there?")
    assert.equal(third.status, "completed")
    assert.equal(posted.at(-1)?.text, "Back again.")
  } finally {
    await bot.dispose()
    await Effect.runPromise(Scope.close(scope, Exit.void))
    fs.rmSync(stateDir, { recursive: true, force: true })
    fs.rmSync(workspace, { recursive: true, force: true })
  }
})

test("the bot's Delivery and approvals on the Test layer with MockAppServer", async () => {
  const posted: Array<ChatMessage> = []
  const program = Effect.gen(function* () {
    const mock = yield* MockAppServer.MockAppServer
    // Codex asks to run a command the bot refuses, then one it allows, then the turn ends with its reply
    yield* mock.setHandler("turn/start", MockAppServer.duringTurn((turn, ctx) =>
      Effect.gen(function* () {
        const ask = (itemId: string, command: string) =>
          ctx.request("item/commandExecution/requestApproval", {
            ...turn, itemId, startedAtMs: 0, environmentId: "local", command: `/bin/bash -lc '${command}'`,
            cwd: "/mock/workspace", commandActions: [], availableDecisions: ["accept", "cancel"]
          })
        const refused = yield* ask("call_1", "rm -rf /")
        const allowed = yield* ask("call_2", "touch notes.txt")
        yield* ctx.finishTurn(turn.threadId, { status: "completed", text: `answers: ${JSON.stringify([refused, allowed])}` })
      })))
    const result = yield* (yield* Harness.Harness).runTurn({ sessionId: "chat-9", prompt: "tidy up" })
    const started = yield* mock.requests("turn/start")
    return { result, prompt: JSON.stringify(started[0]?.params) }
  })
  const harness = Test.layer({ script: { turns: "hang" } }).pipe(Layer.provide(Layer.merge(chatDelivery((m) => Effect.sync(() => void posted.push(m))), approver)))
  const { prompt, result } = await Effect.runPromise(program.pipe(Effect.provide(harness), Effect.scoped))
  assert.equal(result.status, "completed")
  assert.match(prompt, /tidy up/)
  assert.equal(posted.length, 1)
  assert.equal(posted[0]!.chat, "chat-9")
  // the refused command was declined, the touch accepted: the bot's own approval rule, through the harness
  assert.match(posted[0]!.text, /^answers: .*"decline".*"accept"/)
})
