// A session's state, derived from its records: the current thread binding, the runtime its threads live in, and the
// user's explicit model choice. Pure: the records are the source of truth, so a crash can never leave them out of step.
import type { SessionRecord, SessionRuntime } from "../../schemas/session.js"

type BindingRecord = Extract<SessionRecord, { readonly _tag: "binding" }>
type DetachedRecord = Extract<SessionRecord, { readonly _tag: "detached" }>
type BranchRecord = Extract<SessionRecord, { readonly _tag: "branch" }>
type ProbeRecord = Extract<SessionRecord, { readonly _tag: "probe" }>

export interface SessionState {
  /** the last binding record; absent for a session that has never opened a thread, or whose thread was detached */
  readonly binding?: BindingRecord | undefined
  /**
   * The runtime of the last binding, kept when that binding is detached: a detached session continues in the same
   * runtime (and a detached supervised chat does not continue at all). Absent before the first binding, and for files
   * written before runtimes were recorded (those adopt the current settings' runtime once).
   */
  readonly runtime?: SessionRuntime | undefined
  /** why the last binding was dropped, when it was (a later record for the same thread restates it, e.g. its `carry`) */
  readonly detached?: DetachedRecord | undefined
  /** the last explicit model choice (S12) */
  readonly modelChoice?: string | undefined
  /**
   * A supervised branch whose canonical thread has not had a turn yet (S15): without a binding, the next turn forks
   * the snapshot and starts it. Cleared by the first turn record on the thread bound after it.
   */
  readonly branch?: BranchRecord | undefined
  /**
   * A supervised branch's probes not known to be cleaned up (S4): the last record of each says `cleanupFailed`, or
   * `open` with no end (its turn's process died first). The session's next open of its connection retries them.
   */
  readonly pendingProbes?: ReadonlyArray<ProbeRecord> | undefined
}

/** The runtime a binding record names: its own, or the one a supervised binding of an older file implies. */
export const runtimeOf = (binding: BindingRecord): SessionRuntime | undefined => {
  if (binding.runtime !== undefined) return binding.runtime
  if (binding.connection !== undefined && binding.codexHome !== undefined) {
    return { transport: "stdio", codexHome: binding.codexHome, poolKey: binding.connection, locked: binding.locked === true }
  }
  return undefined
}

/** What the fold carries between records: the state's parts, every probe's last record by thread. */
export interface StateFold {
  readonly binding?: BindingRecord | undefined
  readonly runtime?: SessionRuntime | undefined
  readonly detached?: DetachedRecord | undefined
  readonly modelChoice?: string | undefined
  readonly branch?: BranchRecord | undefined
  readonly probes: ReadonlyMap<string, ProbeRecord>
}

export const emptyFold: StateFold = { probes: new Map() }

/** The fold after one more record. Pure: a session's state is `records.reduce(stepState, emptyFold)`. */
export const stepState = (fold: StateFold, record: SessionRecord): StateFold => {
  if (record._tag === "branch") return { ...fold, branch: record, runtime: record.runtime, binding: undefined, detached: undefined }
  if (record._tag === "turn") {
    return fold.branch !== undefined && fold.binding?.threadId === record.threadId ? { ...fold, branch: undefined } : fold
  }
  if (record._tag === "binding") return { ...fold, binding: record, runtime: runtimeOf(record) ?? fold.runtime, detached: undefined }
  if (
    record._tag === "detached" &&
    (fold.binding?.threadId === record.threadId || (fold.binding === undefined && fold.detached?.threadId === record.threadId))
  ) {
    return { ...fold, binding: undefined, detached: record }
  }
  if (record._tag === "model") return { ...fold, modelChoice: record.model }
  if (record._tag === "probe") return { ...fold, probes: new Map(fold.probes).set(record.threadId, record) }
  return fold
}

export const stateOfFold = (fold: StateFold): SessionState => {
  const pendingProbes = [...fold.probes.values()].filter((probe) => probe.status !== "closed")
  const { binding, branch, detached, modelChoice, runtime } = fold
  return { binding, runtime, detached, modelChoice, branch, ...(pendingProbes.length > 0 ? { pendingProbes } : {}) }
}

export const sessionState = (records: ReadonlyArray<SessionRecord>): SessionState => {
  // one mutable pass (this runs before every turn); stepState is the same rule, one record at a time
  let fold: StateFold = emptyFold
  const probes = new Map<string, ProbeRecord>()
  for (const record of records) {
    if (record._tag === "probe") probes.set(record.threadId, record)
    else fold = stepState(fold, record)
  }
  return stateOfFold({ ...fold, probes })
}

/**
 * `sessionState` for sessions whose records are read again as they grow: a held session is read before each of its
 * turns, and folding all its records each time made a long chat's turns cost more the longer it ran. The fold of what
 * was read last is kept per session (at most `limit` sessions), and records that extend it (the same record objects
 * first and where the last read ended, as a held journal's copies are) are folded on from there; anything else (a
 * store that reads afresh, a rewritten file) is folded whole.
 */
export const growingStates = (limit = 256) => {
  interface Seen {
    readonly length: number
    readonly first: SessionRecord | undefined
    readonly last: SessionRecord | undefined
    readonly fold: StateFold
  }
  const seen = new Map<string, Seen>()
  return (sessionId: string, records: ReadonlyArray<SessionRecord>): SessionState => {
    const known = seen.get(sessionId)
    const extended = known !== undefined && known.length > 0 && records.length >= known.length &&
      records[0] === known.first && records[known.length - 1] === known.last
    let fold = extended ? known.fold : emptyFold
    for (let i = extended ? known.length : 0; i < records.length; i++) fold = stepState(fold, records[i]!)
    if (known === undefined && seen.size >= limit) seen.delete(seen.keys().next().value!)
    seen.set(sessionId, { length: records.length, first: records[0], last: records[records.length - 1], fold })
    return stateOfFold(fold)
  }
}
