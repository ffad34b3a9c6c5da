// The file-backed session store: one JSONL file per session under `<stateDir>/sessions`, written as a journal that
// cannot lose a record. An append is one write of one whole line with O_APPEND, checked in full (a write that fails or is
// cut short fails the append, so the operation that wanted the record fails before anything is sent); bindings and model
// choices are fsynced. One process at a time writes a session (SessionLock); when it first takes a session it repairs
// what a crash left: a torn last line is moved to a `.torn` side file, pending prompts and open compactions are settled.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Effect, Layer, Option, RcMap, type Scope } from "effect"
import * as path from "node:path"
import type { SessionRecord } from "../../schemas/session.js"
import { ensureDir, type NotADirectory } from "../platform/ensureDir.js"
import { describeFileError, isNotFound } from "../platform/fileErrors.js"
import { settlements, tornTail } from "./JournalRepair.js"
import * as SessionLock from "./SessionLock.js"
import {
  checkSessionId,
  durableTags,
  encodeRecord,
  parseLines,
  SessionStore,
  SessionStoreError,
  type SessionStoreService
} from "./SessionStore.js"

const newline = 0x0a
const encoder = new TextEncoder()

export const fileStore = (stateDir: string): Effect.Effect<SessionStoreService, never, FileSystem.FileSystem | Scope.Scope> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = path.join(stateDir, "sessions")
    let dirReady = false
    const locate = (sessionId: string) => path.join(dir, `${sessionId}.jsonl`)
    const ready = Effect.suspend(() =>
      dirReady ? Effect.void : ensureDir(dir).pipe(Effect.provideService(FileSystem.FileSystem, fs), Effect.tap(() => (dirReady = true)))
    )
    const fail = (file: string) => (e: PlatformError | NotADirectory) =>
      new SessionStoreError({ path: file, reason: e._tag === "NotADirectory" ? e.message : describeFileError(e) })

    // A file whose last line is still torn when a record is appended (it was not repaired: a reader without the lock)
    // gets a newline first, so the new record never glues onto the fragment. An append that fails part-way (a full
    // disk) is cut back to where it began: the operation fails and nothing of it was sent, so there is nothing to keep;
    // should the cut fail too, the next open moves the fragment aside as a torn tail.
    const write = (file: string, record: SessionRecord) =>
      Effect.gen(function* () {
        yield* ready
        const handle = yield* fs.open(file, { flag: "a+", mode: 0o600 })
        const size = Number((yield* handle.stat).size)
        let torn = false
        if (size > 0) {
          const last = new Uint8Array(1)
          yield* handle.seek(size - 1, "start")
          torn = Number(yield* handle.read(last)) === 1 && last[0] !== newline
        }
        yield* handle.writeAll(encoder.encode(`${torn ? "\n" : ""}${encodeRecord(record)}\n`)).pipe(
          Effect.tapError(() => handle.truncate(size).pipe(Effect.ignore))
        )
        // bindings and model choices are what a restart needs to find its thread: on disk before we go on
        if (durableTags.has(record._tag)) yield* handle.sync
      }).pipe(Effect.scoped, Effect.mapError(fail(file)))

    const read = (file: string) =>
      fs.readFileString(file).pipe(
        Effect.catchIf(isNotFound, () => Effect.succeed("")),
        Effect.mapError(fail(file)),
        Effect.map(parseLines)
      )

    /** Under the lock: a torn tail moved to `<file>.torn`, then what the crash left open settled. */
    const repair = (sessionId: string, file: string) =>
      Effect.gen(function* () {
        const bytes = yield* fs.readFile(file).pipe(Effect.catchIf(isNotFound, () => Effect.succeed(new Uint8Array(0))))
        const torn = tornTail(bytes)
        if (torn !== undefined) {
          const side = `${file}.torn`
          yield* fs.writeFile(side, torn.fragment, { flag: "a", mode: 0o600 })
          yield* fs.truncate(file, torn.keep)
          yield* Effect.logWarning(`session ${sessionId}: its last record was torn (${torn.fragment.length} bytes); moved to ${side}`)
        }
        const { records } = yield* read(file)
        for (const record of settlements(records, new Date().toISOString())) yield* write(file, record)
      }).pipe(Effect.mapError((e) => (e._tag === "SessionStoreError" ? e : fail(file)(e))))

    // one lock per session in this process, shared by its operations; the first lease takes it and repairs the file
    const locks = yield* RcMap.make({
      lookup: (sessionId: string) =>
        Effect.gen(function* () {
          yield* ready.pipe(Effect.mapError(fail(dir)))
          const file = locate(sessionId)
          yield* SessionLock.hold(fs, sessionId, `${file.slice(0, -".jsonl".length)}.lock`)
          yield* repair(sessionId, file)
        })
    })

    return {
      locate,
      hold: (sessionId) => checkSessionId(sessionId).pipe(Effect.flatMap((id) => RcMap.get(locks, id)), Effect.asVoid),
      append: (sessionId, record) => checkSessionId(sessionId).pipe(Effect.flatMap((id) => write(locate(id), record))),
      read: (sessionId) => checkSessionId(sessionId).pipe(Effect.flatMap((id) => read(locate(id)))),
      list: Effect.gen(function* () {
        const names = yield* fs.readDirectory(dir).pipe(Effect.catchIf(isNotFound, () => Effect.succeed([] as Array<string>)))
        // one entry that cannot be read (a dangling link, a directory) is skipped with a warning, never the whole list
        const sessions = yield* Effect.forEach(
          names.filter((name) => name.endsWith(".jsonl")),
          (name) =>
            fs.stat(path.join(dir, name)).pipe(
              Effect.flatMap((info) =>
                info.type === "File"
                  ? Effect.succeed([{ sessionId: name.slice(0, -".jsonl".length), updatedAt: Option.getOrElse(info.mtime, () => new Date(0)) }])
                  : Effect.as(Effect.logWarning(`skipped ${path.join(dir, name)}: not a session file (${info.type})`), [])
              ),
              Effect.catchAll((e) => Effect.as(Effect.logWarning(`skipped ${path.join(dir, name)}: ${describeFileError(e)}`), []))
            ),
          { concurrency: 8 }
        )
        return sessions.flat().sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime())
      }).pipe(Effect.mapError(fail(dir)))
    } satisfies SessionStoreService
  })


export const fileLayer = (stateDir: string): Layer.Layer<SessionStore, never, FileSystem.FileSystem> =>
  Layer.scoped(SessionStore, fileStore(stateDir))
