// Embedding the harness in an Effect app (a chat bot, say): one runtime for the app's lifetime, the ports it owns.
import { Console, Effect, Layer, ManagedRuntime, Schema } from "effect"
import { ApprovalPrompts, Delivery, DynamicTools, Harness, type Settings } from "codex-harness"
import * as Live from "codex-harness/layers/Live"

const settings: Settings.HarnessSettings = {
  stateDir: process.env.BOT_STATE_DIR ?? "/var/lib/my-bot",
  cwd: process.env.BOT_WORKSPACE ?? process.cwd(),
  // any OpenAI Responses API server; left unset, Codex uses the configuration and login of the bot's own CODEX_HOME
  // (<stateDir>/codex-home; `userCodexHome: true` for yours)
  providerUrl: process.env.BOT_PROVIDER_URL,
  approvalPolicy: "on-request",
  sandbox: "workspace-write"
}

// required: where replies go
const ToChat = Layer.succeed(Delivery.Delivery, {
  deliver: (reply) => Console.log(`[${reply.sessionId}] ${reply.text ?? ""}`)
})

// optional: who decides approvals (without it every approval is declined)
const Approver = Layer.succeed(ApprovalPrompts.ApprovalPrompts, {
  ask: (request) => Effect.succeed(request.kind === "command" && request.command.includes("git status") ? "allowOnce" : "deny")
})

// optional: tools the agent can call, run inside this app
const Tools = DynamicTools.DynamicTools.layer([
  DynamicTools.tool({
    name: "ticket_status",
    description: "the status of a support ticket",
    input: Schema.Struct({ id: Schema.Number }),
    handler: ({ id }) => Effect.succeed({ id, status: "open" })
  })
])

// built once and kept: app-server clients stay warm between turns and are stopped when the runtime is disposed
const runtime = ManagedRuntime.make(Live.layer(settings).pipe(Layer.provide(Layer.mergeAll(ToChat, Approver, Tools))))

const ask = (sessionId: string, prompt: string) =>
  runtime.runPromise(Effect.flatMap(Harness.Harness, (harness) => harness.runTurn({ sessionId, prompt })))

const outcome = await ask("chat-42", "What changed in src/?")
console.log(`turn ${outcome.turnId}: ${outcome.status}`)
await runtime.dispose()
