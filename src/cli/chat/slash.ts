// Chat's input: what a typed or piped line is (a message, a blank, or a slash command) and the slash commands
// themselves (/model, /plan, /new [--carry|--thread], /queue, /compact, /exec, /ps, /logs, /kill, /help, /quit). Each
// command says what it did in one line (/logs prints the kept output).
import { Effect } from "effect"
import type { CodexHarnessService } from "../../harness/CodexHarness.js"
import type { SessionWorkService } from "../../harness/SessionWork.js"
import * as OutputBuffer from "../../processes/OutputBuffer.js"
import type { ProcessesService, ProcessInfo } from "../../processes/Processes.js"
import { terminalText } from "../../platform/terminalText.js"
import type { TurnView } from "./view.js"

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

export interface ChatState {
  sessionId: string
  /** the model chat asks for on every turn: --model, then whatever /model chose */
  model: string | undefined
  /** `/plan on`: turns run in Codex's Plan mode, where the agent may ask questions (request_user_input) */
  plan: boolean
}

export interface SlashContext {
  readonly harness: CodexHarnessService
  /** the session work registry: every message, /new and /compact go through it */
  readonly queue: SessionWorkService
  /** S25: sandboxed processes of this chat (absent: /exec and friends say so) */
  readonly processes?: ProcessesService | undefined
  readonly state: ChatState
  /** where chat's own lines go: stderr when piped (stdout is for replies), stdout at a terminal */
  readonly say: (line: string) => Effect.Effect<void>
}

export type SlashOutcome = "continue" | "quit"

interface SlashCommand {
  readonly usage: string
  readonly description: string
  /** further forms of the command, each a line of /help */
  readonly forms?: ReadonlyArray<{ readonly usage: string; readonly description: string }>
  readonly run: (arg: string, ctx: SlashContext) => Effect.Effect<SlashOutcome, unknown>
}

/** what every message of the chat is submitted with */
export const submitOptions = (state: ChatState, view: TurnView) => ({
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
    description: "start a new session (a new Codex thread, an empty conversation)",
    forms: [
      { usage: "/new --carry", description: "stay in this session on a fresh Codex thread that carries the conversation so far" },
      { usage: "/new --thread", description: "stay in this session on a fresh, empty Codex thread" }
    ],
    run: (arg, { queue, say, state }) => {
      if (arg === "--carry" || arg === "--thread") {
        const carry = arg === "--carry"
        return queue.newThread(state.sessionId, { carry }).pipe(
          Effect.flatMap(() =>
            say(
              `session: ${state.sessionId} continues on a fresh thread from the next message` +
                (carry ? ", carrying this conversation" : ", without this conversation")
            )
          ),
          Effect.as("continue" as const)
        )
      }
      if (arg !== "") {
        return say(`/new: expected --carry, --thread or nothing, got ${JSON.stringify(arg)}`).pipe(Effect.as("continue" as const))
      }
      return Effect.sync(() => {
        state.sessionId = crypto.randomUUID()
      }).pipe(
        // suspended: the line must read the new id, not the one there was when this effect was built
        Effect.zipRight(Effect.suspend(() => say(`session: ${state.sessionId}`))),
        Effect.as("continue" as const)
      )
    }
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
    run: (_arg, { queue, say, state }) =>
      say("compacting…").pipe(
        Effect.zipRight(queue.compact(state.sessionId)),
        Effect.flatMap((r) => say(`compacted thread ${r.threadId} in ${(r.durationMs / 1000).toFixed(1)} s`)),
        Effect.as("continue" as const)
      )
  },
  exec: {
    usage: "/exec CMD",
    description: "run CMD (through sh -c) in the app-server's sandbox, in the background; /logs shows its output",
    run: (arg, { processes, say }) =>
      arg === ""
        ? say("/exec: expected a command").pipe(Effect.as("continue" as const))
        : withProcesses(processes, say, (p) =>
          p.start({ command: ["sh", "-c", arg] }).pipe(Effect.flatMap((info) => say(`started ${info.id}: ${arg}`))))
  },
  ps: {
    usage: "/ps",
    description: "the sandboxed processes of this chat, running and recently ended",
    run: (_arg, { processes, say }) =>
      withProcesses(processes, say, (p) =>
        Effect.flatMap(p.list, (list) => say(list.length === 0 ? "no processes" : list.map(describeProcess).join("\n"))))
  },
  logs: {
    usage: "/logs ID",
    description: "the kept output of process ID (the newest 1 MiB / 10,000 lines)",
    run: (arg, { processes, say }) =>
      withProcesses(processes, say, (p) =>
        p.logs(arg).pipe(
          Effect.flatMap((logs) =>
            say(
              (logs.droppedBytes > 0 ? `[${logs.droppedBytes} bytes, ${logs.droppedLines} lines dropped]\n` : "") +
                // a sandboxed command's output, possibly the agent's choice: no escape sequence reaches the terminal
                terminalText(OutputBuffer.text(logs.pieces)).replace(/\n$/, "") +
                `\n[${describeProcess(logs.info)}]`
            )
          )
        ))
  },
  kill: {
    usage: "/kill ID",
    description: "terminate process ID in the sandbox",
    run: (arg, { processes, say }) =>
      // the state after the kill (its exit recorded), not the one `kill` answers with
      withProcesses(processes, say, (p) => p.kill(arg).pipe(Effect.flatMap(() => p.logs(arg)), Effect.flatMap((l) => say(describeProcess(l.info)))))
  },
  quit: { usage: "/quit", description: "end the chat (also Ctrl-D)", run: () => Effect.succeed("quit" as const) },
  help: {
    usage: "/help",
    description: "this list",
    run: (_arg, { say }) => say(helpText()).pipe(Effect.as("continue" as const))
  }
}

const withProcesses = <E>(
  processes: ProcessesService | undefined,
  say: (line: string) => Effect.Effect<void>,
  use: (p: ProcessesService) => Effect.Effect<void, E>
): Effect.Effect<SlashOutcome, E> =>
  (processes === undefined ? say("sandboxed processes are not available here") : use(processes)).pipe(Effect.as("continue" as const))

const describeProcess = (p: ProcessInfo) =>
  terminalText(
    `${p.id} ${p.status}${p.exitCode === undefined ? "" : ` (exit ${p.exitCode})`}${p.error === undefined ? "" : `: ${p.error}`} ` +
      `${p.writtenBytes} bytes  ${p.command.join(" ")}`
  )

const queueModes = ["steer", "followup", "collect"] as const
const isQueueMode = (value: string): value is (typeof queueModes)[number] => (queueModes as ReadonlyArray<string>).includes(value)

const helpText = () =>
  [
    ...Object.values(slashCommands).flatMap((c) => [c, ...(c.forms ?? [])]).map((c) => `  ${c.usage.padEnd(15)} ${c.description}`),
    `  ${"//text".padEnd(15)} send "/text" as a message`,
    `  ${"Ctrl-C".padEnd(15)} interrupt the running turn; at the prompt (or twice), end the chat`
  ].join("\n")

export const runSlash = (name: string, arg: string, ctx: SlashContext): Effect.Effect<SlashOutcome> => {
  const command = slashCommands[name]
  if (command === undefined) return ctx.say(`unknown command /${name}: try /help`).pipe(Effect.as("continue" as const))
  return command.run(arg, ctx).pipe(
    Effect.catchAll((error) => ctx.say(`/${name}: ${error instanceof Error ? error.message : String(error)}`).pipe(Effect.as("continue" as const)))
  )
}
