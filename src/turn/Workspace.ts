// Reads the workspace files a turn's instructions use (AGENTS.md, MEMORY.md, BOOTSTRAP.md and the profile files),
// each with its byte bound applied at read time, through the platform FileSystem. A missing, unreadable or blank file
// is simply absent: reading the workspace never fails a turn.
import { FileSystem } from "@effect/platform"
import { Effect, Option } from "effect"
import * as path from "node:path"
import {
  AGENTS_MD_MAX_BYTES,
  BOOTSTRAP_MD_MAX_BYTES,
  MEMORY_MD_MAX_BYTES,
  PROFILE_FILE_MAX_BYTES,
  PROFILE_FILE_NAMES,
  truncateUtf8Bytes,
  type Workspace,
  type WorkspaceFile
} from "./Instructions.js"
import * as HarnessLog from "../platform/HarnessLog.js"

const present = (text: string | undefined): text is string => text !== undefined && text.trim() !== ""

/**
 * Reads at most `maxBytes + 1` bytes of a file and returns it truncated to `maxBytes` (whole characters, with the
 * marker line). Missing, unreadable or blank files give undefined.
 */
export const readBounded = (file: string, maxBytes: number): Effect.Effect<string | undefined, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const handle = yield* fs.open(file, { flag: "r" })
    const buffer = new Uint8Array(maxBytes + 1)
    let filled = 0
    while (filled < buffer.length) {
      const read = Number(yield* handle.read(buffer.subarray(filled)))
      if (read === 0) break
      filled += read
    }
    // past the bound the size only feeds the marker; stat it instead of reading on
    const total = filled > maxBytes ? Math.max(Number((yield* handle.stat).size), filled) : filled
    return truncateUtf8Bytes(buffer.subarray(0, filled), total, maxBytes)
  }).pipe(
    Effect.scoped,
    Effect.map((text) => (present(text) ? text : undefined)),
    Effect.catchAll((error) =>
      error._tag === "SystemError" && error.reason === "NotFound"
        ? Effect.succeed(undefined)
        : HarnessLog.warning(`cannot read workspace file ${file}: ${error.message}`).pipe(Effect.as(undefined))
    )
  )

/** Every file `readWorkspace` reads, by name (a function: Instructions and this module import each other). */
export const workspaceFileNames = (): ReadonlyArray<string> => ["AGENTS.md", "MEMORY.md", "BOOTSTRAP.md", ...PROFILE_FILE_NAMES]

/**
 * What these files of `dir` are now, as text to compare: each present one's modification time, size and inode. The
 * same text means `readWorkspace` would read the same, so what was built from it can be used again. One directory
 * listing finds the present ones, so a missing file costs nothing (a failed stat would build an error each time).
 */
export const fileSignature = (dir: string, names: ReadonlyArray<string>): Effect.Effect<string, never, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    fs.readDirectory(dir).pipe(
      Effect.orElseSucceed((): ReadonlyArray<string> => []),
      Effect.flatMap((entries) => {
        const present = new Set(entries)
        return Effect.forEach(names.filter((name) => present.has(name)), (name) =>
          fs.stat(path.join(dir, name)).pipe(
            Effect.map((info) =>
              `${name}:${Option.getOrElse(Option.map(info.mtime, (d) => d.getTime()), () => 0)}:${info.size}:${Option.getOrElse(info.ino, () => 0)}`
            ),
            Effect.orElseSucceed(() => `${name}:?`)
          ))
      }),
      Effect.map((parts) => parts.join("|"))
    )
  )

/** The workspace files of a directory; missing or blank ones are absent. */
export const readWorkspace = (dir: string): Effect.Effect<Workspace, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const read = (name: string, maxBytes: number) => readBounded(path.join(dir, name), maxBytes)
    const [agentsMd, memoryMd, bootstrapMd, profiles] = yield* Effect.all(
      [
        read("AGENTS.md", AGENTS_MD_MAX_BYTES),
        read("MEMORY.md", MEMORY_MD_MAX_BYTES),
        read("BOOTSTRAP.md", BOOTSTRAP_MD_MAX_BYTES),
        Effect.forEach(PROFILE_FILE_NAMES, (name) =>
          read(name, PROFILE_FILE_MAX_BYTES).pipe(Effect.map((content) => ({ name, content }))), { concurrency: 4 })
      ],
      { concurrency: 4 }
    )
    const profileFiles = profiles.flatMap((f): Array<WorkspaceFile> =>
      f.content === undefined ? [] : [{ name: f.name, content: f.content }]
    )
    return {
      ...(agentsMd !== undefined ? { agentsMd } : {}),
      ...(memoryMd !== undefined ? { memoryMd } : {}),
      ...(bootstrapMd !== undefined ? { bootstrapMd } : {}),
      ...(profileFiles.length > 0 ? { profileFiles } : {})
    }
  })

/** A small text file (the heartbeat monitor's cron scratch), or undefined when it is missing, unreadable or blank. */
export const readOptional = (file: string | undefined, maxBytes: number): Effect.Effect<string | undefined, never, FileSystem.FileSystem> =>
  file === undefined ? Effect.succeed(undefined) : readBounded(file, maxBytes)

