// `codex-harness nodes pair|list|unpair|run` (S26). Pairing is explicit and local (files under the state dir); a token
// is read from stdin or a named variable and never printed. `run` is one fresh attempt on the node: its own app-server
// here (model auth stays here), the node registered as that app-server's environment through the harness's relay.
// Loaded when one of them runs; their flags are in commands/nodes.ts.
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Config, Console, Effect, Option, Redacted } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import { NodeTransportLive } from "../appserver/Transport.js"
import * as NodeAttempt from "../nodes/NodeAttempt.js"
import * as NodePairing from "../nodes/NodePairing.js"
import * as Runtimes from "../session/Runtimes.js"
import { providerKeyConfig } from "../session/SessionRuntime.js"
import type { ListOptions, PairOptions, RunOptions, UnpairOptions } from "./commands/nodes.js"
import { UsageError } from "./errors.js"
import { readStdin } from "./runPrompt.js"
import { toSettings } from "./settings.js"
import { terminalText as safeText } from "../platform/terminalText.js"

const stateDirOf = (options: { readonly stateDir: Option.Option<string>; readonly config: Option.Option<string> }) =>
  Effect.map(toSettings(options), (s) => s.stateDir)

export const pair = (options: PairOptions) =>
  Effect.gen(function* () {
    const stateDir = yield* stateDirOf(options)
    let token: Redacted.Redacted<string>
    if (Option.isSome(options.tokenEnv)) {
      const value = yield* Config.string(options.tokenEnv.value).pipe(Config.option, Effect.orElseSucceed(() => Option.none<string>()))
      if (Option.isNone(value) || value.value.trim() === "") {
        return yield* new UsageError({ line: `--token-env: $${options.tokenEnv.value} is unset or empty` })
      }
      token = Redacted.make(value.value)
    } else {
      if (process.stdin.isTTY) {
        return yield* new UsageError({ line: "pipe the node's token on stdin (or name its variable with --token-env); it never goes on the command line" })
      }
      token = Redacted.make(yield* readStdin(64 * 1024, "the token"))
    }
    const node = yield* NodePairing.pair(stateDir, {
      name: options.name,
      url: options.url,
      appServerUrl: Option.getOrUndefined(options.appServer),
      token
    })
    yield* Console.log(`paired ${node.name}: ${node.url} (token stored 0600 in ${path.join(NodePairing.nodesDir(stateDir), `${node.name}.token`)})`)
  }).pipe(Effect.provide(NodeFileSystem.layer))

export const list = (options: ListOptions) =>
  Effect.gen(function* () {
    const stateDir = yield* stateDirOf(options)
    const nodes = yield* NodePairing.list(stateDir)
    if (options.json) {
      for (const n of nodes) yield* Console.log(JSON.stringify({ type: "node", ...n }))
      return
    }
    if (nodes.length === 0) return yield* Console.log("no paired nodes (codex-harness nodes pair NAME URL)")
    for (const n of nodes) {
      yield* Console.log(`${safeText(n.name)}  ${safeText(n.url)}  ${n.appServerUrl !== undefined ? `app-server ${safeText(n.appServerUrl)}` : "-"}  paired ${n.pairedAt}`)
    }
  }).pipe(Effect.provide(NodeFileSystem.layer))

export const unpair = (options: UnpairOptions) =>
  Effect.gen(function* () {
    const stateDir = yield* stateDirOf(options)
    const found = yield* NodePairing.unpair(stateDir, options.name)
    if (!found) return yield* new UsageError({ line: `node ${options.name} is not paired` })
    yield* Console.log(`unpaired ${options.name}`)
  }).pipe(Effect.provide(NodeFileSystem.layer))

export const run = (options: RunOptions) =>
  Effect.gen(function* () {
    const settings = yield* toSettings(options)
    if (settings.appServerUrl !== undefined) {
      return yield* new UsageError({ line: "a node attempt runs its own app-server here; drop --app-server / appServer.url" })
    }
    const node = yield* NodePairing.get(settings.stateDir, options.name)
    const token = yield* NodePairing.token(settings.stateDir, options.name)
    const providerKey = yield* providerKeyConfig(settings.providerKeyEnv).pipe(Effect.orDie)
    const userHome = process.env.CODEX_HOME !== undefined && process.env.CODEX_HOME !== "" ? path.resolve(process.env.CODEX_HOME) : path.join(os.homedir(), ".codex")
    const spec = Runtimes.clientSpecFor(Runtimes.runtimeFor(settings, userHome), settings, providerKey)
    const turn = yield* Effect.scoped(
      Effect.flatMap(
        NodeAttempt.open({ node: node.name, url: node.url, token: Option.some(token), appServer: spec }),
        (attempt) =>
          attempt.runTurn({
            prompt: options.prompt,
            cwd: Option.getOrElse(options.nodeCwd, () => "/tmp"),
            sandbox: settings.sandbox
          })
      )
    ).pipe(Effect.provide(NodeTransportLive))
    for (const c of turn.commands) {
      yield* Console.error(`$ ${safeText(c.command)}  (on ${node.name}, exit ${c.exitCode ?? "?"})`)
      if (c.output !== "") yield* Console.error(safeText(c.output.replace(/\n$/, "")))
    }
    yield* Console.log(safeText(turn.finalText))
  }).pipe(Effect.provide(NodeFileSystem.layer))
