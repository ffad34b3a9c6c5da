// `codex-harness doctor`: is this machine ready to run the harness? One line per check (`ok   …`, `FAIL <check>: <why>`,
// `skip <check>: <why>`), run one after another (each bounded in time: doctor/check.ts), then exit 1 when any failed.
// The checks use the settings a `run` with the same flags would have, so they test what a session would get: its
// codex binary, its CODEX_HOME, its provider. Settings that cannot be read are a failed check of their own, and the
// rest run with what the flags say. Loaded when the command runs; its flags are in commands/doctor.ts.
import { FileSystem } from "@effect/platform"
import { Console, Effect, Option, Schema } from "effect"
import * as path from "node:path"
import * as CodexArgs from "../appserver/CodexArgs.js"
import * as HarnessConfig from "../config/HarnessConfig.js"
import type { HarnessSettings } from "../config/Settings.js"
import type { DoctorOptions } from "./commands/doctor.js"
import { type CheckFailed, type CheckResult, failed, line, passedWith, runCheck, skipped } from "./doctor/check.js"
import { appServerHandshake, codexBinary, freshRuntime } from "./doctor/codex.js"
import { writable } from "./doctor/files.js"
import { leftoverProcesses, staleRelayDirs } from "./doctor/leftovers.js"
import { providerReachable } from "./doctor/provider.js"
import { hookRelayRoundTrip } from "./doctor/relay.js"
import { UsageError } from "./errors.js"
import { codexHomeOverrides, stateDirOf, toSettings } from "./settings.js"

export class DoctorFailed extends Schema.TaggedError<DoctorFailed>()("DoctorFailed", {
  failed: Schema.Number,
  total: Schema.Number
}) {
  override get message() {
    return `${this.failed} of ${this.total} doctor checks failed`
  }
}

/** Each check's time bound: generous for a loaded machine, short enough that a hang is told apart from slowness. */
export const bounds = {
  config: "5 seconds",
  codexBinary: "15 seconds",
  appServer: "40 seconds",
  directory: "5 seconds",
  provider: "8 seconds",
  leftovers: "5 seconds",
  hookRelay: "20 seconds"
} as const

/** What the flags alone say, for the checks after a config that could not be read. */
const fromFlags = (options: DoctorOptions, stateDir: string): HarnessSettings => {
  const providerUrl = Option.getOrUndefined(options.providerUrl)
  return {
    stateDir,
    cwd: process.cwd(),
    ...codexHomeOverrides(options),
    codexBin: Option.getOrUndefined(options.codexBin),
    providerUrl: providerUrl !== undefined && CodexArgs.checkProviderUrl(providerUrl) === undefined ? providerUrl : undefined,
    approvalPolicy: "never",
    sandbox: "read-only"
  }
}

/** The settings a `run` with these flags gets, as a check: the config file named or found, or why it cannot be used. */
const settingsCheck = (options: DoctorOptions) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const settings = yield* toSettings(options).pipe(
      // a command line that cannot mean anything stays a usage error (exit 2), as for every command
      Effect.catchAll((e): Effect.Effect<never, UsageError | CheckFailed> => Effect.fail(e instanceof UsageError ? e : failed(e.message)))
    )
    const file = Option.getOrElse(Option.map(options.config, (f) => path.resolve(f)), () => HarnessConfig.defaultPath(settings.stateDir))
    const found = yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false))
    return passedWith(found ? `config ${file}` : `config: no ${file}, the defaults and flags apply`, settings)
  })

export const doctor = (options: DoctorOptions) =>
  Effect.gen(function* () {
    const results: Array<CheckResult> = []
    const report = (result: CheckResult) =>
      Effect.zipRight(
        Effect.sync(() => results.push(result)),
        Console.log(options.json ? JSON.stringify(result) : line(result))
      )

    const config = yield* runCheck("config", bounds.config, settingsCheck(options))
    yield* report(config.result)
    const stateDir = Option.isSome(config.value) ? config.value.value.stateDir : yield* stateDirOf(options.stateDir)
    const effective = Option.getOrElse(config.value, () => fromFlags(options, stateDir))

    const binary = yield* runCheck("codex binary", bounds.codexBinary, codexBinary(effective))
    yield* report(binary.result)
    yield* report(
      (yield* runCheck(
        "app-server",
        bounds.appServer,
        Option.isSome(binary.value) ? appServerHandshake(effective) : Effect.fail(skipped("no codex binary to start"))
      )).result
    )
    yield* report((yield* runCheck("state dir", bounds.directory, writable("state dir", stateDir, { private: true }))).result)
    // the CODEX_HOME a new session's app-server gets (the agent's own, unless --codex-home or --user-codex-home says otherwise)
    const codexHome = Effect.flatMap(freshRuntime(effective), ({ runtime }) => writable("CODEX_HOME", runtime.codexHome))
    yield* report((yield* runCheck("CODEX_HOME", bounds.directory, codexHome)).result)
    yield* report((yield* runCheck("provider", bounds.provider, providerReachable(effective.providerUrl))).result)
    // before the relay check: starting a relay removes the stale directories this one reports
    yield* report((yield* runCheck("leftover processes", bounds.leftovers, leftoverProcesses(stateDir))).result)
    yield* report((yield* runCheck("relay directories", bounds.leftovers, staleRelayDirs())).result)
    yield* report((yield* runCheck("hook relay", bounds.hookRelay, hookRelayRoundTrip)).result)

    const failures = results.filter((r) => r.status === "fail").length
    if (failures > 0) return yield* new DoctorFailed({ failed: failures, total: results.length })
  }).pipe(Effect.withSpan("doctor"))
