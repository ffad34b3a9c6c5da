// A session's working set (issue 33): what a turn needs of its records, without the whole transcript. A session's
// records are read as two parts: the few older records its state still comes from (the snapshot's `keep`: its binding,
// its detachment, its model choice, an open branch, probes not cleaned up), and every record after the snapshot's seq
// (the tail). The state of the two parts is, by construction, the state of the whole transcript (checked here before a
// snapshot is taken: a choice that does not give the same state is never taken), and the tail starts at a quiet point
// (no prompt without its turn's end, no compaction without its status, no branch whose first turn has not run), so what
// a crash left open is found in it, and so is a branch's history. The tail keeps at least the conversation a fresh
// thread's bootstrap projection carries (S38: its newest 200 entries), and records behind the snapshot that are older
// than the retention period may be deleted (src/cluster/Retention.ts): the transcript keeps its state.
//
// Pure: the PostgreSQL store keeps the working set of a held session in memory and moves its snapshot forward in the
// statement of a later append; the retention job moves that of a session nobody holds.
import type { SessionRecord } from "../../schemas/session.js"
import { emptyFold, sessionState, type SessionState, stepState, type StateFold } from "./SessionState.js"

export interface Entry {
  readonly seq: number
  readonly record: SessionRecord
}

/** where the tail starts: records up to `seq` are behind the snapshot, of which `keep` are still read */
export interface Snapshot {
  readonly seq: number
  readonly keep: ReadonlyArray<Entry>
}

export interface SnapshotOptions {
  /** conversation records (user, assistant, message, tool) the tail keeps however old the rest is */
  readonly keepConversation: number
  /** the tail may grow to this many records before the snapshot moves on its own */
  readonly maxTail: number
  /** records older than this (ms since the epoch) may go behind the snapshot whatever the tail's length (retention) */
  readonly cutoff?: number | undefined
}

/** as many conversation records as a bootstrap projection carries at most (BootstrapProjection.conversationBounds) */
export const defaultSnapshotOptions: SnapshotOptions = { keepConversation: 200, maxTail: 600 }

const conversation: ReadonlySet<SessionRecord["_tag"]> = new Set(["user", "assistant", "message", "tool"])

/** a state in one comparable form: probes in thread order (the fold keeps them in the order it first met them) */
const comparable = (state: SessionState) =>
  JSON.stringify({ ...state, pendingProbes: [...(state.pendingProbes ?? [])].sort((a, b) => a.threadId.localeCompare(b.threadId)) })

/** the entries in seq order, each once */
const ordered = (entries: Iterable<Entry>) => [...new Map([...entries].map((e) => [e.seq, e])).values()].sort((a, b) => a.seq - b.seq)

/**
 * The fewest of `entries` (a session's records in order, from its first or from a snapshot's keep) whose state is the
 * state of all of them; undefined when no choice checked out (the snapshot then stays where it is).
 */
export const keepOf = (entries: ReadonlyArray<Entry>): ReadonlyArray<Entry> | undefined => {
  const whole = comparable(sessionState(entries.map((e) => e.record)))
  let lastBinding: Entry | undefined
  let runtimeFrom: Entry | undefined
  let lastDetached: Entry | undefined
  let lastModel: Entry | undefined
  let lastBranch: Entry | undefined
  const probes = new Map<string, Entry>()
  for (const entry of entries) {
    const r = entry.record
    if (r._tag === "binding") {
      lastBinding = entry
      if (r.runtime !== undefined || (r.connection !== undefined && r.codexHome !== undefined)) runtimeFrom = entry
    } else if (r._tag === "branch") {
      lastBranch = entry
      runtimeFrom = entry
    } else if (r._tag === "detached") lastDetached = entry
    else if (r._tag === "model") lastModel = entry
    else if (r._tag === "probe") probes.set(r.threadId, entry)
  }
  const state = sessionState(entries.map((e) => e.record))
  const picked = [
    lastBinding,
    runtimeFrom?.record._tag === "branch" && state.branch === undefined ? undefined : runtimeFrom,
    state.detached !== undefined ? lastDetached : undefined,
    state.modelChoice !== undefined ? lastModel : undefined,
    state.branch !== undefined ? lastBranch : undefined,
    ...[...probes.values()].filter((e) => e.record._tag === "probe" && e.record.status !== "closed")
  ].filter((e): e is Entry => e !== undefined)
  const fewest = ordered(picked)
  if (comparable(sessionState(fewest.map((e) => e.record))) === whole) return fewest
  // every record the state is made of, and the turns after the last branch (a branch ends at its first turn)
  const branchAt = lastBranch?.seq ?? Infinity
  const more = ordered(entries.filter((e) =>
    e.record._tag === "binding" || e.record._tag === "branch" || e.record._tag === "detached" || e.record._tag === "model" ||
    e.record._tag === "probe" || (e.record._tag === "turn" && e.seq > branchAt)
  ))
  return comparable(sessionState(more.map((e) => e.record))) === whole ? more : undefined
}

const olderThan = (record: SessionRecord, cutoff: number | undefined) => {
  if (cutoff === undefined) return false
  const at = Date.parse(record.at)
  return Number.isFinite(at) && at < cutoff
}

/** whether the tail asks for a new snapshot: too long, or its oldest record is past the retention period */
export const due = (tail: ReadonlyArray<Entry>, options: SnapshotOptions): boolean =>
  tail.length > options.maxTail || (tail.length > 0 && olderThan(tail[0]!.record, options.cutoff))

/**
 * The snapshot to move to, after the current one (`kept`, its keep) and its `tail`: the last quiet point of the tail
 * that leaves at least `keepConversation` conversation records after it, or whose record is past the cutoff; undefined
 * when there is none, or its keep did not check out.
 */
export const choose = (kept: ReadonlyArray<Entry>, tail: ReadonlyArray<Entry>, options: SnapshotOptions): Snapshot | undefined => {
  // conversation records after each position
  const after: Array<number> = new Array(tail.length)
  let count = 0
  for (let i = tail.length - 1; i >= 0; i--) {
    after[i] = count
    if (conversation.has(tail[i]!.record._tag)) count++
  }
  let fold: StateFold = kept.reduce((f, e) => stepState(f, e.record), emptyFold)
  let pending = false
  const openCompactions = new Set<string>()
  let best = -1
  for (let i = 0; i < tail.length; i++) {
    const r = tail[i]!.record
    fold = stepState(fold, r)
    if (r._tag === "user") pending = true
    else if (r._tag === "turn" || r._tag === "settled") pending = false
    else if (r._tag === "compaction") {
      if (r.status === "started") openCompactions.add(r.turnId)
      else openCompactions.delete(r.turnId)
    }
    const quiet = !pending && openCompactions.size === 0 && fold.branch === undefined
    if (quiet && (after[i]! >= options.keepConversation || olderThan(r, options.cutoff))) best = i
  }
  if (best < 0) return undefined
  const keep = keepOf([...kept, ...tail.slice(0, best + 1)])
  return keep === undefined ? undefined : { seq: tail[best]!.seq, keep }
}
