// `codex-harness chat`: a conversation in one process, on one warm app-server client: interactive at a terminal, one
// message per line when piped. The app-server client stays warm across messages and stops when the chat ends. Loaded
// when the command runs; its flags are in commands/chat.ts.
import { Console, Context, Deferred, Effect, Layer, Option } from "effect"
import * as Live from "../../../layers/internal/Live.js"
import * as ProcessesLive from "../../processes/Processes.js"
import { CodexHarness } from "../../harness/CodexHarness.js"
import { SessionWork } from "../../harness/SessionWork.js"
import { Delivery } from "../../ports/Delivery.js"
import { Questions } from "../../ports/Questions.js"
import { SessionStore } from "../../session/SessionStore.js"
import * as ApprovalPromptsCli from "../approvalPrompts.js"
import type { ChatOptions } from "../commands/chat.js"
import * as QuestionPromptsCli from "../questionPrompts.js"
import { toSettings } from "../settings.js"
import { type ChatServices, piped } from "./piped.js"
import type { ChatState } from "./slash.js"
import { interactive, type PendingAnswer } from "./terminal.js"
import { makeView } from "./view.js"
import { sessionToUse } from "../sessionRef.js"
import { target } from "../connect.js"

export const chat = (options: ChatOptions) =>
  // --connect: through that serve (its session work registry steers and queues); never found implicitly, as chat
  // always ran a harness of its own
  Effect.gen(function* () {
    if (Option.isSome(options.connect)) {
      const chosen = yield* target(options, false)
      if (Option.isSome(chosen)) {
        const remote = yield* Effect.promise(() => import("../remote/asEffect.js"))
        return yield* remote.chatThrough(chosen.value, {
          session: Option.getOrUndefined(options.session),
          last: options.last,
          model: Option.getOrUndefined(options.model)
        })
      }
    }
    return yield* local(options)
  })

const local = (options: ChatOptions) =>
  Effect.scoped(
    Effect.gen(function* () {
      const settings = yield* toSettings(options)
      const state: ChatState = {
        sessionId: yield* sessionToUse(options, settings.stateDir),
        model: Option.getOrUndefined(options.model),
        plan: false
      }
      const atTerminal = process.stdin.isTTY === true
      const privateReplies = settings.visibleReplies === "message_tool"
      const view = yield* makeView({
        json: options.json,
        sessionId: () => state.sessionId,
        stream: atTerminal && !options.json && !privateReplies,
        progress: atTerminal && !options.json && process.stderr.isTTY === true
      })
      yield* Console.error(`session: ${state.sessionId}`)
      // built once: the app-server client stays warm across messages and stops when the chat ends
      const scope = yield* Effect.scope
      // approvals: at a terminal a prompt answered by the next line typed; piped, --approvals decides (deny by
      // default) and each decision is printed on stderr
      // approvals and questions: at a terminal, one at a time, each answered by the next line typed
      const pendingAnswer: PendingAnswer = { current: undefined, secret: false }
      const oneAtATime = yield* Effect.makeSemaphore(1)
      const askLine = (text: string, secret: boolean) =>
        Effect.gen(function* () {
          const answer = yield* Deferred.make<string>()
          pendingAnswer.current = answer
          pendingAnswer.secret = secret
          view.asking(true)
          process.stdout.write(text)
          return yield* Deferred.await(answer)
        }).pipe(
          Effect.ensuring(Effect.sync(() => {
            pendingAnswer.current = undefined
            pendingAnswer.secret = false
            view.asking(false)
          })),
          oneAtATime.withPermits(1)
        )
      const prompts = atTerminal
        ? ApprovalPromptsCli.terminalWith((text) => askLine(text, false), view.notice)
        : ApprovalPromptsCli.fixed(options.approvals)
      // questions: piped input is the next messages, so without a terminal every question is declined
      const questions = Layer.succeed(
        Questions,
        atTerminal ? QuestionPromptsCli.terminalWith(askLine) : QuestionPromptsCli.declining
      )
      const context = yield* Layer.build(
        // S25: /exec's processes live as long as this chat (they end with its app-server connection)
        ProcessesLive.layer().pipe(Layer.provideMerge(Live.layer(settings, undefined, { probeCodex: false }))).pipe(
          Layer.provide(Layer.succeed(Delivery, view.delivery)),
          Layer.provide(prompts),
          Layer.provide(questions)
        )
      )
      // the chat is the session's one writer while it runs: another process on it is refused in one line
      yield* Context.get(context, SessionStore).hold(state.sessionId)
      const services: ChatServices = {
        harness: Context.get(context, CodexHarness),
        queue: Context.get(context, SessionWork),
        processes: Context.get(context, ProcessesLive.Processes)
      }
      if (atTerminal) yield* interactive(services, state, view, scope, pendingAnswer)
      else yield* piped(services, state, view)
    })
  )
