// The codex side of `doctor`: the binary the harness would run, its version, and whether an app-server started from it
// (with the CODEX_HOME, provider overrides and MCP servers a new session would get) completes the `initialize`
// handshake. The full protocol contract check (`npm run protocol:check`) generates the binary's JSON schema with the
// dev-only scripts/protocol-check/, which is not shipped; a handshake is the cheapest check that still speaks the
// protocol, through the same Transport and AppServerConnection every turn uses.
import { Duration, Effect } from "effect"
import type { FileSystem } from "@effect/platform"
import * as Connection from "../../appserver/AppServerConnection.js"
import * as CodexBinary from "../../appserver/CodexBinary.js"
import { NodeTransportLive, Transport } from "../../appserver/Transport.js"
import type { HarnessSettings } from "../../config/Settings.js"
import * as Runtimes from "../../session/Runtimes.js"
import { providerKeyConfig, userCodexHomeConfig } from "../../session/SessionRuntime.js"
import { packageVersion } from "../version.js"
import { type CheckFailed, failed, firstLine, type Passed, passedWith, runProgram } from "./check.js"

export const versionTimeoutMs = 10_000
export const initializeTimeout = Duration.seconds(30)

const shown = (codex: CodexBinary.CodexCommand) => [codex.command, ...codex.prefixArgs].join(" ")

/** The codex command `--codex-bin` or the installed package gives, and what its `--version` says. */
export const codexBinary = (settings: HarnessSettings): Effect.Effect<Passed<CodexBinary.CodexCommand>, CheckFailed, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const codex = yield* CodexBinary.resolve(settings.codexBin).pipe(Effect.mapError((e) => failed(e.message)))
    const ran = yield* runProgram(codex.command, [...codex.prefixArgs, "--version"], { timeoutMs: versionTimeoutMs })
    if (ran.signal !== null) return yield* failed(`${shown(codex)} --version: killed by ${ran.signal} (no answer within ${versionTimeoutMs / 1000} s?)`)
    const version = firstLine(ran.stdout)
    if (ran.code !== 0 || version === "") {
      const said = firstLine(ran.stderr) || firstLine(ran.stdout)
      return yield* failed(`${shown(codex)} --version exited with code ${ran.code}${said === "" ? "" : `: ${said}`}`)
    }
    return passedWith(`codex binary ${shown(codex)}: ${version}`, codex)
  })

/** The CODEX_HOME and client spec a new session of these settings would get (SessionRuntime's rules). */
export const freshRuntime = (settings: HarnessSettings) =>
  Effect.gen(function* () {
    const userHome = yield* userCodexHomeConfig.pipe(Effect.orDie)
    const providerKey = yield* providerKeyConfig(settings.providerKeyEnv).pipe(Effect.orDie)
    const runtime = Runtimes.runtimeFor(settings, userHome)
    return { runtime, spec: Runtimes.clientSpecFor(runtime, settings, providerKey) }
  })

/** Starts an app-server as a new session would, completes `initialize`, and stops it (within the check's bound). */
export const appServerHandshake = (settings: HarnessSettings): Effect.Effect<Passed<void>, CheckFailed, FileSystem.FileSystem> =>
  Effect.scoped(Effect.gen(function* () {
    const { spec } = yield* freshRuntime(settings)
    const started = Date.now()
    const transport = yield* Transport
    // the transport and the connection are told the same client (an early app-server is taken only for its initialize)
    const client = { clientName: "codex-harness-doctor", clientVersion: packageVersion() }
    // a short grace: the handshake is done, there is no turn to let finish
    const handle = yield* transport.spawn({ ...spec, exitGrace: Duration.seconds(2), ...client })
    const connection = yield* Connection.make(handle, { ...client, requestTimeout: initializeTimeout })
    const seconds = ((Date.now() - started) / 1000).toFixed(1)
    // the user agent's first word names the server's version; the rest repeats the platform and our own client info
    const agent = connection.initialize.userAgent.split(" ")[0] ?? ""
    const on = `${agent}, ${connection.initialize.platformOs}`
    return passedWith(`app-server initialize in ${seconds} s (${on}), CODEX_HOME ${spec.codexHome ?? "-"}`, undefined)
  })).pipe(
    Effect.provide(NodeTransportLive),
    Effect.mapError((e) => failed(e.message))
  )
