#!/usr/bin/env node
// The codex-harness command line: parse, build layers, call services, print. Failures end as one line on stderr.
//
// Start-up time matters (every `run` is a fresh process), so this module and what it imports statically are only the
// command tree: names, flags and descriptions (commands/), enough for parsing and `--help`. Each command's handler
// imports its implementation, and with it the harness, when it runs (commands/lazy.ts); the bundle
// (scripts/bundle.mjs) turns each of those imports into a chunk of its own.
import { Command } from "@effect/cli"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { Effect, Exit, Layer, Logger, LogLevel } from "effect"
import { handlerStarted } from "./commands/lazy.js"
import { examples, helpTree, root } from "./commands/root.js"
import { render, UsageError } from "./errors.js"
import { terminalText } from "../platform/terminalText.js"
import { asksForHelp, requestedPage, unknownCommandLine } from "./helpRequest.js"
import { packageVersion } from "./version.js"


// what @effect/cli and the handlers use of the platform: not NodeContext.layer, which adds a command executor and a
// worker manager that nothing here uses, and their code to every start
const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)

// warnings and errors as short lines; the structured default logger is for services, not for people at a terminal
const terminalLogger = Logger.make(({ logLevel, message }) => {
  const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
  // a log line may quote the app-server or the model (`--log-level debug`): never their control sequences
  process.stderr.write(`codex-harness: ${logLevel.label.toLowerCase()}: ${terminalText(text).replace(/\n/g, " ")}\n`)
})
/**
 * `--log-level LEVEL` (before any `--`): @effect/cli parses the flag, but the level it sets does not reach the logger
 * main installs, so main reads it too. Warnings and errors by default; `debug` adds the JSON-RPC traffic.
 */
const logLevelNames = ["all", "trace", "debug", "info", "warning", "error", "fatal", "none"] as const
const isLogLevelName = (value: string): value is (typeof logLevelNames)[number] => (logLevelNames as ReadonlyArray<string>).includes(value)
const logLevelOf = (args: ReadonlyArray<string>): LogLevel.LogLevel => {
  const end = args.indexOf("--")
  const flags = end < 0 ? args : args.slice(0, end)
  const at = flags.findIndex((a) => a === "--log-level" || a.startsWith("--log-level="))
  const value = at < 0 ? undefined : flags[at]!.includes("=") ? flags[at]!.slice("--log-level=".length) : flags[at + 1]
  const levels: Record<(typeof logLevelNames)[number], LogLevel.LogLevel> = {
    all: LogLevel.All,
    trace: LogLevel.Trace,
    debug: LogLevel.Debug,
    info: LogLevel.Info,
    warning: LogLevel.Warning,
    error: LogLevel.Error,
    fatal: LogLevel.Fatal,
    none: LogLevel.None
  }
  return value !== undefined && isLogLevelName(value) ? levels[value] : LogLevel.Warning
}

const logging = Layer.merge(Logger.replace(Logger.defaultLogger, terminalLogger), Logger.minimumLogLevel(logLevelOf(process.argv.slice(2))))

/** `--help` anywhere before `--`: this CLI's own page (help.ts) instead of @effect/cli's */
const help = (args: ReadonlyArray<string>) =>
  Effect.suspend(() => {
    // the pages are rendered only for a help request: 20 ms a run would otherwise spend on them
    if (!asksForHelp(args)) return Effect.succeed(false)
    return Effect.flatMap(
      Effect.promise(() => import("./help.js")),
      ({ helpPages }) => {
        const request = requestedPage(args, helpPages(helpTree, packageVersion(), examples))
        if (request === undefined) return Effect.succeed(false)
        if (request._tag === "Page") return Effect.as(Effect.sync(() => process.stdout.write(request.text)), true)
        return Effect.fail(new UsageError({ line: unknownCommandLine("codex-harness", request).replace(/^codex-harness: /, "") }))
      }
    )
  })

/** Flags this command does not know, or values its flags cannot take: a usage error naming the flag (argv.ts). */
const checkArgs = (args: ReadonlyArray<string>) =>
  Effect.flatMap(
    Effect.promise(() => Promise.all([import("./help.js"), import("./argv.js")])),
    ([{ commandAt, helpPages }, { scanFlags }]) => {
      const shape = commandAt(helpTree, args)
      const scanned = scanFlags("codex-harness", shape, args.slice(shape.path.length))
      if (scanned.error !== undefined) return Effect.fail(new UsageError({ line: scanned.error }))
      // `codex-harness` or `codex-harness sessions` alone: the page that lists the commands, not @effect/cli's
      if (shape.subcommands.length > 0 && scanned.positionals.length === 0 && !scanned.flags.includes("--version")) {
        const page = helpPages(helpTree, packageVersion(), examples)[shape.path.join(" ")]
        return Effect.as(Effect.sync(() => process.stdout.write(page ?? "")), true)
      }
      return Effect.succeed(false)
    }
  )

/**
 * @effect/cli prints its parse errors itself, as coloured paragraphs on stderr, before failing with them; main prints
 * every failure as one line (errors.ts), so until a command's handler runs its printing is left out.
 */
const withoutParserPrinting = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.console, (console) =>
    Effect.withConsole(effect, { ...console, error: (...args) => (handlerStarted() ? console.error(...args) : Effect.void) }))

/**
 * The command line without a valid `--log-level LEVEL` (or `--log-level=LEVEL`) before any `--`: main applies the level
 * itself (logLevelOf), and @effect/cli takes only the `=` form after a subcommand ("Received unknown argument"), so
 * `run --log-level debug`, the form the README gives, failed. A value that is not a level stays, for argv.ts to report.
 */
const withoutLogLevel = (words: ReadonlyArray<string>): Array<string> => {
  const out: Array<string> = []
  const isLevel = (value: string | undefined) => value !== undefined && isLogLevelName(value)
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    if (word === "--") return [...out, ...words.slice(i)]
    if (word === "--log-level" && isLevel(words[i + 1])) i++
    else if (!(word.startsWith("--log-level=") && isLevel(word.slice("--log-level=".length)))) out.push(word)
  }
  return out
}

const args = withoutLogLevel(process.argv.slice(2))
const program = help(args).pipe(
  Effect.flatMap((helped) =>
    helped
      ? Effect.void
      : checkArgs(args).pipe(
        Effect.flatMap((listed) =>
          listed ? Effect.void : withoutParserPrinting(Command.run(root, { name: "codex-harness", version: packageVersion() })([...process.argv.slice(0, 2), ...args]))
        )
      )
  ),
  Effect.provide(platform),
  Effect.provide(logging),
  // a span is only worth making for an exporter, and only `serve --otlp` has one (it turns them back on): without this
  // every withSpan of a turn (the harness's, @effect/sql's, @effect/cluster's) made and ended a span nobody read
  Effect.withTracerEnabled(false),
  Effect.as(0),
  Effect.catchAllCause((cause) =>
    Effect.sync(() => {
      const rendered = render(cause)
      if (rendered === undefined) return 1
      if (rendered.line !== "") process.stderr.write(`codex-harness: ${rendered.line}\n`)
      return rendered.exitCode
    })
  )
)

/**
 * Calls `then` once all that was written to stdout and stderr has been handed to the OS. A pipe takes what fits and
 * Node queues the rest; runMain ends a failed command with process.exit, which drops that queue, so a long reply
 * printed before a failure (a turn that ended over the line limit) was cut short when its reader was slower.
 */
const afterOutput = (then: () => void) => process.stdout.write("", () => process.stderr.write("", () => then()))

// runMain's own pretty logger would stay installed next to the terminal logger and print every warning again, on
// stdout, where only replies and --json events belong
// runMain interrupts the program on SIGINT and on SIGTERM alike; the exit code says which (128 + the signal's number)
let terminatedBy: "SIGINT" | "SIGTERM" = "SIGINT"
process.once("SIGTERM", () => (terminatedBy = "SIGTERM"))

NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  disablePrettyLogger: true,
  teardown: (exit, onExit) =>
    afterOutput(() => onExit(Exit.isSuccess(exit) ? (exit.value as number) : terminatedBy === "SIGTERM" ? 143 : 130))
})
