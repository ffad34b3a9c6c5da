// A chat bot that embeds codex-harness, as an app outside the harness's repository writes it: the package from npm
// (here its packed tarball), Effect as the app's own dependency, one ManagedRuntime for the bot's lifetime, and the
// ports the bot owns: where replies go, who approves commands, who answers questions, the tools it offers.
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { ApprovalPrompts, Delivery, DynamicTools, Harness, Questions, type Settings } from "codex-harness"
import * as Live from "codex-harness/layers/Live"

/** One message the bot posts to a chat (its session). */
export interface ChatMessage {
  readonly chat: string
  readonly text: string
}

/** The bot's Delivery: a reply becomes one chat message (images as lines of their own); a harness notice is marked. */
export const chatDelivery = (post: (message: ChatMessage) => Effect.Effect<void>) =>
  Layer.succeed(Delivery.Delivery, {
    deliver: (reply) => {
      const text = reply.source === "notice" ? `(notice) ${reply.text ?? ""}` : reply.text ?? ""
      const lines = [text, ...reply.media.map((image) => `[image] ${image.path}`)].filter((line) => line.trim() !== "")
      return lines.length === 0 ? Effect.void : post({ chat: reply.sessionId, text: lines.join("\n") })
    }
  })

/** Approvals: a command that only touches a file is allowed once; anything else is declined. */
export const approver = Layer.succeed(ApprovalPrompts.ApprovalPrompts, {
  ask: (request) => Effect.succeed(request.kind === "command" && /\btouch [\w.-]+'?$/.test(request.command) ? "allowOnce" : "deny")
})

/** Questions: the bot cannot ask its users mid-turn, so it takes each question's first option. */
export const firstOption = Layer.succeed(Questions.Questions, {
  ask: (prompt) =>
    Effect.succeed(Questions.answered(Object.fromEntries(prompt.questions.map((q) => [q.id, [q.options?.[0]?.label ?? "yes"]])))),
  notify: ({ text }) => Effect.logInfo(text)
})

/** A tool the agent can call: the status of a support ticket, from the bot's own data. */
export const tickets = DynamicTools.DynamicTools.layer([
  DynamicTools.tool({
    name: "ticket_status",
    description: "the status of a support ticket",
    input: Schema.Struct({ id: Schema.Number }),
    handler: ({ id }) => Effect.succeed({ id, status: id === 42 ? "open" : "closed" })
  })
])

/** The bot's harness: the Live layer with the bot's ports (its type is inferred and emitted in bot.d.ts). */
export const botLayer = (settings: Settings.HarnessSettings, post: (message: ChatMessage) => Effect.Effect<void>) =>
  Live.layer(settings).pipe(Layer.provide(Layer.mergeAll(chatDelivery(post), approver, firstOption, tickets)))

/** Built once and kept: app-servers stay warm between turns and stop when the runtime is disposed. */
export const makeBot = (settings: Settings.HarnessSettings, post: (message: ChatMessage) => Effect.Effect<void>) => {
  const runtime = ManagedRuntime.make(botLayer(settings, post))
  return {
    ask: (chat: string, prompt: string) =>
      runtime.runPromise(Effect.flatMap(Harness.Harness, (harness) => harness.runTurn({ sessionId: chat, prompt }))),
    stop: (chat: string) => runtime.runPromise(Effect.flatMap(Harness.Harness, (harness) => harness.interrupt(chat))),
    dispose: () => runtime.dispose()
  }
}
