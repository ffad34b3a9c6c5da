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

export const sessionState = (records: ReadonlyArray<SessionRecord>): SessionState => {
  let binding: BindingRecord | undefined
  let runtime: SessionRuntime | undefined
  let detached: DetachedRecord | undefined
  let modelChoice: string | undefined
  let branch: BranchRecord | undefined
  const probes = new Map<string, ProbeRecord>()
  for (const record of records) {
    if (record._tag === "branch") {
      branch = record
      runtime = record.runtime
      binding = undefined
      detached = undefined
    } else if (record._tag === "turn") {
      if (branch !== undefined && binding?.threadId === record.threadId) branch = undefined
    } else if (record._tag === "binding") {
      binding = record
      runtime = runtimeOf(record) ?? runtime
      detached = undefined
    } else if (
      record._tag === "detached" &&
      (binding?.threadId === record.threadId || (binding === undefined && detached?.threadId === record.threadId))
    ) {
      binding = undefined
      detached = record
    } else if (record._tag === "model") modelChoice = record.model
    else if (record._tag === "probe") probes.set(record.threadId, record)
  }
  const pendingProbes = [...probes.values()].filter((probe) => probe.status !== "closed")
  return { binding, runtime, detached, modelChoice, branch, ...(pendingProbes.length > 0 ? { pendingProbes } : {}) }
}
