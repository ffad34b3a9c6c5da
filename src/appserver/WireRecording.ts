// The file format of a wire recording (`codex-harness run --record FILE`, WireRecorder.ts), shared by the recorder and
// the MockAppServer's replay: JSON lines, a header, then one entry per JSON-RPC message in either direction (or per
// line that was not one), each with its connection (the n-th app-server the harness started) and the milliseconds
// since the recording began. What a message may carry that is secret is masked before it is written (Redaction.ts);
// the directories that differ between two runs of the same conversation (the workspace, the state dir, CODEX_HOME,
// the temp dir, the home dir) are written as placeholders (`{{cwd}}`), so a replay in other directories compares and
// answers with its own. Pure, but for `read`.
import { FileSystem } from "@effect/platform"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describeFileError } from "../platform/fileErrors.js"
import { answeredByPeople, maskStrings, redactString, redactWireValue, scrubValues, secretValues } from "./Redaction.js"
import type { TransportOptions } from "./Transport.js"

export const formatName = "codex-harness wire recording"
export const formatVersion = 1

/** who wrote the message: the harness (to the app-server) or the app-server (to the harness) */
export const From = Schema.Literal("harness", "app-server")
export type From = typeof From.Type

const at = { t: Schema.Number, conn: Schema.Int }

/** a JSON-RPC message (a JSON object): request, notification, result or error, in either direction */
export const MessageEntry = Schema.Struct({
  ...at,
  from: From,
  message: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
/** a line that was not a JSON object, as text */
export const LineEntry = Schema.Struct({ ...at, from: From, line: Schema.String })
/** a line from the app-server over the size bound, dropped unread */
export const OversizedEntry = Schema.Struct({ ...at, from: Schema.Literal("app-server"), oversized: Schema.Number })
/** the harness closed its side (ended the input, or released the app-server) */
export const CloseEntry = Schema.Struct({ ...at, from: Schema.Literal("harness"), event: Schema.Literal("close") })
/** the app-server's process ended (or its WebSocket closed) */
export const ExitEntry = Schema.Struct({
  ...at,
  from: Schema.Literal("app-server"),
  event: Schema.Literal("exit"),
  exitCode: Schema.NullOr(Schema.Number),
  signal: Schema.NullOr(Schema.String)
})
export const Entry = Schema.Union(MessageEntry, LineEntry, OversizedEntry, CloseEntry, ExitEntry)
export type Entry = typeof Entry.Type
export type MessageEntry = typeof MessageEntry.Type

export const Header = Schema.Struct({
  format: Schema.Literal(formatName),
  version: Schema.Literal(formatVersion),
  recordedAt: Schema.String
})
export type Header = typeof Header.Type

export interface Recording {
  readonly header: Header
  readonly entries: ReadonlyArray<Entry>
}

// ---------------------------------------------------------------------------------------------------------------
// directories as placeholders

/**
 * The paths written as placeholders, by name: the harness's workspace and state dir (given by who records or replays),
 * the app-server's CODEX_HOME (from its spawn), this package's directory and the node executable (in the hook relay's
 * command line), the OS temp and home dirs.
 */
export interface Roots {
  readonly cwd?: string | undefined
  readonly stateDir?: string | undefined
  readonly codexHome?: string | undefined
  readonly package?: string | undefined
  readonly node?: string | undefined
  readonly tmp?: string | undefined
  readonly home?: string | undefined
}

export const rootNames = ["cwd", "stateDir", "codexHome", "package", "node", "tmp", "home"] as const
export type RootName = (typeof rootNames)[number]

export const placeholder = (name: RootName) => `{{${name}}}`
/** a placeholder anywhere in a string; group 1 is its name */
export const placeholderPattern = new RegExp(`\\{\\{(${rootNames.join("|")})\\}\\}`, "g")

/** this package's directory: the nearest one above this module with `bin/codex-harness.js` (src/, dist/ or a bundle) */
const packageDir = (() => {
  let found: string | undefined
  return () => {
    if (found !== undefined) return found
    let dir = path.dirname(fileURLToPath(import.meta.url))
    for (let i = 0; i < 6 && found === undefined; i++) {
      if (fs.existsSync(path.join(dir, "bin", "codex-harness.js"))) found = dir
      dir = path.dirname(dir)
    }
    found ??= ""
    return found
  }
})()

/** the roots of one app-server: the harness's own (`base`), that spawn's CODEX_HOME, and this machine's */
export const rootsFor = (base: Roots, options: TransportOptions): Roots => ({
  tmp: os.tmpdir(),
  home: os.homedir(),
  node: process.execPath,
  package: packageDir(),
  ...base,
  ...(options.codexHome !== undefined ? { codexHome: options.codexHome } : {})
})

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** A string with every root path (longest first, and only where a path component ends) replaced by its placeholder. */
export const toPlaceholders = (roots: Roots): ((text: string) => string) => {
  const known = rootNames
    .flatMap((name) => {
      const value = roots[name]
      // `/` or an empty root would swallow every path
      return value !== undefined && value.length > 1 ? [{ name, value: value.replace(/\/+$/, "") }] : []
    })
    .sort((a, b) => b.value.length - a.value.length)
  if (known.length === 0) return (text) => text
  const pattern = new RegExp(`(?<![A-Za-z0-9._~-])(?:${known.map((k) => escapeRegExp(k.value)).join("|")})(?![A-Za-z0-9._~-])`, "g")
  // two names for one path (a workspace that is the package itself): the first in `rootNames` order
  const byValue = new Map<string, string>()
  for (const k of known) if (!byValue.has(k.value)) byValue.set(k.value, placeholder(k.name))
  return (text) => text.replace(pattern, (found) => byValue.get(found) ?? found)
}

// ---------------------------------------------------------------------------------------------------------------
// what is kept of a message

/**
 * The secret values an app-server of these options could see or echo: the environment it gets on top of the harness's
 * (the provider key), the variables kept from its agent (`hiddenEnv`), and every variable of the harness's own
 * environment whose name looks secret. The provider key's placeholder is no secret.
 */
export const secretsFor = (options: TransportOptions, env: Readonly<Record<string, string | undefined>> = process.env) => [
  ...new Set([
    ...Object.values(options.env ?? {}).filter((value) => value.length >= 6 && value !== "codex-harness-local"),
    ...secretValues(env, [...(options.hiddenEnv ?? []), ...(options.tokenEnv !== undefined ? [options.tokenEnv] : [])])
  ])
]

/** Walks a JSON value, applying `f` to every string (keys are left alone). */
export const mapStrings = (value: unknown, f: (text: string) => string): unknown => {
  if (typeof value === "string") return f(value)
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f))
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, mapStrings(v, f)]))
  }
  return value
}

export type EntryBody = { readonly message: Record<string, unknown> } | { readonly line: string }

/** What a recording keeps of what goes over one connection: made once per connection, used for every line. */
export interface Keeper {
  /** a message: secrets masked (by key, by shape, by value), then directories as placeholders */
  readonly message: (message: Record<string, unknown>) => Record<string, unknown>
  /** a line that is not a JSON object, the same way */
  readonly line: (line: string) => string
  /**
   * a line of the traffic as an entry's body: the message when it is a JSON object, else the text; the harness's
   * replies to requests that people answer (Redaction.answeredByPeople) keep their shape but none of their strings
   */
  readonly entryBody: (line: string, from?: From) => EntryBody
}

export const keeper = (secrets: ReadonlyArray<string>, roots: Roots): Keeper => {
  const places = toPlaceholders(roots)
  const keepString = (text: string) => places(scrubValues(text, secrets))
  const message = (m: Record<string, unknown>) => mapStrings(redactWireValue(m), keepString) as Record<string, unknown>
  const line = (text: string) => keepString(redactString(text))
  // ids of the app-server's requests that people answer, until the harness replies (bounded by what the server asks)
  const awaitingAnswers = new Set<unknown>()
  const withheldAnswers = (m: Record<string, unknown>, from: From | undefined): Record<string, unknown> => {
    if (from === "app-server") {
      if (typeof m.method === "string" && m.id !== undefined && answeredByPeople.has(m.method)) awaitingAnswers.add(m.id)
      return m
    }
    if (from !== "harness" || !awaitingAnswers.delete(m.id) || !("result" in m)) return m
    return { ...m, result: maskStrings(m.result) }
  }
  const entryBody = (text: string, from?: From): EntryBody => {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return { line: line(text) }
    }
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? { message: message(withheldAnswers(parsed as Record<string, unknown>, from)) }
      : { line: line(text) }
  }
  return { message, line, entryBody }
}

export const headerLine = (recordedAt: string): string =>
  JSON.stringify({ format: formatName, version: formatVersion, recordedAt } satisfies Header)

// ---------------------------------------------------------------------------------------------------------------
// reading

export class RecordingUnreadable extends Schema.TaggedError<RecordingUnreadable>()("RecordingUnreadable", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot replay ${this.file}: ${this.reason}`
  }
}

const decodeHeader = Schema.decodeUnknownEither(Header)
const decodeEntry = Schema.decodeUnknownEither(Entry)

/** A recording from its text; `file` names it in errors. */
export const parse = (text: string, file: string): Effect.Effect<Recording, RecordingUnreadable> =>
  Effect.suspend(() => {
    const lines = text.split("\n").filter((line) => line.trim() !== "")
    const fail = (n: number, reason: string) => Effect.fail(new RecordingUnreadable({ file, reason: `line ${n}: ${reason}` }))
    const json = (line: string): unknown => {
      try {
        return JSON.parse(line)
      } catch {
        return undefined
      }
    }
    if (lines.length === 0) return Effect.fail(new RecordingUnreadable({ file, reason: "it is empty" }))
    const header = decodeHeader(json(lines[0]!))
    if (header._tag === "Left") return fail(1, `not a ${formatName} of version ${formatVersion}`)
    const entries: Array<Entry> = []
    for (let i = 1; i < lines.length; i++) {
      const entry = decodeEntry(json(lines[i]!))
      if (entry._tag === "Left") return fail(i + 1, "not an entry of the recording")
      entries.push(entry.right)
    }
    return Effect.succeed({ header: header.right, entries })
  })

/** Reads and checks a recording file. */
export const read = (file: string): Effect.Effect<Recording, RecordingUnreadable, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    fs.readFileString(file).pipe(
      Effect.mapError((e) => new RecordingUnreadable({ file, reason: describeFileError(e) })),
      Effect.flatMap((text) => parse(text, file))
    ))
