// The file-backed session store: one JSONL file per session under `<stateDir>/sessions`, written as a journal that
// cannot lose a record. An append is one write of one whole line with O_APPEND, checked in full (a write that fails or is
// cut short fails the append, so the operation that wanted the record fails before anything is sent); bindings and model
// choices are fsynced. One process at a time writes a session (SessionLock); when it first takes a session it repairs
// what a crash left: a torn last line is moved to a `.torn` side file, pending prompts and open compactions are settled.
// A rewrite (a redaction, S40) is the one way a line changes: the whole file written aside, fsynced and renamed over.
import { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Duration, Effect, ExecutionStrategy, Exit, Layer, Option, RcMap, Scope } from "effect"
import * as path from "node:path"
import type { SessionRecord } from "../../schemas/session.js"
import { ensureDir, type NotADirectory } from "../platform/ensureDir.js"
import { describeFileError, isNotFound } from "../platform/fileErrors.js"
import { settlements, tornTail } from "./JournalRepair.js"
import * as SessionLock from "./SessionLock.js"
import {
  checkSessionId,
  type CorruptLine,
  durableTags,
  encodeRecord,
  maxRewriteBytes,
  parseLines,
  type RecordChange,
  RecordRewriteRefused,
  rewriteBody,
  SessionStore,
  SessionStoreError,
  type SessionStoreService
} from "./SessionStore.js"
import * as HarnessLog from "../platform/HarnessLog.js"

const newline = 0x0a
const encoder = new TextEncoder()

/** how long a session stays held after its last operation in this process ended */
export const heldIdleTimeToLive = Duration.seconds(5)

/** A session this process holds: its file open for appending, its size, and its records as the file has them. */
interface HeldJournal {
  readonly file: string
  /** the open file, in a scope of its own: a rewrite replaces the file, and with it the handle and that scope */
  handle: FileSystem.File
  handleScope: Scope.CloseableScope
  /** the scope of the hold, which a rewrite's new handle scope is forked from */
  readonly holdScope: Scope.Scope
  size: number
  readonly records: Array<SessionRecord>
  readonly corrupt: ReadonlyArray<CorruptLine>
  readonly lock: Effect.Semaphore
}

/**
 * Writes one whole line at the end of the file. An append that fails part-way (a full disk) is cut back to where it
 * began: the operation fails and nothing of it was sent, so there is nothing to keep; should the cut fail too, the next
 * open moves the fragment aside as a torn tail.
 */
const appendLine = (handle: FileSystem.File, size: number, line: string | Uint8Array) =>
  handle.writeAll(typeof line === "string" ? encoder.encode(line) : line).pipe(
    Effect.tapError(() => handle.truncate(size).pipe(Effect.ignore))
  )

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

    // An append to a session this process does not hold (a reader without the lock): the file is opened for it, and
    // a last line that is still torn gets a newline first, so the new record never glues onto the fragment.
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
        yield* appendLine(handle, size, `${torn ? "\n" : ""}${encodeRecord(record)}\n`)
        if (durableTags.has(record._tag)) yield* handle.sync
      }).pipe(Effect.scoped, Effect.mapError(fail(file)))

    const read = (file: string) =>
      fs.readFileString(file).pipe(
        Effect.catchIf(isNotFound, () => Effect.succeed("")),
        Effect.mapError(fail(file)),
        Effect.map(parseLines)
      )

    /** Under the lock: a torn tail moved to `<file>.torn`, then what the crash left open settled; the records after. */
    const repair = (sessionId: string, file: string) =>
      Effect.gen(function* () {
        const bytes = yield* fs.readFile(file).pipe(Effect.catchIf(isNotFound, () => Effect.succeed(new Uint8Array(0))))
        const torn = tornTail(bytes)
        if (torn !== undefined) {
          const side = `${file}.torn`
          yield* fs.writeFile(side, torn.fragment, { flag: "a", mode: 0o600 })
          yield* fs.truncate(file, torn.keep)
          yield* HarnessLog.warning(`session ${sessionId}: its last record was torn (${torn.fragment.length} bytes); moved to ${side}`)
        }
        const contents = parseLines(new TextDecoder().decode(torn === undefined ? bytes : bytes.subarray(0, torn.keep)))
        const settled = settlements(contents.records, new Date().toISOString())
        for (const record of settled) yield* write(file, record)
        return { records: [...contents.records, ...settled], corrupt: contents.corrupt }
      }).pipe(Effect.mapError((e) => (e._tag === "SessionStoreError" ? e : fail(file)(e))))

    // The sessions this process holds, each with its file open for appending and its records in memory: while the lock
    // is ours nobody else writes the file, so what we appended is all there is, and a turn neither reopens the file
    // nor reads it again. The file stays the source of truth: the records are read from it when the session is taken.
    const held = new Map<string, HeldJournal>()

    // One lock per session in this process, shared by its operations; the first lease takes it and repairs the file.
    // It is kept a little while after the last operation lets go, so back-to-back turns of an embedding process do not
    // take, repair, read and give up the session every time; the process's end (its scope) lets go of it at once.
    const locks = yield* RcMap.make({
      idleTimeToLive: heldIdleTimeToLive,
      lookup: (sessionId: string) =>
        Effect.gen(function* () {
          yield* ready.pipe(Effect.mapError(fail(dir)))
          const file = locate(sessionId)
          yield* SessionLock.hold(fs, sessionId, SessionLock.lockFileOf(file))
          const contents = yield* repair(sessionId, file)
          const holdScope = yield* Effect.scope
          const handleScope = yield* Scope.fork(holdScope, ExecutionStrategy.sequential)
          const handle = yield* fs.open(file, { flag: "a", mode: 0o600 }).pipe(Scope.extend(handleScope), Effect.mapError(fail(file)))
          const size = Number((yield* handle.stat.pipe(Effect.mapError(fail(file)))).size)
          const journal: HeldJournal = {
            file,
            handle,
            handleScope,
            holdScope,
            size,
            records: contents.records,
            corrupt: contents.corrupt,
            lock: yield* Effect.makeSemaphore(1)
          }
          held.set(sessionId, journal)
          yield* Effect.addFinalizer(() => Effect.sync(() => held.delete(sessionId)))
        })
    })

    const appendHeld = (sessionId: string, journal: HeldJournal, record: SessionRecord) =>
      journal.lock.withPermits(1)(
        Effect.gen(function* () {
          const line = encoder.encode(`${encodeRecord(record)}\n`)
          yield* appendLine(journal.handle, journal.size, line).pipe(
            // after a failed append (cut back, or if the cut failed too, a fragment the next open repairs) this process
            // stops trusting its copy: later appends take the path that checks the file's end, reads go to the file
            Effect.tapError(() => Effect.sync(() => held.delete(sessionId)))
          )
          journal.size += line.length
          if (durableTags.has(record._tag)) yield* journal.handle.sync
          journal.records.push(record)
        })
      ).pipe(Effect.mapError(fail(journal.file)))

    /**
     * Under the lock (and the journal's own, so no append interleaves): the file with `change` applied, written to a
     * temp file beside it (0600), fsynced and renamed over it, so a crash or a failed write leaves the old file whole.
     * The temp file is opened for appending, so once renamed it is the held journal's new handle.
     */
    const replace = (sessionId: string, file: string, change: RecordChange, journal: HeldJournal | undefined) =>
      Effect.gen(function* () {
        const info = yield* fs.stat(file).pipe(Effect.map(Option.some), Effect.catchIf(isNotFound, () => Effect.succeedNone), Effect.mapError(fail(file)))
        if (Option.isNone(info)) return 0
        if (Number(info.value.size) > maxRewriteBytes) {
          return yield* new SessionStoreError({ path: file, reason: `it is larger than ${maxRewriteBytes / 1024 / 1024} MiB, too large to rewrite` })
        }
        const next = rewriteBody(yield* fs.readFileString(file).pipe(Effect.mapError(fail(file))), change)
        if ("refused" in next) return yield* new RecordRewriteRefused({ sessionId, reason: next.refused })
        if (next.changed === 0) return 0
        const bytes = encoder.encode(next.body)
        const temp = `${file}.rewrite`
        // a temp file left by a rewrite that crashed: nobody else writes it while the lock is ours
        yield* fs.remove(temp, { force: true }).pipe(Effect.mapError(fail(temp)))
        const scope = yield* Scope.fork(journal?.holdScope ?? (yield* Effect.scope), ExecutionStrategy.sequential)
        const handle = yield* Effect.gen(function* () {
          const handle = yield* fs.open(temp, { flag: "ax", mode: 0o600 }).pipe(Scope.extend(scope))
          yield* handle.writeAll(bytes)
          yield* handle.sync
          yield* fs.rename(temp, file)
          return handle
        }).pipe(
          Effect.mapError(fail(temp)),
          Effect.tapError(() => Scope.close(scope, Exit.void).pipe(Effect.zipRight(fs.remove(temp, { force: true })), Effect.ignore))
        )
        // the rename itself made durable (best effort: not every file system syncs a directory)
        yield* Effect.scoped(Effect.flatMap(fs.open(path.dirname(file), { flag: "r" }), (dir) => dir.sync)).pipe(Effect.ignore)
        if (journal !== undefined) {
          const old = journal.handleScope
          journal.handle = handle
          journal.handleScope = scope
          journal.size = bytes.length
          journal.records.splice(0, journal.records.length, ...parseLines(next.body).records)
          yield* Scope.close(old, Exit.void)
        } else {
          yield* Scope.close(scope, Exit.void)
        }
        return next.changed
      })

    // a rewrite takes the session like any writer (refused while another process holds it), then waits for the
    // journal's appends in this process; after a failed append (no journal) the file is the only copy there is
    const rewrite = (sessionId: string, change: RecordChange) =>
      Effect.scoped(
        Effect.gen(function* () {
          yield* RcMap.get(locks, sessionId)
          const file = locate(sessionId)
          const journal = held.get(sessionId)
          const run = replace(sessionId, file, change, journal)
          return yield* journal !== undefined ? journal.lock.withPermits(1)(run) : run
        })
      )

    return {
      locate,
      rewrite: (sessionId, change) => checkSessionId(sessionId).pipe(Effect.flatMap((id) => rewrite(id, change))),
      hold: (sessionId) => checkSessionId(sessionId).pipe(Effect.flatMap((id) => RcMap.get(locks, id)), Effect.asVoid),
      release: (sessionId) => RcMap.invalidate(locks, sessionId),
      append: (sessionId, record) =>
        checkSessionId(sessionId).pipe(
          Effect.flatMap((id) => {
            const journal = held.get(id)
            return journal !== undefined ? appendHeld(id, journal, record) : write(locate(id), record)
          })
        ),
      read: (sessionId) =>
        checkSessionId(sessionId).pipe(
          Effect.flatMap((id) => {
            const journal = held.get(id)
            return journal !== undefined
              ? Effect.succeed({ records: journal.records.slice(), corrupt: journal.corrupt })
              : read(locate(id))
          })
        ),
      // A reference that is a whole id costs one stat, not a listing: a serve resolves its client's session on every
      // message, and listing stats every session of the state dir. A prefix lists the names and stats those it starts.
      lookup: (ref, limit) =>
        Effect.gen(function* () {
          if (held.has(ref)) return { ids: [ref], matches: 1 }
          const fileOf = (id: string) => path.join(dir, `${id}.jsonl`)
          const exact = yield* fs.stat(fileOf(ref)).pipe(Effect.map((info) => info.type === "File"), Effect.orElseSucceed(() => false))
          if (exact) return { ids: [ref], matches: 1 }
          const names = yield* fs.readDirectory(dir).pipe(Effect.catchIf(isNotFound, () => Effect.succeed([] as Array<string>)))
          const candidates = names.filter((name) => name.endsWith(".jsonl") && name.startsWith(ref)).map((name) => name.slice(0, -".jsonl".length))
          const dated = yield* Effect.forEach(
            candidates,
            (id) =>
              fs.stat(fileOf(id)).pipe(
                Effect.map((info) => (info.type === "File" ? [{ id, at: Option.getOrElse(info.mtime, () => new Date(0)).getTime() }] : [])),
                Effect.orElseSucceed(() => [])
              ),
            { concurrency: 8 }
          )
          const ids = dated.flat().sort((a, b) => b.at - a.at).map((c) => c.id)
          return { ids: ids.slice(0, limit), matches: ids.length }
        }).pipe(Effect.mapError(fail(dir))),
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
                  : Effect.as(HarnessLog.warning(`skipped ${path.join(dir, name)}: not a session file (${info.type})`), [])
              ),
              Effect.catchAll((e) => Effect.as(HarnessLog.warning(`skipped ${path.join(dir, name)}: ${describeFileError(e)}`), []))
            ),
          { concurrency: 8 }
        )
        return sessions.flat().sort((a, b) => b.updatedAt.getTime() - a.updatedAt.getTime())
      }).pipe(Effect.mapError(fail(dir)))
    } satisfies SessionStoreService
  })


export const fileLayer = (stateDir: string): Layer.Layer<SessionStore, never, FileSystem.FileSystem> =>
  Layer.scoped(SessionStore, fileStore(stateDir))
