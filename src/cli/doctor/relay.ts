// `doctor`'s hook relay check: the round trip every relayed native hook makes. A relay server is started as a harness
// starts it (a private socket directory under the temp dir, a session token in a 0600 file), and the very command the
// harness gives Codex for a hook (`node …/bin/codex-harness.js hook-relay --socket … --token-file … --event …`) is run
// once with a payload on stdin. It passes only when the command prints the answer this server made up for it: the relay
// fails closed (PreToolUse exits 2) on anything else, so an exit 0 without the marker is a failure too.
import type { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import { defaultRelayCommand } from "../../approvals/HookRelay.js"
import * as HookRelayServer from "../../approvals/HookRelayServer.js"
import { type CheckFailed, failed, firstLine, type Passed, passedWith, runProgram } from "./check.js"

/** the relay's own deadline for this one request (it has Node to start first) */
export const relayTimeoutMs = 10_000

export const hookRelayRoundTrip: Effect.Effect<Passed<void>, CheckFailed, FileSystem.FileSystem> = Effect.scoped(
  Effect.gen(function* () {
    const marker = `codex-harness-doctor-${crypto.randomBytes(8).toString("hex")}`
    const server = yield* HookRelayServer.make({
      handle: () => Effect.succeed({ exitCode: 0, stdout: JSON.stringify({ systemMessage: marker }) })
    }).pipe(Effect.mapError((e) => failed(e.message)))
    const tokenFile = yield* server.tokenFileFor("doctor").pipe(Effect.mapError((e) => failed(e.message)))
    const [command, ...prefix] = yield* defaultRelayCommand
    const args = [...prefix, "--socket", server.socketPath, "--token-file", tokenFile, "--event", "PreToolUse", "--timeout-ms", String(relayTimeoutMs)]
    const started = Date.now()
    const payload = JSON.stringify({ hook_event_name: "PreToolUse", tool_name: "doctor", tool_input: {} })
    // past its own deadline the relay answers by itself; a little more for that answer, then it is killed
    const ran = yield* runProgram(command!, args, { timeoutMs: relayTimeoutMs + 5_000, input: payload })
    if (ran.signal !== null) return yield* failed(`the relay command was killed by ${ran.signal}`)
    if (ran.code !== 0 || !ran.stdout.includes(marker)) {
      const said = firstLine(ran.stderr) || firstLine(ran.stdout)
      return yield* failed(`the relay command exited with code ${ran.code}${said === "" ? "" : `: ${said}`}`)
    }
    return passedWith(`hook relay round trip in ${Date.now() - started} ms (${[command, ...prefix].join(" ")})`, undefined)
  })
)
