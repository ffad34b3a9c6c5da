// `sessions repair`: a session file without its undecodable lines. The file as it was is kept beside it first
// (`<id>.jsonl.bak`, replaced by a later repair), and the new one is written aside and renamed into place, so a crash
// at any point leaves either the old file or the new one, never half of one. All of it under the session's lock
// (SessionLock.ts): a chat or run on the session refuses to start meanwhile, and a running one makes this refuse,
// so no append lands in the old file after it was read.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Effect } from "effect"
import { describeFileError } from "../platform/fileErrors.js"
import * as SessionLock from "./SessionLock.js"
import { type CorruptLine, parseLines, SessionStoreError } from "./SessionStore.js"

export interface Repaired {
  readonly file: string
  /** the lines left out, by their number in the old file */
  readonly removed: ReadonlyArray<CorruptLine>
  /** where the old file was kept; undefined when nothing needed removing (and nothing was written) */
  readonly backup: string | undefined
}

/** Repairs the session file `file` (`<dir>/<id>.jsonl`) of `sessionId`, holding its lock `<dir>/<id>.lock`. */
export const repair = (fs: FileSystem.FileSystem, sessionId: string, file: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const failed = (path: string) => (e: PlatformError) => new SessionStoreError({ path, reason: describeFileError(e) })
      yield* SessionLock.hold(fs, sessionId, SessionLock.lockFileOf(file))
      const body = yield* fs.readFileString(file).pipe(Effect.mapError(failed(file)))
      const { corrupt } = parseLines(body)
      if (corrupt.length === 0) return { file, removed: [], backup: undefined } satisfies Repaired
      const bad = new Set(corrupt.map((c) => c.line))
      // every other line kept byte for byte (a record this version cannot read is not this command's to drop)
      const kept = body.split("\n").filter((line, i) => !bad.has(i + 1) && line.trim() !== "")
      const backup = `${file}.bak`
      const next = `${file}.repair`
      yield* fs.writeFileString(backup, body, { mode: 0o600 }).pipe(Effect.mapError(failed(backup)))
      yield* fs.writeFileString(next, kept.map((line) => `${line}\n`).join(""), { mode: 0o600 }).pipe(Effect.mapError(failed(next)))
      yield* fs.rename(next, file).pipe(Effect.mapError(failed(file)))
      return { file, removed: corrupt, backup } satisfies Repaired
    })
  )
