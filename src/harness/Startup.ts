// What the Live layer checks when it is built, before any service starts: the settings decode, the workspace exists,
// the state dir and the temp dir (where the hook relay's socket goes) are usable and nobody else's to write, and the
// codex binary is there and answers as codex. Each cause is a typed error of its own, so an app can tell them apart
// (`Effect.catchTag`) and say one line; none is a defect. Checked once, at build: a turn never finds out later.
import { FileSystem } from "@effect/platform"
import { Effect, Option, ParseResult, Schema } from "effect"
import { execFile } from "node:child_process"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as SettingsSchema from "../../schemas/settings.js"
import { dirPrefix, socketName } from "../approvals/RelayDirs.js"
import { type HookRelayServerError } from "../approvals/HookRelayServer.js"
import { type CodexBinaryNotFound, type CodexCommand, resolve as resolveCodex } from "../appserver/CodexBinary.js"
import type { HarnessSettings } from "../config/Settings.js"
import { describeFileError } from "../platform/fileErrors.js"
import { ensureDir } from "../platform/ensureDir.js"
import { checkPrivate } from "../platform/trust.js"
import * as HarnessLog from "../platform/HarnessLog.js"

/** The settings given to the layer do not decode (a wrong value, a missing field); `issues` names each field. */
export class InvalidSettings extends Schema.TaggedError<InvalidSettings>()("InvalidSettings", { issues: Schema.String }) {
  override get message() {
    return `the harness settings do not decode: ${this.issues}`
  }
}

/** `cwd` (the agent's workspace) does not exist or is not a directory. */
export class WorkspaceMissing extends Schema.TaggedError<WorkspaceMissing>()("WorkspaceMissing", {
  cwd: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the workspace ${this.cwd} cannot be used: ${this.reason}`
  }
}

/** `stateDir` cannot be created or written, is not a directory, or is another user's or writable by others. */
export class StateDirUnusable extends Schema.TaggedError<StateDirUnusable>()("StateDirUnusable", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the state dir ${this.path} cannot be used: ${this.reason}`
  }
}

/** The temp dir (TMPDIR, or `HookRelayConfig.socketParentDir`) cannot hold the hook relay's private socket directory. */
export class TempDirUnusable extends Schema.TaggedError<TempDirUnusable>()("TempDirUnusable", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `the temp dir ${this.path} cannot hold the hook relay's socket: ${this.reason}`
  }
}

/** The codex executable exists but does not answer `--version` as codex does (a wrong file, a broken install). */
export class CodexBinaryUnusable extends Schema.TaggedError<CodexBinaryUnusable>()("CodexBinaryUnusable", {
  command: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `${this.command} is not a usable codex binary: ${this.reason}`
  }
}

/** Every way building the Live layer can fail, each naming its cause. */
export type StartupError =
  | InvalidSettings
  | WorkspaceMissing
  | StateDirUnusable
  | TempDirUnusable
  | CodexBinaryNotFound
  | CodexBinaryUnusable
  | HookRelayServerError

/** Unix socket paths are limited to 108 bytes with the terminating NUL (Linux; macOS allows 104). */
export const maxSocketPathBytes = process.platform === "darwin" ? 103 : 107
/** how long `codex --version` may take */
export const versionTimeoutMs = 15_000

const decodeEither = Schema.decodeUnknownEither(SettingsSchema.HarnessSettings, { errors: "all", onExcessProperty: "error" })

/** The settings as the schema reads them; the app's own object is passed on unchanged when it decodes. */
export const decodeSettings = (input: unknown): Effect.Effect<HarnessSettings, InvalidSettings> => {
  const decoded = decodeEither(input)
  return decoded._tag === "Right"
    ? Effect.succeed(input as HarnessSettings)
    : Effect.fail(new InvalidSettings({ issues: ParseResult.ArrayFormatter.formatErrorSync(decoded.left).map(issueLine).join("; ") }))
}
const issueLine = (issue: ParseResult.ArrayFormatterIssue) =>
  `${issue.path.length === 0 ? "settings" : issue.path.join(".")}: ${issue.message}`

const statOf = (file: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.stat(file)).pipe(Effect.option)

/** The workspace must be an existing directory (not for a remote app-server: its workspace is on its machine). */
export const workspace = (cwd: string): Effect.Effect<void, WorkspaceMissing, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const info = yield* statOf(cwd)
    if (Option.isNone(info)) return yield* new WorkspaceMissing({ cwd, reason: "it does not exist" })
    if (info.value.type !== "Directory") return yield* new WorkspaceMissing({ cwd, reason: "it is not a directory" })
  })

/** Created privately when missing; then it must be this user's alone and writable. */
export const stateDir = (dir: string): Effect.Effect<void, StateDirUnusable, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const unusable = (reason: string) => new StateDirUnusable({ path: dir, reason })
    yield* ensureDir(dir).pipe(
      Effect.mapError((e) => unusable(e._tag === "NotADirectory" ? `${e.dir} is not a directory` : describeFileError(e)))
    )
    yield* checkPrivate("state dir", dir).pipe(Effect.mapError((e) => unusable(`${e.problem}; ${e.fix}`)))
    yield* fs.access(dir, { readable: true, writable: true }).pipe(Effect.mapError((e) => unusable(describeFileError(e))))
  })

/**
 * The relay's directory is made in `parent` (mode 0700, removed at the end): the parent must be a writable directory,
 * one that others may write only with the sticky bit (as /tmp has; without it another user could rename the relay's
 * directory away), and short enough for the socket path inside it.
 */
export const tempDir = (parent: string): Effect.Effect<void, TempDirUnusable, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const unusable = (reason: string) => new TempDirUnusable({ path: parent, reason })
    const info = yield* statOf(parent)
    if (Option.isNone(info)) return yield* unusable("it does not exist")
    if (info.value.type !== "Directory") return yield* unusable("it is not a directory")
    const mode = info.value.mode
    if ((mode & 0o002) !== 0 && (mode & 0o1000) === 0) {
      return yield* unusable(`others may write it and it has no sticky bit (mode ${(mode & 0o7777).toString(8)}); set TMPDIR to a private directory`)
    }
    yield* fs.access(parent, { writable: true }).pipe(Effect.mapError((e) => unusable(describeFileError(e))))
    // the longest the socket path gets: the pid's digits and mkdtemp's six characters in the directory's name
    const longest = path.join(path.resolve(parent), `${dirPrefix}${process.pid}-XXXXXX`, socketName)
    const bytes = Buffer.byteLength(longest)
    if (bytes > maxSocketPathBytes) {
      return yield* unusable(`the relay socket's path would be ${bytes} bytes, over the ${maxSocketPathBytes} a Unix socket allows; set TMPDIR to a shorter path`)
    }
  })

/** `codex --version`, bounded; its first line, or why it gave none. */
const versionOf = (codex: CodexCommand) =>
  Effect.async<string, CodexBinaryUnusable>((resume) => {
    // a bridge from Node's callback: execFile kills the child at the timeout and reports it as an error
    const child = execFile(
      codex.command,
      [...codex.prefixArgs, "--version"],
      { timeout: versionTimeoutMs, maxBuffer: 64 * 1024, windowsHide: true },
      (error, stdout) => {
        const line = String(stdout).split("\n")[0]?.trim() ?? ""
        if (error !== null) {
          const reason = error.killed === true ? `no answer to --version within ${versionTimeoutMs / 1000} s` : `--version failed: ${error.message.split("\n")[0]}`
          resume(Effect.fail(new CodexBinaryUnusable({ command: codex.command, reason })))
        } else resume(Effect.succeed(line))
      }
    )
    return Effect.sync(() => void child.kill("SIGKILL"))
  })

/**
 * Version lines this process already had from a binary, by the files that answered (command and wrapper script) and
 * their inode, size and modification time: a process that builds the harness's layers again and again (an embedding
 * app, serve, a test worker) asks each binary once instead of spawning `codex --version` every time; a binary replaced
 * or rebuilt in place differs in one of them and is asked again. Only answers that passed are kept, at most a few.
 */
const versionsSeen = new Map<string, string>()
const versionsSeenBound = 16

/** the identity of the files behind `codex`, or undefined when one cannot be read (then it is asked, as without a memo) */
const identityOf = (codex: CodexCommand): string | undefined => {
  try {
    return [codex.command, ...codex.prefixArgs.slice(0, 1)].map((file) => {
      const stat = nodeFs.statSync(file, { bigint: true })
      return `${file}\0${stat.ino}\0${stat.size}\0${stat.mtimeNs}`
    }).join("\0")
  } catch {
    return undefined
  }
}

/** The binary the settings name (or the installed package's) exists and, unless `probe` is false, says it is codex. */
export const codexBinary = (
  explicit: string | undefined,
  probe = true
): Effect.Effect<string, CodexBinaryNotFound | CodexBinaryUnusable, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const codex = yield* resolveCodex(explicit)
    if (!probe) return "(not asked)"
    const identity = yield* Effect.sync(() => identityOf(codex))
    const seen = identity === undefined ? undefined : versionsSeen.get(identity)
    if (seen !== undefined) return seen
    const version = yield* versionOf(codex)
    if (!/^codex(-cli)?\s+\d+\.\d+\.\d+/.test(version)) {
      return yield* new CodexBinaryUnusable({
        command: codex.command,
        reason: version === "" ? "--version printed nothing" : `--version answered "${version.slice(0, 80)}", not codex's version line`
      })
    }
    if (identity !== undefined) {
      if (versionsSeen.size >= versionsSeenBound) versionsSeen.clear()
      versionsSeen.set(identity, version)
    }
    return version
  })

/**
 * Every check, in the order a person would fix them. A remote app-server (`appServerUrl`) has its own workspace and
 * binary, so only the local parts are checked for it.
 */
export interface CheckOptions {
  /** where the hook relay's socket directory goes (`HookRelayConfig.socketParentDir`); default os.tmpdir() */
  readonly socketParentDir?: string | undefined
  /** false: the binary must exist, but is not run with `--version` (about 40 ms saved; the CLI's `doctor` asks) */
  readonly probeCodex?: boolean | undefined
}

export const check = (
  input: HarnessSettings,
  options: CheckOptions = {}
): Effect.Effect<HarnessSettings, Exclude<StartupError, HookRelayServerError>, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const settings = yield* decodeSettings(input)
    const remote = settings.appServerUrl !== undefined
    if (!remote) yield* workspace(path.resolve(settings.cwd))
    yield* stateDir(path.resolve(settings.stateDir))
    yield* tempDir(options.socketParentDir ?? os.tmpdir())
    if (!remote) {
      const version = yield* codexBinary(settings.codexBin, options.probeCodex ?? true)
      yield* HarnessLog.debug(`codex binary: ${version}`)
    }
    return settings
  }).pipe(Effect.withSpan("Startup.check"))

