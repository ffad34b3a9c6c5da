// How a command's options become HarnessSettings: flags over the config file over the defaults. A command passes only
// the option groups it accepts (options.ts); a flag it does not have counts as not given.
import { FileSystem } from "@effect/platform"
import { Duration, Effect, Option, Schema } from "effect"
import * as path from "node:path"
import * as AppServerUrl from "../appserver/AppServerUrl.js"
import * as CodexArgs from "../appserver/CodexArgs.js"
import * as HarnessConfig from "../config/HarnessConfig.js"
import type { HarnessSettings, SupervisionSettings } from "../config/Settings.js"
import { checkPrivate, type UntrustedPath } from "../platform/trust.js"
import { UsageError } from "./errors.js"
import { defaultStateDir, fromEnv, stateDirOf } from "./stateDir.js"

export { defaultStateDir, stateDirOf }
import type { GlobalOptions } from "./options.js"

export class BadOption extends Schema.TaggedError<BadOption>()("BadOption", { option: Schema.String, reason: Schema.String }) {
  override get message() {
    return `--${this.option}: ${this.reason}`
  }
}

/** The settings-bearing flags a command may have; each one it lacks is read as not given. */
export type SettingsOptions = Partial<Omit<GlobalOptions, "json" | "approvals" | "model">>

/** `options[key]`, or none when the command does not have that flag. */
const given = <K extends keyof SettingsOptions>(options: SettingsOptions, key: K): NonNullable<SettingsOptions[K]> =>
  (options[key] ?? Option.none()) as NonNullable<SettingsOptions[K]>

/** `--codex-home DIR` and `--user-codex-home` as overrides of the file (a path made absolute). Pure. */
export const codexHomeOverrides = (options: {
  readonly codexHome?: Option.Option<string> | undefined
  readonly userCodexHome?: boolean | undefined
}): Pick<HarnessConfig.CliOverrides, "codexHome" | "userCodexHome"> => ({
  codexHome: Option.getOrUndefined(Option.map(options.codexHome ?? Option.none(), (d) => path.resolve(d))),
  userCodexHome: options.userCodexHome === true ? true : undefined
})

/** Both home flags at once cannot mean anything: which CODEX_HOME? */
export const checkCodexHomeFlags = (options: {
  readonly codexHome?: Option.Option<string> | undefined
  readonly userCodexHome?: boolean | undefined
}): Effect.Effect<void, UsageError> =>
  options.userCodexHome === true && options.codexHome !== undefined && Option.isSome(options.codexHome)
    ? Effect.fail(new UsageError({ line: "--codex-home and --user-codex-home name two CODEX_HOMEs: give one" }))
    : Effect.void

/** Loads the config file that `--config` / `--state-dir` point at. */
export const loadFor = (options: { readonly config?: Option.Option<string>; readonly stateDir?: Option.Option<string> }) =>
  Option.match(options.config ?? Option.none(), {
    onSome: (file) =>
      checkPrivate("config file", path.resolve(file)).pipe(
        Effect.zipRight(HarnessConfig.load(path.resolve(file), { required: true }))
      ),
    onNone: () =>
      Effect.gen(function* () {
        const dir = yield* stateDirOf(options.stateDir ?? Option.none())
        // the state dir and its config are obeyed (the config may declare commands): they must be this user's alone
        yield* checkPrivate("state dir", dir)
        yield* checkPrivate("config file", HarnessConfig.defaultPath(dir))
        return yield* HarnessConfig.load(HarnessConfig.defaultPath(dir), { required: false })
      })
  })

/** Env values that turn supervision off for the CLI. */
const offValues = new Set(["0", "off", "false", "no"])

/**
 * S14: the CLI supervises the user's own CODEX_HOME unless told otherwise (--supervision-home, then
 * $CODEX_HARNESS_SUPERVISION_HOME, then the config's supervision.codexHome); CODEX_HARNESS_SUPERVISION=off or
 * supervision.enabled: false disables it, and supervised chats then fail closed.
 */
const supervisionSettings = (
  flag: Option.Option<string>,
  effective: {
    readonly providerUrl?: string
    readonly providerKeyEnv?: string
    readonly model?: string
    readonly codexBin?: string
    readonly supervision: { readonly enabled: boolean; readonly codexHome?: string }
  }
): Effect.Effect<SupervisionSettings> =>
  Effect.gen(function* () {
    const env = Option.getOrUndefined(yield* fromEnv("CODEX_HARNESS_SUPERVISION_HOME"))
    const home = Option.getOrUndefined(flag) ?? env ?? effective.supervision.codexHome
    const switched = Option.getOrElse(yield* fromEnv("CODEX_HARNESS_SUPERVISION"), () => "")
    const envOff = offValues.has(switched.trim().toLowerCase())
    return {
      enabled: effective.supervision.enabled && !envOff,
      codexHome: home !== undefined ? path.resolve(home) : undefined,
      providerUrl: effective.providerUrl,
      providerKeyEnv: effective.providerKeyEnv,
      model: effective.model,
      codexBin: effective.codexBin,
      disabledReason: envOff
        ? "CODEX_HARNESS_SUPERVISION is off; unset it to supervise native threads"
        : "supervision.enabled is false in the config file"
    }
  }).pipe(Effect.orDie)

/** Flags over the config file over the defaults, as the settings the harness runs with. */
export const toSettings = (
  flags: SettingsOptions
): Effect.Effect<HarnessSettings, BadOption | UsageError | HarnessConfig.ConfigError | UntrustedPath, FileSystem.FileSystem> =>
  Effect.map(toSettingsAndFile(flags), (loaded) => loaded.settings)

/** The same, with the config file they came from, for a command with keys of its own in it (serve): read once. */
export const toSettingsAndFile = (
  flags: SettingsOptions
): Effect.Effect<
  { readonly settings: HarnessSettings; readonly file: HarnessConfig.HarnessConfigFile },
  BadOption | UsageError | HarnessConfig.ConfigError | UntrustedPath,
  FileSystem.FileSystem
> =>
  Effect.gen(function* () {
    const options = {
      cwd: given(flags, "cwd"),
      stateDir: given(flags, "stateDir"),
      config: given(flags, "config"),
      codexHome: given(flags, "codexHome"),
      codexBin: given(flags, "codexBin"),
      providerUrl: given(flags, "providerUrl"),
      providerKeyEnv: given(flags, "providerKeyEnv"),
      approvalPolicy: given(flags, "approvalPolicy"),
      sandbox: given(flags, "sandbox"),
      timeout: given(flags, "timeout"),
      appServer: given(flags, "appServer"),
      supervisionHome: given(flags, "supervisionHome")
    }
    // a name that cannot be a variable's is a usage error, said before anything is read; the line never repeats it,
    // since what was typed there may be the key itself
    const keyEnvProblem = Option.getOrUndefined(Option.map(options.providerKeyEnv, CodexArgs.checkProviderKeyEnv))
    if (keyEnvProblem !== undefined) return yield* new UsageError({ line: `--provider-key-env: ${keyEnvProblem}` })
    yield* checkCodexHomeFlags(flags)
    const file = yield* loadFor(options)
    const effective = HarnessConfig.merge(file, {
      providerUrl: Option.getOrUndefined(options.providerUrl),
      providerKeyEnv: Option.getOrUndefined(options.providerKeyEnv),
      approvalPolicy: Option.getOrUndefined(options.approvalPolicy),
      sandbox: Option.getOrUndefined(options.sandbox),
      ...codexHomeOverrides(flags),
      codexBin: Option.getOrUndefined(options.codexBin),
      turnTimeoutSeconds: Option.getOrUndefined(options.timeout),
      appServerUrl: Option.getOrUndefined(options.appServer)
    })
    if (Option.isSome(options.timeout) && options.timeout.value <= 0) {
      return yield* Effect.fail(new BadOption({ option: "timeout", reason: `expected a positive number of seconds, got ${options.timeout.value}` }))
    }
    if (effective.providerUrl !== undefined) {
      const problem = CodexArgs.checkProviderUrl(effective.providerUrl)
      if (problem !== undefined) return yield* Effect.fail(new BadOption({ option: "provider-url", reason: problem }))
    }
    if (effective.appServer.url !== undefined) {
      const problem = AppServerUrl.check(effective.appServer.url)
      if (problem !== undefined) return yield* Effect.fail(new BadOption({ option: "app-server", reason: problem }))
    }
    const cwd = path.resolve(Option.getOrElse(options.cwd, () => process.cwd()))
    const fs = yield* FileSystem.FileSystem
    const kind = yield* fs.stat(cwd).pipe(
      Effect.map((info) => info.type),
      Effect.orElseSucceed(() => undefined)
    )
    if (kind !== "Directory") return yield* Effect.fail(new BadOption({ option: "cwd", reason: `not a directory: ${cwd}` }))
    const settings: HarnessSettings = {
      stateDir: yield* stateDirOf(options.stateDir),
      cwd,
      codexHome: effective.codexHome,
      userCodexHome: effective.userCodexHome,
      codexBin: effective.codexBin,
      providerUrl: effective.providerUrl,
      providerKeyEnv: effective.providerKeyEnv,
      // the config file's model is the default; --model is the user's explicit choice, passed per turn
      model: effective.model,
      approvalPolicy: effective.approvalPolicy,
      sandbox: effective.sandbox,
      approvalsReviewer: effective.approvalsReviewer,
      serviceTier: effective.serviceTier,
      visibleReplies: effective.messages.visibleReplies,
      cronScratchPath: effective.heartbeat.cronScratchPath,
      route: effective.turnContext.route,
      systemPromptPath: effective.turnContext.systemPromptPath,
      policyRestricted: effective.turnContext.policyRestricted,
      channel: effective.turnContext.channel,
      memoryMode: effective.turnContext.memory,
      skillsPath: effective.turnContext.skillsPath,
      adapterContext: effective.turnContext.adapterContext,
      requestTimeout: Duration.seconds(effective.appServer.requestTimeoutSeconds),
      idleTimeToLive: Duration.seconds(effective.appServer.idleTimeToLiveSeconds),
      appServerUrl: effective.appServer.url,
      appServerTokenEnv: effective.appServer.tokenEnv,
      sandboxExecServer: effective.appServer.experimental.sandboxExecServer,
      queueMode: effective.messages.queue.mode,
      quietWindow: Duration.millis(effective.messages.queue.quietWindowMs),
      nativeHookEvents: effective.nativeHookRelay.events,
      allowAlwaysWindow: Duration.minutes(effective.approvals.allowAlwaysWindowMinutes),
      allowAlwaysMaxEntries: effective.approvals.allowAlwaysMaxEntries,
      compactionTimeout: Duration.seconds(effective.compaction.timeoutSeconds),
      interruptGrace: Duration.seconds(effective.compaction.interruptGraceSeconds),
      questionTimeout: Duration.seconds(effective.questions.timeoutSeconds),
      turnTimeout: Duration.seconds(effective.turns.timeoutSeconds),
      providerSilence: Duration.seconds(effective.turns.silenceSeconds),
      mcpServers: effective.mcpServers,
      supervision: yield* supervisionSettings(options.supervisionHome, effective),
      apps: effective.apps === undefined
        ? undefined
        : {
          plugins: Object.fromEntries(Object.entries(effective.apps.plugins ?? {}).map(([id, p]) => [id, { allow: p.allow ?? [] }])),
          disabledPlugins: effective.apps.disabledPlugins ?? [],
          ...(effective.apps.snapshotTtlSeconds !== undefined ? { snapshotTtl: Duration.seconds(effective.apps.snapshotTtlSeconds) } : {}),
          ...(effective.apps.readyTimeoutSeconds !== undefined ? { readyTimeout: Duration.seconds(effective.apps.readyTimeoutSeconds) } : {})
        }
    }
    return { settings, file }
  })
