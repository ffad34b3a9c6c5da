#!/usr/bin/env node
// The codex-harness command line: parse, build layers, call services, print. Failures end as one line on stderr.
import { Command } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect, Exit, Layer, Logger, LogLevel } from "effect"
import { createRequire } from "node:module"
import * as Chat from "./chat/command.js"
import * as Compact from "./compact.js"
import * as Config from "./config.js"
import * as Demo from "./demo.js"
import { render } from "./errors.js"
import * as Run from "./run.js"
import * as Sessions from "./sessions.js"
import * as Threads from "./threads.js"

const version: string = createRequire(import.meta.url)("../../../package.json").version

const root = Command.make("codex-harness").pipe(
  Command.withDescription("drive the real codex app-server: sessions, turns and everything around them"),
  Command.withSubcommands([Run.command, Chat.command, Sessions.command, Demo.command, Config.command, Compact.command, Threads.command])
)

// warnings and errors as short lines; the structured default logger is for services, not for people at a terminal
const terminalLogger = Logger.make(({ logLevel, message }) => {
  const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
  process.stderr.write(`codex-harness: ${logLevel.label.toLowerCase()}: ${text}\n`)
})
const logging = Layer.merge(Logger.replace(Logger.defaultLogger, terminalLogger), Logger.minimumLogLevel(LogLevel.Warning))

const program = Command.run(root, { name: "codex-harness", version })(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  Effect.provide(logging),
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

// runMain's own pretty logger would stay installed next to the terminal logger and print every warning again, on
// stdout, where only replies and --json events belong
NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  disablePrettyLogger: true,
  teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) ? (exit.value as number) : 130)
})
