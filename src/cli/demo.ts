// `codex-harness demo`: an offline conversation with a tool call. A scripted Responses server on 127.0.0.1 plays the
// model; everything else is real: the codex app-server, the harness, the session file. Loaded when the command runs;
// its flags are in commands/demo.ts.
import { FileSystem } from "@effect/platform"
import { Console, Context, Effect, Layer, Option } from "effect"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import { CodexHarness } from "../harness/CodexHarness.js"
import { Delivery } from "../ports/Delivery.js"
import * as TempDir from "../platform/TempDir.js"
import * as ScriptedModel from "../testing/ScriptedModel.js"
import type { TurnEvent } from "../../schemas/turnEvents.js"
import type { DemoOptions } from "./commands/demo.js"
import { toSettings } from "./settings.js"

const conversation = [
  {
    prompt: "What is in this workspace?",
    replies: [
      ScriptedModel.reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "ls" } }),
      ScriptedModel.reply.text("Two files: notes.txt and plan.md. The plan says to ship the harness on Friday.")
    ]
  },
  {
    prompt: "Thanks. Anything I should do first?",
    replies: [ScriptedModel.reply.text("Read notes.txt first: it lists what is still open before Friday.")]
  }
]

const showToolCalls = (event: TurnEvent) => {
  if (event._tag !== "Notification" || event.notification._tag !== "ItemCompleted") return Effect.void
  const item = event.notification.params.item
  if (item.type !== "commandExecution") return Effect.void
  const output = (item.aggregatedOutput ?? "").trim().split("\n").join(", ")
  return Console.log(`  tool  › ${item.command}  →  ${output} (exit ${String(item.exitCode)})`)
}

export const demo = (options: DemoOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const model = yield* ScriptedModel.make({ replies: conversation.flatMap((turn) => turn.replies) })
      const workspace = yield* TempDir.scoped("codex-harness-demo-work-")
      const fs = yield* FileSystem.FileSystem
      yield* fs.writeFileString(path.join(workspace, "notes.txt"), "open: README, CI\n")
      yield* fs.writeFileString(path.join(workspace, "plan.md"), "ship on Friday\n")
      const base = yield* toSettings(options)
      const keepState = Option.isSome(options.stateDir)
      const stateDir = keepState ? base.stateDir : yield* TempDir.scoped("codex-harness-demo-state-")
      const settings = {
        ...base,
        stateDir,
        cwd: workspace,
        providerUrl: model.url,
        model: "demo-model",
        codexHome: undefined
      }
      yield* Console.log(`codex-harness demo: the real codex app-server, a scripted model at ${model.url}, no network\n`)
      // the demo's Delivery: how a reply reaches the person is the embedder's business, here a prefixed line
      const speak = Layer.succeed(Delivery, { deliver: (reply) => Console.log(`  codex › ${reply.text ?? ""}\n`) })
      const harness = Context.get(yield* Layer.build(Live.layer(settings, undefined, { probeCodex: false }).pipe(Layer.provide(speak))), CodexHarness)
      for (const turn of conversation) {
        yield* Console.log(`  you   › ${turn.prompt}`)
        const outcome = yield* harness.runTurn({ sessionId: "demo", prompt: turn.prompt, onEvent: showToolCalls })
        if (!outcome.delivered) yield* Console.log(`  (no reply: the turn ended ${outcome.status})\n`)
      }
      const requests = yield* model.requests
      const where = keepState ? `kept in ${path.join(stateDir, "sessions", "demo.jsonl")}` : "in a temporary state dir (pass --state-dir to keep it)"
      yield* Console.log(`${requests.length} model requests served; the session file is ${where}`)
    })
  )
