// The harness config file: load, decode with errors that name the field, and merge with command-line flags.
// Owns the precedence (flags > file > defaults). Never writes the file; `~` in a path value is the only thing taken from outside it.
import { FileSystem } from "@effect/platform"
import { Effect, Either, JSONSchema, Option, ParseResult, Schema } from "effect"
import * as os from "node:os"
import * as path from "node:path"
import * as ConfigSchema from "../../schemas/config.js"
import type { AskForApproval, SandboxMode } from "../../schemas/protocol.js"
import { describeFileError, isNotFound } from "../platform/fileErrors.js"

export { HarnessConfig } from "../../schemas/config.js"
export type { HarnessConfig as HarnessConfigFile } from "../../schemas/config.js"
type File = ConfigSchema.HarnessConfig

/** The documented defaults (also the JSON Schema's `default`s). `nativeHookRelay.events` depends on the approval policy: see `defaultNativeHookEvents`. */
export const ConfigDefaults = ConfigSchema.Defaults

/** A config file larger than this is refused unread (a real one is a few KiB). */
export const maxConfigBytes = 1024 * 1024

/** The config file a state directory implies; a missing one is the empty config. */
export const defaultPath = (stateDir: string): string => path.join(stateDir, "config.json")

export class ConfigNotFound extends Schema.TaggedError<ConfigNotFound>()("ConfigNotFound", { file: Schema.String }) {
  override get message() {
    return `${this.file}: no such config file`
  }
}

export class ConfigUnreadable extends Schema.TaggedError<ConfigUnreadable>()("ConfigUnreadable", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.file}: cannot read the config file: ${this.reason}`
  }
}

export class ConfigSyntaxError extends Schema.TaggedError<ConfigSyntaxError>()("ConfigSyntaxError", {
  file: Schema.String,
  line: Schema.Number,
  column: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `${this.file}: invalid JSON at line ${this.line}, column ${this.column}: ${this.reason}`
  }
}

export class ConfigInvalid extends Schema.TaggedError<ConfigInvalid>()("ConfigInvalid", {
  file: Schema.String,
  /** the field path, e.g. `messages.queue.mode` or `nativeHookRelay.events[1]`; empty for the whole file */
  field: Schema.String,
  /** e.g. `expected "steer" | "followup" | "collect", got "loud"` */
  problem: Schema.String,
  /** how many other problems the file has */
  more: Schema.Number
}) {
  override get message() {
    const more = this.more === 0 ? "" : ` (and ${this.more} more problem${this.more === 1 ? "" : "s"})`
    return `${this.file}: ${this.field === "" ? "" : `${this.field}: `}${this.problem}${more}`
  }
}

export type ConfigError = ConfigNotFound | ConfigUnreadable | ConfigSyntaxError | ConfigInvalid

const fieldPath = (segments: ReadonlyArray<PropertyKey>): string =>
  segments.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : acc === "" ? String(key) : `${acc}.${String(key)}`),
    ""
  )

// edit distance with transpositions (optimal string alignment), for "did you mean"
const distance = (a: string, b: string): number => {
  const d: Array<Array<number>> = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0))
  )
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1)
      d[i]![j] = best
    }
  }
  return d[a.length]![b.length]!
}

const unknownKey = (key: string, message: string): string => {
  const list = message.replace(/^is unexpected, expected: /, "")
  const known = Array.from(list.matchAll(/"((?:[^"\\]|\\.)*)"/g), (m) => m[1]!)
  const scored = known
    .map((k) => ({ k, score: k.toLowerCase() === key.toLowerCase() ? 0 : distance(key, k) }))
    .filter(({ k, score }) => score <= Math.max(1, Math.floor(k.length / 4)))
    .sort((x, y) => x.score - y.score)
  const guess = scored[0]
  return guess !== undefined ? `unknown key (did you mean "${guess.k}"?)` : `unknown key, expected one of ${list}`
}

const problemOf = (issue: ParseResult.ArrayFormatterIssue): string =>
  issue._tag === "Unexpected" ? unknownKey(String(issue.path[issue.path.length - 1] ?? ""), issue.message) : issue.message

const decodeFile = Schema.decodeUnknownEither(ConfigSchema.HarnessConfig, { onExcessProperty: "error", errors: "all" })

/** Decodes an already-parsed value; `file` only names the file in the error. */
export const decodeValue = (file: string, value: unknown): Either.Either<File, ConfigInvalid> =>
  Either.mapLeft(decodeFile(value), (error) => {
    const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
    const first = issues[0]
    return new ConfigInvalid({
      file,
      field: first === undefined ? "" : fieldPath(first.path),
      problem: first === undefined ? "invalid" : problemOf(first),
      more: Math.max(0, issues.length - 1)
    })
  })

/** Parses and decodes the text of a config file. Pure. */
export const decode = (file: string, text: string): Either.Either<File, ConfigSyntaxError | ConfigInvalid> => {
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  let value: unknown
  try {
    value = JSON.parse(source)
  } catch (e) {
    const found = jsonErrorAt(source) ?? { offset: 0, reason: e instanceof Error ? e.message : String(e) }
    return Either.left(new ConfigSyntaxError({ file, ...lineColumn(source, found.offset), reason: found.reason }))
  }
  return decodeValue(file, value)
}

const expandPath = (value: string, baseDir: string): string =>
  value === "~" || value.startsWith("~/") ? path.join(os.homedir(), value.slice(1)) : path.resolve(baseDir, value)

/** Makes the file's path values absolute: `~/...` is the home directory, anything relative is relative to `baseDir` (the file's directory). */
export const resolvePaths = (config: File, baseDir: string): File => ({
  ...config,
  ...(config.codexHome !== undefined ? { codexHome: expandPath(config.codexHome, baseDir) } : {}),
  ...(config.codexBin !== undefined ? { codexBin: expandPath(config.codexBin, baseDir) } : {}),
  ...(config.heartbeat?.cronScratchPath !== undefined
    ? { heartbeat: { ...config.heartbeat, cronScratchPath: expandPath(config.heartbeat.cronScratchPath, baseDir) } }
    : {}),
  ...(config.turnContext !== undefined
    ? {
      turnContext: {
        ...config.turnContext,
        ...(config.turnContext.systemPromptPath !== undefined
          ? { systemPromptPath: expandPath(config.turnContext.systemPromptPath, baseDir) }
          : {}),
        ...(config.turnContext.skillsPath !== undefined ? { skillsPath: expandPath(config.turnContext.skillsPath, baseDir) } : {})
      }
    }
    : {}),
  ...(config.supervision?.codexHome !== undefined
    ? { supervision: { ...config.supervision, codexHome: expandPath(config.supervision.codexHome, baseDir) } }
    : {})
})

/**
 * Reads and decodes the config file at `file`, with its path values made absolute. A missing file is the empty config unless
 * `required` (the user named it with --config).
 */
export const load = (
  file: string,
  options: { readonly required: boolean }
): Effect.Effect<File, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    // only a regular file of a sane size is read: a FIFO would block forever, /dev/zero would never end
    const info = yield* fs.stat(file).pipe(Effect.option)
    if (Option.isSome(info) && info.value.type !== "File") {
      const reason = info.value.type === "Directory" ? "it is a directory" : `it is not a regular file (${info.value.type})`
      return yield* new ConfigUnreadable({ file, reason })
    }
    if (Option.isSome(info) && Number(info.value.size) > maxConfigBytes) {
      return yield* new ConfigUnreadable({ file, reason: `it is larger than ${maxConfigBytes / 1024} KiB` })
    }
    const text = yield* fs.readFileString(file).pipe(
      Effect.map((t): string | undefined => t),
      Effect.catchAll((e): Effect.Effect<string | undefined, ConfigNotFound | ConfigUnreadable> => {
        if (isNotFound(e)) return options.required ? Effect.fail(new ConfigNotFound({ file })) : Effect.succeed(undefined)
        const directory = e._tag === "SystemError" && /EISDIR/.test(e.description ?? "")
        return Effect.fail(new ConfigUnreadable({ file, reason: directory ? "it is a directory" : describeFileError(e) }))
      })
    )
    if (text === undefined) return {}
    const config = yield* decode(file, text)
    return resolvePaths(config, path.dirname(path.resolve(file)))
  }).pipe(Effect.withSpan("HarnessConfig.load", { attributes: { file } }))

/** The settings command-line flags can override; `undefined` means the flag was not given. */
export interface CliOverrides {
  readonly model?: string | undefined
  readonly providerUrl?: string | undefined
  readonly providerKeyEnv?: string | undefined
  readonly approvalPolicy?: AskForApproval | undefined
  readonly sandbox?: SandboxMode | undefined
  readonly codexHome?: string | undefined
  /** `--user-codex-home`: true, or undefined when not given */
  readonly userCodexHome?: true | undefined
  readonly codexBin?: string | undefined
  readonly turnTimeoutSeconds?: number | undefined
  readonly appServerUrl?: string | undefined
}

/** Every setting after flags, file and defaults; keys without a default are absent when nobody set them. */
export interface EffectiveConfig {
  readonly model?: string
  readonly providerUrl?: string
  readonly providerKeyEnv?: string
  readonly approvalPolicy: AskForApproval
  readonly sandbox: SandboxMode
  readonly approvalsReviewer?: ConfigSchema.ApprovalsReviewer
  readonly serviceTier?: string
  readonly codexHome?: string
  /** true: the user's own CODEX_HOME (absent when `codexHome` names one) */
  readonly userCodexHome?: true
  readonly codexBin?: string
  readonly messages: {
    readonly visibleReplies: ConfigSchema.VisibleReplies
    readonly queue: { readonly mode: ConfigSchema.QueueMode; readonly quietWindowMs: number }
  }
  readonly nativeHookRelay: { readonly events: ReadonlyArray<ConfigSchema.NativeHookEvent> }
  readonly compaction: { readonly timeoutSeconds: number; readonly interruptGraceSeconds: number }
  readonly approvals: { readonly allowAlwaysWindowMinutes: number; readonly allowAlwaysMaxEntries: number }
  readonly appServer: {
    readonly requestTimeoutSeconds: number
    readonly idleTimeToLiveSeconds: number
    readonly url?: string
    readonly tokenEnv?: string
    readonly experimental: { readonly sandboxExecServer: boolean }
  }
  readonly heartbeat: { readonly cronScratchPath?: string }
  readonly turnContext: NonNullable<ConfigSchema.HarnessConfig["turnContext"]>
  readonly questions: { readonly timeoutSeconds: number }
  readonly turns: { readonly timeoutSeconds: number; readonly silenceSeconds: number }
  readonly supervision: { readonly enabled: boolean; readonly codexHome?: string }
  readonly mcpServers?: ConfigSchema.HarnessConfig["mcpServers"]
  readonly apps?: ConfigSchema.HarnessConfig["apps"]
}

/** S20: with app-server approvals on (policy not "never") PermissionRequest is left to Codex's reviewer unless configured. */
export const defaultNativeHookEvents = (approvalPolicy: AskForApproval): ReadonlyArray<ConfigSchema.NativeHookEvent> =>
  approvalPolicy === "never"
    ? ["pre_tool_use", "post_tool_use", "permission_request", "stop"]
    : ["pre_tool_use", "post_tool_use", "stop"]

const present = <K extends string, V>(key: K, value: V | undefined): { readonly [P in K]?: V } =>
  (value === undefined ? {} : { [key]: value }) as { readonly [P in K]?: V }

/** Which CODEX_HOME the flags, else the file, name: a path, the user's own, or neither (the agent's default). Pure. */
const codexHomeOf = (config: File, cli: CliOverrides): { readonly codexHome?: string; readonly userCodexHome?: true } => {
  if (cli.codexHome !== undefined) return { codexHome: cli.codexHome }
  if (cli.userCodexHome === true) return { userCodexHome: true }
  if (config.codexHome !== undefined) return { codexHome: config.codexHome }
  return config.userCodexHome === true ? { userCodexHome: true } : {}
}

/** The effective settings: a flag wins over the file, the file wins over `ConfigDefaults`. Pure. */
export const merge = (config: File, cli: CliOverrides = {}): EffectiveConfig => {
  const d = ConfigDefaults
  const approvalPolicy = cli.approvalPolicy ?? config.approvalPolicy ?? d.approvalPolicy
  return {
    ...present("model", cli.model ?? config.model),
    ...present("providerUrl", cli.providerUrl ?? config.providerUrl),
    ...present("providerKeyEnv", cli.providerKeyEnv ?? config.providerKeyEnv),
    approvalPolicy,
    sandbox: cli.sandbox ?? config.sandbox ?? d.sandbox,
    ...present("approvalsReviewer", config.approvalsReviewer),
    ...present("serviceTier", config.serviceTier),
    // a home given on the command line, a path or the user's own, replaces whatever the file says
    ...codexHomeOf(config, cli),
    ...present("codexBin", cli.codexBin ?? config.codexBin),
    messages: {
      visibleReplies: config.messages?.visibleReplies ?? d.messages.visibleReplies,
      queue: {
        mode: config.messages?.queue?.mode ?? d.messages.queue.mode,
        quietWindowMs: config.messages?.queue?.quietWindowMs ?? d.messages.queue.quietWindowMs
      }
    },
    nativeHookRelay: { events: config.nativeHookRelay?.events ?? defaultNativeHookEvents(approvalPolicy) },
    compaction: {
      timeoutSeconds: config.compaction?.timeoutSeconds ?? d.compaction.timeoutSeconds,
      interruptGraceSeconds: config.compaction?.interruptGraceSeconds ?? d.compaction.interruptGraceSeconds
    },
    approvals: {
      allowAlwaysWindowMinutes: config.approvals?.allowAlwaysWindowMinutes ?? d.approvals.allowAlwaysWindowMinutes,
      allowAlwaysMaxEntries: config.approvals?.allowAlwaysMaxEntries ?? d.approvals.allowAlwaysMaxEntries
    },
    appServer: {
      requestTimeoutSeconds: config.appServer?.requestTimeoutSeconds ?? d.appServer.requestTimeoutSeconds,
      idleTimeToLiveSeconds: config.appServer?.idleTimeToLiveSeconds ?? d.appServer.idleTimeToLiveSeconds,
      ...present("url", cli.appServerUrl ?? config.appServer?.url),
      ...present("tokenEnv", config.appServer?.tokenEnv),
      experimental: {
        sandboxExecServer: config.appServer?.experimental?.sandboxExecServer ?? d.appServer.experimental.sandboxExecServer
      }
    },
    heartbeat: present("cronScratchPath", config.heartbeat?.cronScratchPath),
    turnContext: config.turnContext ?? {},
    questions: { timeoutSeconds: config.questions?.timeoutSeconds ?? d.questions.timeoutSeconds },
    turns: {
      timeoutSeconds: cli.turnTimeoutSeconds ?? config.turns?.timeoutSeconds ?? d.turns.timeoutSeconds,
      silenceSeconds: config.turns?.silenceSeconds ?? d.turns.silenceSeconds
    },
    supervision: {
      enabled: config.supervision?.enabled ?? d.supervision.enabled,
      ...present("codexHome", config.supervision?.codexHome)
    },
    ...present("mcpServers", config.mcpServers),
    ...present("apps", config.apps)
  }
}

/** The config file's JSON Schema (draft-07), for editors: `additionalProperties: false` everywhere, with descriptions and defaults. */
export const jsonSchema = (): JSONSchema.JsonSchema7Root => JSONSchema.make(ConfigSchema.HarnessConfig)

// JSON.parse on Node 20 often gives no position; this scanner finds where (and why) the text stops being JSON.
class JsonStop {
  constructor(
    readonly offset: number,
    readonly reason: string
  ) {}
}

const jsonErrorAt = (text: string): { readonly offset: number; readonly reason: string } | undefined => {
  let i = 0
  const stop = (reason: string): never => {
    throw new JsonStop(i, reason)
  }
  const here = () => (i >= text.length ? "unexpected end of file" : `unexpected ${JSON.stringify(text[i])}`)
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++
  }
  const digits = () => {
    const start = i
    while (i < text.length && text[i]! >= "0" && text[i]! <= "9") i++
    if (i === start) stop(`${here()}, expected a digit`)
  }
  const string = () => {
    i++
    for (;;) {
      if (i >= text.length) stop("unterminated string")
      const c = text[i]!
      if (c === '"') return void i++
      if (c === "\\") {
        const e = text[i + 1]
        if (e === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) stop("invalid \\u escape in a string")
          i += 6
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2
        else stop("invalid escape in a string")
      } else if (c < " ") stop("control character (e.g. a raw newline) in a string")
      else i++
    }
  }
  const value = (): void => {
    ws()
    const c = text[i]
    if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]"
      i++
      ws()
      if (text[i] === close) return void i++
      for (;;) {
        ws()
        if (c === "{") {
          if (text[i] !== '"') stop(`${here()}, expected a property name in double quotes`)
          string()
          ws()
          if (text[i] !== ":") stop(`${here()}, expected ":"`)
          i++
        }
        value()
        ws()
        if (text[i] === close) return void i++
        if (text[i] !== ",") stop(`${here()}, expected "," or "${close}"`)
        i++
        ws()
        if (text[i] === "}" || text[i] === "]") stop("trailing comma")
      }
    }
    if (c === '"') return string()
    if (c === "-" || (c !== undefined && c >= "0" && c <= "9")) {
      if (c === "-") i++
      if (text[i] === "0") i++
      else digits()
      if (text[i] === ".") {
        i++
        digits()
      }
      if (text[i] === "e" || text[i] === "E") {
        i++
        if (text[i] === "+" || text[i] === "-") i++
        digits()
      }
      return
    }
    for (const literal of ["true", "false", "null"]) {
      if (text.startsWith(literal, i)) return void (i += literal.length)
    }
    stop(`${here()}, expected a value`)
  }
  try {
    value()
    ws()
    if (i < text.length) stop(`${here()} after the end of the JSON value`)
    return undefined
  } catch (found) {
    return found instanceof JsonStop ? found : { offset: i, reason: "nested too deeply" }
  }
}

const lineColumn = (text: string, offset: number): { readonly line: number; readonly column: number } => {
  const before = text.slice(0, offset)
  const lineStart = before.lastIndexOf("\n") + 1
  return { line: before.split("\n").length, column: offset - lineStart + 1 }
}
