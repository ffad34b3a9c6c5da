// `codex-harness chat`: a conversation in one process, on one warm app-server client.
// At a terminal: a prompt, streamed replies, a progress line, slash commands, Ctrl-C to interrupt the running turn.
// Piped: one message per stdin line, each sent as a follow-up after the previous reply; exit 0 only if every message
// got its reply.
import { Command, Options } from "@effect/cli"
import { Cause, Console, Context, Deferred, Effect, Exit, Layer, Option, Queue, Schema, Scope, Stream } from "effect"
import * as readline from "node:readline"
import * as Live from "../../layers/Live.js"
import { CodexHarness, type CodexHarnessService, type TurnResult } from "../harness/CodexHarness.js"
import { Delivery, type Reply } from "../ports/Delivery.js"
import { Questions } from "../ports/Questions.js"
import { Compaction, type CompactionService } from "../compaction/Compaction.js"
import { checkSessionId } from "../session/SessionStore.js"
import { SteeringQueue, type SteeringQueueService } from "../turn/SteeringQueue.js"
import type { EventSink } from "../turn/TurnRunner.js"
import * as ApprovalPromptsCli from "./approvalPrompts.js"
import * as QuestionPromptsCli from "./questionPrompts.js"
import * as GlobalOptions from "./options.js"
import { turnEventJson } from "./turnJson.js"
import * as TerminalDelivery from "./TerminalDelivery.js"

export class ChatIncomplete extends Schema.TaggedError<ChatIncomplete>()("ChatIncomplete", {
  failed: Schema.Array(Schema.Number),
  total: Schema.Number
}) {
  override get message() {
    return `${this.failed.length} of ${this.total} messages got no reply (${this.failed.map((n) => `#${n}`).join(", ")})`
  }
}

// ---- input lines and slash commands -------------------------------------------------------------------------------

export type Input =
  | { readonly _tag: "blank" }
  | { readonly _tag: "message"; readonly text: string }
  | { readonly _tag: "slash"; readonly name: string; readonly arg: string }

/** What one line of input is. `//text` sends `/text` as a message. */
export const classify = (line: string): Input => {
  const trimmed = line.trim()
  if (trimmed === "") return { _tag: "blank" }
  if (trimmed.startsWith("//")) return { _tag: "message", text: trimmed.slice(1) }
  if (trimmed.startsWith("/")) {
    const space = trimmed.search(/\s/)
    return space < 0
      ? { _tag: "slash", name: trimmed.slice(1), arg: "" }
      : { _tag: "slash", name: trimmed.slice(1, space), arg: trimmed.slice(space).trim() }
  }
  return { _tag: "message", text: line }
}

interface ChatState {
  sessionId: string
  /** the model chat asks for on every turn: --model, then whatever /model chose */
  model: string | undefined
  /** `/plan on`: turns run in Codex's Plan mode, where the agent may ask questions (request_user_input) */
  plan: boolean
}

interface SlashContext {
  readonly harness: CodexHarnessService
  readonly queue: SteeringQueueService
  readonly compaction: CompactionService
  readonly state: ChatState
  /** where chat's own lines go: stderr when piped (stdout is for replies), stdout at a terminal */
  readonly say: (line: string) => Effect.Effect<void>
}

type SlashOutcome = "continue" | "quit"

interface SlashCommand {
  readonly usage: string
  readonly description: string
  readonly run: (arg: string, ctx: SlashContext) => Effect.Effect<SlashOutcome, unknown>
}

/** what every message of the chat is submitted with */
const submitOptions = (state: ChatState, view: TurnView) => ({
  model: state.model,
  onEvent: view.onEvent,
  ...(state.plan ? { collaboration: "plan" as const } : {})
})

const slashCommands: Record<string, SlashCommand> = {
  model: {
    usage: "/model NAME",
    description: "use model NAME for this session from the next turn on",
    run: (arg, { harness, say, state }) =>
      arg === ""
        ? say(`model: ${state.model ?? "(the default)"}`).pipe(Effect.as("continue" as const))
        : harness.chooseModel(state.sessionId, arg).pipe(
          Effect.tap(() => {
            state.model = arg
            return say(`model: ${arg}`)
          }),
          Effect.as("continue" as const)
        )
  },
  plan: {
    usage: "/plan [on|off]",
    description: "Codex's Plan mode for the next turns: the agent plans and may ask you questions",
    run: (arg, { say, state }) => {
      if (arg === "on" || arg === "off") state.plan = arg === "on"
      else if (arg !== "") return say(`/plan: expected on or off, got ${JSON.stringify(arg)}`).pipe(Effect.as("continue" as const))
      return say(`plan mode: ${state.plan ? "on" : "off"}`).pipe(Effect.as("continue" as const))
    }
  },
  new: {
    usage: "/new",
    description: "start a new session (a new Codex thread)",
    run: (_arg, { say, state }) =>
      Effect.sync(() => {
        state.sessionId = crypto.randomUUID()
      }).pipe(Effect.zipRight(say(`session: ${state.sessionId}`)), Effect.as("continue" as const))
  },
  queue: {
    usage: "/queue [MODE]",
    description: "what messages typed during a turn do: steer (into it), followup (one turn each), collect (one turn)",
    run: (arg, { queue, say, state }) =>
      arg === ""
        ? queue.mode(state.sessionId).pipe(Effect.flatMap((mode) => say(`queue: ${mode}`)), Effect.as("continue" as const))
        : isQueueMode(arg)
        ? queue.setMode(state.sessionId, arg).pipe(Effect.zipRight(say(`queue: ${arg}`)), Effect.as("continue" as const))
        : say(`/queue: expected steer, followup or collect, got ${JSON.stringify(arg)}`).pipe(Effect.as("continue" as const))
  },
  compact: {
    usage: "/compact",
    description: "compact this session's Codex thread now (native compaction)",
    run: (_arg, { compaction, say, state }) =>
      say("compacting…").pipe(
        Effect.zipRight(compaction.compact(state.sessionId)),
        Effect.flatMap((r) => say(`compacted thread ${r.threadId} in ${(r.durationMs / 1000).toFixed(1)} s`)),
        Effect.as("continue" as const)
      )
  },
  quit: { usage: "/quit", description: "end the chat (also Ctrl-D)", run: () => Effect.succeed("quit" as const) },
  help: {
    usage: "/help",
    description: "this list",
    run: (_arg, { say }) => say(helpText()).pipe(Effect.as("continue" as const))
  }
}

const queueModes = ["steer", "followup", "collect"] as const
const isQueueMode = (value: string): value is (typeof queueModes)[number] => (queueModes as ReadonlyArray<string>).includes(value)

const helpText = () =>
  [
    ...Object.values(slashCommands).map((c) => `  ${c.usage.padEnd(15)} ${c.description}`),
    `  ${"//text".padEnd(15)} send "/text" as a message`,
    `  ${"Ctrl-C".padEnd(15)} interrupt the running turn; at the prompt (or twice), end the chat`
  ].join("\n")

const runSlash = (name: string, arg: string, ctx: SlashContext): Effect.Effect<SlashOutcome> => {
  const command = slashCommands[name]
  if (command === undefined) return ctx.say(`unknown command /${name}: try /help`).pipe(Effect.as("continue" as const))
  return command.run(arg, ctx).pipe(
    Effect.catchAll((error) => ctx.say(`/${name}: ${error instanceof Error ? error.message : String(error)}`).pipe(Effect.as("continue" as const)))
  )
}

// ---- how a turn looks ----------------------------------------------------------------------------------------------

/** A turn event as one JSON line (the same shape `run --json` prints). */

const spinnerFrames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

/** A one-line progress indicator on stderr; a no-op unless enabled (stderr is a terminal). */
const makeSpinner = (enabled: boolean) => {
  let timer: ReturnType<typeof setInterval> | undefined
  let label = ""
  let frame = 0
  // held while a question or an approval waits for a typed line, so the line is not drawn over
  let held = false
  const draw = () => void process.stderr.write(`\r\x1b[2K${spinnerFrames[frame++ % spinnerFrames.length]} ${label}`)
  const clear = () => {
    if (timer === undefined) return
    clearInterval(timer)
    timer = undefined
    process.stderr.write("\r\x1b[2K")
  }
  return {
    hold: (on: boolean) => {
      held = on
      if (on) clear()
    },
    show: (text: string) => {
      if (!enabled || held) return
      label = text
      if (timer === undefined) timer = setInterval(draw, 100)
      draw()
    },
    clear
  }
}

const short = (text: string, max = 60) => {
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > max ? `${line.slice(0, max - 1)}…` : line
}

/** What the progress line says while an item runs; undefined for items that are not waits worth naming. */
const progressLabel = (item: Record<string, unknown>): string | undefined => {
  switch (item.type) {
    case "commandExecution": {
      const command = Array.isArray(item.command) ? item.command.join(" ") : String(item.command ?? "a command")
      return `running ${short(command)}`
    }
    case "dynamicToolCall":
      return `running ${String(item.tool ?? "a tool")}`
    case "mcpToolCall":
      return `running ${[item.server, item.tool].filter((p) => typeof p === "string").join(".") || "a tool"}`
    case "webSearch":
      return "searching the web"
    case "fileChange":
      return "editing files"
    default:
      return undefined
  }
}

interface ViewOptions {
  readonly json: boolean
  /** stream assistant text as it arrives (terminal mode, and never when replies are private) */
  readonly stream: boolean
  /** show the progress line (terminal mode with stderr a terminal) */
  readonly progress: boolean
}

export interface TurnView {
  readonly delivery: Context.Tag.Service<Delivery>
  readonly onEvent: EventSink
  /** resets the per-turn state and shows the progress line */
  readonly begin: Effect.Effect<void>
  /** clears the progress line and ends a half-written line; the number of replies the turn delivered */
  readonly end: Effect.Effect<number>
  /** while a typed answer is awaited: no progress line over it */
  readonly asking: (on: boolean) => void
}

/**
 * Chat's view of its turns: a Delivery wrapping the terminal one (counting replies and, when the text was already
 * streamed, not printing the same final text twice; media lines and notices still show) and the turn's event sink
 * (JSON lines, or streamed text and the progress line).
 */
const makeView = (options: ViewOptions): Effect.Effect<TurnView, never, Scope.Scope> =>
  Effect.gen(function* () {
    const terminal = yield* Effect.provide(Delivery, TerminalDelivery.layer({ json: options.json }))
    const spinner = makeSpinner(options.progress)
    yield* Effect.addFinalizer(() => Effect.sync(spinner.clear))
    // per turn
    let replies = 0
    const streamed = new Set<string>() // item ids whose text was streamed
    const shown = new Set<string>() // their completed texts
    let atLineStart = true

    const write = (text: string) => {
      if (text === "") return
      spinner.clear()
      process.stdout.write(text)
      atLineStart = text.endsWith("\n")
    }
    const endLine = () => {
      if (!atLineStart) write("\n")
    }
    const progress = (label: string) => {
      // never over a half-written line of reply text
      if (atLineStart) spinner.show(label)
    }

    const delivery: TurnView["delivery"] = {
      deliver: (reply: Reply) =>
        Effect.suspend(() => {
          if (reply.source !== "notice") replies++
          spinner.clear()
          endLine()
          if (options.stream && reply.source === "final" && reply.text !== undefined && shown.has(reply.text)) {
            return reply.media.length === 0 ? Effect.void : terminal.deliver({ ...reply, text: undefined })
          }
          return terminal.deliver(reply)
        })
    }

    const onEvent: EventSink = (event) =>
      Effect.sync(() => {
        if (options.json) {
          process.stdout.write(JSON.stringify(turnEventJson(event)) + "\n")
          return
        }
        switch (event.type) {
          case "turn.completed":
            spinner.clear()
            endLine()
            return
          case "notification":
            break
          default:
            return
        }
        const { method, params } = event.notification
        const p = (params ?? {}) as { itemId?: unknown; delta?: unknown; item?: Record<string, unknown> }
        if (method === "item/agentMessage/delta" && options.stream && typeof p.delta === "string") {
          if (typeof p.itemId === "string") streamed.add(p.itemId)
          write(p.delta)
        } else if (method === "item/started" && p.item !== undefined) {
          const label = progressLabel(p.item)
          if (label !== undefined) progress(label)
        } else if (method === "item/completed" && p.item !== undefined) {
          const item = p.item
          if (item.type === "agentMessage" && typeof item.id === "string" && streamed.has(item.id)) {
            if (typeof item.text === "string") shown.add(item.text)
            endLine()
          }
          if (item.type === "agentMessage" || progressLabel(item) !== undefined) progress("thinking…")
        }
      })

    return {
      delivery,
      onEvent,
      begin: Effect.sync(() => {
        replies = 0
        streamed.clear()
        shown.clear()
        atLineStart = true
        progress("thinking…")
      }),
      end: Effect.sync(() => {
        spinner.clear()
        endLine()
        return replies
      }),
      asking: (on) => {
        spinner.hold(on)
        if (on) endLine()
      }
    }
  })

// ---- one message ---------------------------------------------------------------------------------------------------

/** Why a message got no reply, or undefined when it got one. */
const missingReply = (exit: Exit.Exit<TurnResult, unknown>, replies: number): string | undefined =>
  Exit.match(exit, {
    onFailure: (cause) => {
      if (Cause.isInterruptedOnly(cause)) return "interrupted"
      const failure = Cause.failureOption(cause)
      const error = Option.isSome(failure) ? failure.value : Cause.squash(cause)
      return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").trim()
    },
    onSuccess: (result) =>
      result.status !== "completed"
        ? `the turn ended ${result.status}${result.error !== undefined ? `: ${result.error.replace(/\s+/g, " ").trim()}` : ""}`
        : replies === 0
        ? "the turn completed without a reply"
        : undefined
  })

const turnFor = (harness: CodexHarnessService, state: ChatState, view: TurnView, prompt: string) =>
  harness.runTurn({ sessionId: state.sessionId, prompt, ...submitOptions(state, view) })

// ---- piped: one message per line -----------------------------------------------------------------------------------

interface ChatServices {
  readonly harness: CodexHarnessService
  readonly queue: SteeringQueueService
  readonly compaction: CompactionService
}

const piped = ({ compaction, harness, queue }: ChatServices, state: ChatState, view: TurnView) =>
  Effect.gen(function* () {
    const say = (line: string) => Console.error(line)
    const rl = yield* Effect.acquireRelease(
      Effect.sync(() => readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false })),
      (rl) => Effect.sync(() => rl.close())
    )
    let total = 0
    const failed: Array<number> = []
    // the readline iterator buffers a bounded number of lines (it pauses stdin beyond that); the stream pulls the next
    // line only after the previous message is done, so every message is a follow-up, never steered into a turn
    yield* Stream.fromAsyncIterable(rl, (e) => e).pipe(
      Stream.orDie,
      Stream.runForEachWhile((line) =>
        Effect.gen(function* () {
          const input = classify(line)
          if (input._tag === "blank") return true
          if (input._tag === "slash") {
            return (yield* runSlash(input.name, input.arg, { harness, queue, compaction, state, say })) === "continue"
          }
          const n = ++total
          yield* view.begin
          const exit = yield* Effect.exit(turnFor(harness, state, view, input.text))
          const why = missingReply(exit, yield* view.end)
          if (why !== undefined) {
            failed.push(n)
            yield* say(`codex-harness: message ${n} got no reply: ${why}`)
          }
          return true
        })
      )
    )
    if (failed.length > 0) return yield* Effect.fail(new ChatIncomplete({ failed, total }))
  })

// ---- at a terminal -------------------------------------------------------------------------------------------------

/** An approval prompt waiting for the next line typed at the terminal (one at a time). */
interface PendingAnswer {
  current: Deferred.Deferred<string> | undefined
  /** the line answers a secret question: not echoed, not kept in the history (S34) */
  secret: boolean
}

/** readline's echo goes through this (undocumented but stable) method; muting it hides a secret as it is typed */
type Echoing = { _writeToOutput?: (text: string) => void; history?: Array<string> }

type TerminalEvent =
  | { readonly _tag: "line"; readonly line: string }
  | { readonly _tag: "ctrl-c" }
  | { readonly _tag: "eof" }
  | { readonly _tag: "turn-done"; readonly exit: Exit.Exit<TurnResult, unknown> }

const interactive = (
  { compaction, harness, queue }: ChatServices,
  state: ChatState,
  view: TurnView,
  scope: Scope.Scope,
  pendingAnswer: PendingAnswer
) =>
  Effect.gen(function* () {
    const say = (line: string) => Console.log(line)
    // every readline event and every turn's end goes through one queue, so none is lost between two waits
    const events = yield* Queue.unbounded<TerminalEvent>()
    const rl = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: true, historySize: 500 })
        rl.setPrompt("you › ")
        const echoing = rl as unknown as Echoing
        const echo = echoing._writeToOutput?.bind(rl)
        if (echo !== undefined) {
          echoing._writeToOutput = (text) => {
            if (!pendingAnswer.secret || text.includes("\n")) echo(text.includes("\n") && pendingAnswer.secret ? "\n" : text)
          }
        }
        rl.on("line", (line) => {
          if (pendingAnswer.secret && echoing.history?.[0] === line) echoing.history.shift()
          Queue.unsafeOffer(events, { _tag: "line", line })
        })
        // with a SIGINT listener readline reports Ctrl-C here instead of closing itself
        rl.on("SIGINT", () => Queue.unsafeOffer(events, { _tag: "ctrl-c" }))
        rl.on("close", () => Queue.unsafeOffer(events, { _tag: "eof" }))
        return rl
      }),
      (rl) => Effect.sync(() => rl.close())
    )
    yield* say(`chat: /help for commands, Ctrl-C interrupts a turn, Ctrl-C at the prompt or /quit ends the chat`)

    /**
     * Runs one message through the session's steering queue; "quit" when the user asked to end the chat meanwhile.
     * Messages typed while it runs go to the queue too: steered into the running turn by default, or queued for after
     * it (`/queue followup|collect`); slash commands run at once.
     */
    const converse = (prompt: string) =>
      Effect.gen(function* () {
        yield* view.begin
        const first = yield* queue.submit(state.sessionId, prompt, submitOptions(state, view))
        // done when the queue has carried everything (steered messages and follow-ups included)
        yield* queue.drain(state.sessionId).pipe(
          Effect.zipRight(Effect.exit(first.reply)),
          Effect.flatMap((exit) => Queue.offer(events, { _tag: "turn-done", exit })),
          Effect.forkIn(scope)
        )
        let interrupting = false
        let eof = false
        while (true) {
          const event = yield* Queue.take(events)
          switch (event._tag) {
            case "turn-done": {
              const why = missingReply(event.exit, yield* view.end)
              if (why !== undefined) yield* Console.error(why === "interrupted" ? "(interrupted)" : `(no reply: ${why})`)
              return eof ? "quit" : "continue"
            }
            case "ctrl-c":
              if (interrupting) {
                // a second Ctrl-C: end the chat; closing the scope interrupts the turn and stops the app-server
                yield* view.end
                return "quit"
              }
              interrupting = true
              yield* queue.cancelQueued(state.sessionId)
              yield* queue.interrupt(state.sessionId)
              break
            case "line": {
              const question = pendingAnswer.current
              if (question !== undefined) {
                // the line answers the approval prompt on screen, not the agent
                yield* Deferred.succeed(question, event.line)
                break
              }
              const input = classify(event.line)
              if (input._tag === "blank") break
              if (input._tag === "slash") {
                if ((yield* runSlash(input.name, input.arg, { harness, queue, compaction, state, say })) === "quit") eof = true
                break
              }
              const more = yield* queue.submit(state.sessionId, input.text, submitOptions(state, view)).pipe(
                Effect.either
              )
              yield* Console.error(
                more._tag === "Left"
                  ? `(not sent: ${more.left.message})`
                  : more.right.disposition === "steer"
                  ? "(steering into the running turn)"
                  : "(queued for after this turn)"
              )
              break
            }
            case "eof":
              eof = true
              break
          }
        }
      })

    while (true) {
      // lines readline already has (pasted, or typed ahead) are already on screen: prompt only when waiting
      if ((yield* Queue.size(events)) === 0) rl.prompt(true)
      const event = yield* Queue.take(events)
      if (event._tag === "ctrl-c" || event._tag === "eof") {
        process.stdout.write("\n")
        return
      }
      if (event._tag !== "line") continue // a late turn-done: nothing to do
      const input = classify(event.line)
      if (input._tag === "blank") continue
      const outcome: SlashOutcome =
        input._tag === "slash"
          ? yield* runSlash(input.name, input.arg, { harness, queue, compaction, state, say })
          : yield* converse(input.text)
      if (outcome === "quit") return
    }
  })

// ---- the command ---------------------------------------------------------------------------------------------------

export const command = Command.make(
  "chat",
  {
    ...GlobalOptions.global,
    session: Options.text("session").pipe(
      Options.withDescription("session id to continue (default: a new session, printed on stderr)"),
      Options.optional
    )
  },
  (options) =>
    Effect.scoped(
      Effect.gen(function* () {
        const settings = yield* GlobalOptions.toSettings(options)
        const state: ChatState = {
          sessionId: yield* checkSessionId(Option.getOrElse(options.session, () => crypto.randomUUID())),
          model: Option.getOrUndefined(options.model),
          plan: false
        }
        const atTerminal = process.stdin.isTTY === true
        const privateReplies = settings.visibleReplies === "message_tool"
        const view = yield* makeView({
          json: options.json,
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
          ? ApprovalPromptsCli.terminalWith((text) => askLine(text, false))
          : ApprovalPromptsCli.fixed(options.approvals)
        // questions: piped input is the next messages, so without a terminal every question is declined
        const questions = Layer.succeed(
          Questions,
          atTerminal ? QuestionPromptsCli.terminalWith(askLine) : QuestionPromptsCli.declining
        )
        const context = yield* Layer.build(
          Live.layer(settings).pipe(
            Layer.provide(Layer.succeed(Delivery, view.delivery)),
            Layer.provide(prompts),
            Layer.provide(questions)
          )
        )
        const services: ChatServices = {
          harness: Context.get(context, CodexHarness),
          queue: Context.get(context, SteeringQueue),
          compaction: Context.get(context, Compaction)
        }
        if (atTerminal) yield* interactive(services, state, view, scope, pendingAnswer)
        else yield* piped(services, state, view)
      })
    )
).pipe(Command.withDescription("a conversation: a prompt at a terminal, or one message per line of piped input"))
