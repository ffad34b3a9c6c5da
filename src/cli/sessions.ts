// `codex-harness sessions list|show|delete|repair|redact ID`: the sessions under the state dir, their bindings and
// transcripts.
// Loaded when one of them runs; their flags are in commands/sessions.ts. `show` and `delete` take a session by its id
// or a unique prefix of it (sessionRef.ts); `list` prints the table of sessionTable.ts.
import { FileSystem } from "@effect/platform"
import { Console, Effect, Option } from "effect"
import type { SessionRecord } from "../../schemas/session.js"
import { describeFileError, isNotFound } from "../platform/fileErrors.js"
import { fileStore } from "../session/FileSessionStore.js"
import * as SessionLock from "../session/SessionLock.js"
import * as SessionRepair from "../session/SessionRepair.js"
import { corruptWarning, SessionStoreError } from "../session/SessionStore.js"
import { sessionState } from "../session/SessionState.js"
import { redaction, type RedactTarget } from "../session/TranscriptMirror.js"
import { checkDeletable } from "../supervision/SessionGuard.js"
import type { DeleteOptions, ListOptions, RedactOptions, RepairOptions, ShowOptions } from "./commands/sessions.js"
import { terminalText } from "../platform/terminalText.js"
import * as Connect from "./connect.js"
import { UsageError } from "./errors.js"
import { resolveIn } from "./sessionRef.js"
import { oneLine, renderTable, rowOf, type SessionRow } from "../session/SessionTable.js"
import { stateDirOf } from "./settings.js"

const storeFor = (stateDir: Option.Option<string>) =>
  Effect.flatMap(stateDirOf(stateDir), (dir) => Effect.map(fileStore(dir), (store) => ({ dir, store })))

/** a row as `--json` prints it: the table's data, with the time in ISO 8601 */
const jsonRow = (row: SessionRow) => ({ ...row, updatedAt: row.updatedAt.toISOString() })

export const list = (options: ListOptions) =>
  Connect.orLocal(
    options,
    false,
    (client) =>
      Effect.gen(function* () {
        const rows = yield* client.ListSessions()
        if (options.json) return yield* Console.log(JSON.stringify(rows))
        if (rows.length === 0) return yield* Console.error(`no sessions`)
        for (const line of renderTable(rows.map((r) => ({ ...r, updatedAt: new Date(r.updatedAt) })), { now: new Date() })) yield* Console.log(line)
      }),
    listLocal(options)
  )

const listLocal = ({ json, stateDir }: ListOptions) =>
  Effect.scoped(Effect.gen(function* () {
    const { dir, store } = yield* storeFor(stateDir)
    const sessions = yield* store.list
    const rows = yield* Effect.forEach(sessions, (s) =>
      store.read(s.sessionId).pipe(
        Effect.map(({ records }) => [rowOf(s.sessionId, s.updatedAt, records)]),
        // one session that cannot be read is named on stderr; the others are still listed
        Effect.catchAll((error) =>
          Console.error(`codex-harness: skipped session ${oneLine(s.sessionId)}: ${error.message}`).pipe(Effect.as([]))
        )
      )).pipe(Effect.map((all) => all.flat()))
    if (json) return yield* Console.log(JSON.stringify(rows.map(jsonRow)))
    // stdout stays the table alone; with nothing to list not even its header, and the empty case is said on stderr
    if (rows.length === 0) return yield* Console.error(`no sessions in ${dir}`)
    for (const line of renderTable(rows, { now: new Date() })) yield* Console.log(line)
  }))

/** Continuation lines of a multi-line text, indented under the label. */
const labelled = (label: string, text: string) => `${label}: ${text.split("\n").join("\n  ")}`

/** One transcript line (or a few, for multi-line text) per record. */
export const transcriptLine = (record: SessionRecord): string => {
  switch (record._tag) {
    case "user":
      return labelled(record.kind === "heartbeat" ? "heartbeat prompt" : "you", record.text)
    case "assistant":
      return labelled(record.delivered === false ? "codex (private)" : "codex", record.text)
    case "message":
      return labelled("message", record.text)
    case "reasoning":
      return labelled("reasoning", record.text)
    case "plan":
      return labelled("plan", record.text)
    case "media":
      return `[image] ${record.path}`
    case "tool":
      return labelled(`tool ${record.name} (${record.native !== undefined ? "native, " : ""}${record.success ? "ok" : "failed"})`, record.text)
    case "compaction":
      return `compaction: ${record.status}`
    case "heartbeat":
      return record.message === undefined ? `heartbeat: ${record.outcome}` : labelled(`heartbeat: ${record.outcome}`, record.message)
    case "binding":
      return `thread: ${record.threadId}${bindingDetail(record)}`
    case "model":
      return `model chosen: ${record.model}`
    case "notice":
      return labelled("notice", record.text)
    case "turn":
      return `turn ${record.status}${record.error !== undefined ? `: ${record.error}` : ""}`
    case "detached":
      return `thread detached: ${record.threadId} (${record.reason})`
    case "probe":
      return `branch probe ${record.threadId} of ${record.sourceThreadId}: ${record.status}${record.reason !== undefined ? ` (${record.reason})` : ""}`
    case "branch":
      return `branched from native thread ${record.sourceThreadId}${record.lastTurnId !== undefined ? ` through turn ${record.lastTurnId}` : ""}: ` +
        `${record.messages} messages${record.truncated === true ? " (bounded)" : ""}`
    case "settled":
      return `no turn (${record.status}): ${record.reason}`
    default: {
      // a record kind newer than this view: still shown, as its JSON
      const { _tag, at: _at, ...rest } = record as { readonly _tag: string; readonly at?: string }
      return `${_tag}: ${JSON.stringify(rest)}`
    }
  }
}

const bindingDetail = (binding: Extract<SessionRecord, { _tag: "binding" }>) => {
  const parts = [
    ...(binding.model !== undefined ? [`model ${binding.model}`] : []),
    ...(binding.modelProvider !== undefined ? [`provider ${binding.modelProvider}`] : []),
    ...(binding.locked === true ? ["locked"] : []),
    ...(binding.connection !== undefined ? [`supervised, connection ${binding.connection}`] : [])
  ]
  return parts.length === 0 ? "" : ` (${parts.join(", ")})`
}

export const show = (options: ShowOptions) =>
  Connect.orLocal(
    options,
    false,
    (client) =>
      Effect.gen(function* () {
        const { records, session_id } = yield* client.ShowSession({ session: options.sessionId })
        if (options.json) {
          for (const record of records) yield* Console.log(JSON.stringify(record))
          return
        }
        yield* printSession(session_id, undefined, records)
      }),
    showLocal(options)
  )

const printSession = (id: string, file: string | undefined, records: ReadonlyArray<SessionRecord>) =>
  Effect.gen(function* () {
    const state = sessionState(records)
    yield* Console.log(`session: ${id}`)
    if (file !== undefined) yield* Console.log(`file: ${file}`)
    yield* Console.log(state.binding !== undefined ? `thread: ${state.binding.threadId}${bindingDetail(state.binding)}` : "thread: - (none yet)")
    yield* Console.log(`model choice: ${state.modelChoice ?? "- (the default)"}`)
    yield* Console.log("")
    // model and tool text: its escape sequences never reach the terminal
    for (const record of records) yield* Console.log(terminalText(transcriptLine(record)))
  })

const showLocal = ({ json, sessionId, stateDir }: ShowOptions) =>
  Effect.scoped(Effect.gen(function* () {
    const { dir, store } = yield* storeFor(stateDir)
    const id = yield* resolveIn(store, sessionId, dir)
    const { corrupt, records } = yield* store.read(id)
    // the same warning a run or chat on the session gives (through the CLI's logger, on stderr)
    if (corrupt.length > 0) yield* Effect.logWarning(corruptWarning(store.locate(id), id, corrupt))
    if (json) {
      for (const record of records) yield* Console.log(JSON.stringify(record))
      return
    }
    yield* printSession(id, store.locate(id), records)
  }))

// Under the session's lock, like every writer: a chat or run that holds the session makes this refuse (SessionLocked,
// one line naming it) instead of removing the file from under it, and a lock left by a process that is gone is taken
// over. Releasing the lock once the file is gone removes the lock file too, so nothing of the session is left.
// S16: a supervised (model-locked) chat protects its native binding and is refused until that binding is detached
export const remove = ({ sessionId, stateDir }: DeleteOptions) =>
  Effect.scoped(Effect.gen(function* () {
    const { dir, store } = yield* storeFor(stateDir)
    const id = yield* resolveIn(store, sessionId, dir)
    const file = store.locate(id)
    const fs = yield* FileSystem.FileSystem
    yield* Effect.scoped(Effect.gen(function* () {
      yield* SessionLock.hold(fs, id, SessionLock.lockFileOf(file))
      yield* checkDeletable(id, (yield* store.read(id)).records)
      yield* fs.remove(file).pipe(
        Effect.catchIf(isNotFound, () => Effect.void),
        Effect.mapError((e) => new SessionStoreError({ path: file, reason: describeFileError(e) }))
      )
    }))
    yield* Console.log(`deleted: ${id}`)
  }))

// the session is taken by its full id or a unique prefix, like `show`; the lock makes a running chat or run refuse it
export const repair = ({ sessionId, stateDir }: RepairOptions) =>
  Effect.scoped(Effect.gen(function* () {
    const { dir, store } = yield* storeFor(stateDir)
    const id = yield* resolveIn(store, sessionId, dir)
    const done = yield* SessionRepair.repair(yield* FileSystem.FileSystem, id, store.locate(id))
    if (done.backup === undefined) return yield* Console.log(`nothing to repair: ${done.file} has no corrupt lines`)
    const lines = done.removed.map((c) => c.line).join(", ")
    yield* Console.log(`repaired: ${done.file} (removed line${done.removed.length === 1 ? "" : "s"} ${lines}; the old file is ${done.backup})`)
  }))

/** `--call` or `--turn`, exactly one */
const targetOf = (call: Option.Option<string>, turn: Option.Option<string>): Effect.Effect<RedactTarget, UsageError> =>
  Option.isSome(call) === Option.isSome(turn)
    ? Effect.fail(new UsageError({ line: "sessions redact takes exactly one of --call CALL_ID and --turn TURN_ID" }))
    : Effect.succeed(Option.isSome(call) ? { callId: call.value } : { turnId: Option.getOrThrow(turn) })

// S40: only the harness's own session file is rewritten (atomically, under the session's lock, so a running chat or run
// makes this refuse); Codex's rollout of the thread keeps what Codex recorded
export const redact = ({ call, sessionId, stateDir, turn }: RedactOptions) =>
  Effect.scoped(Effect.gen(function* () {
    const target = yield* targetOf(call, turn)
    const { dir, store } = yield* storeFor(stateDir)
    const id = yield* resolveIn(store, sessionId, dir)
    const changed = yield* store.rewrite(id, redaction(target))
    const what = "callId" in target ? `call ${target.callId}` : `turn ${target.turnId}`
    yield* Console.log(
      changed === 0
        ? `nothing to redact: no unredacted records of ${what} in ${store.locate(id)}`
        : `redacted: ${changed} record${changed === 1 ? "" : "s"} of ${what} in ${store.locate(id)}`
    )
  }))
