// A session's state, derived from its records: the current thread binding and the user's explicit model choice.
// Pure: the records are the source of truth, so a crash can never leave the two out of step.
import type { SessionRecord } from "../../schemas/session.js"

type BindingRecord = Extract<SessionRecord, { readonly _tag: "binding" }>

export interface SessionState {
  /** the last binding record; absent for a session that has never opened a thread, or whose thread was detached */
  readonly binding?: BindingRecord | undefined
  /** the last explicit model choice (S12) */
  readonly modelChoice?: string | undefined
}

export const sessionState = (records: ReadonlyArray<SessionRecord>): SessionState => {
  let binding: BindingRecord | undefined
  let modelChoice: string | undefined
  for (const record of records) {
    if (record._tag === "binding") binding = record
    else if (record._tag === "detached" && binding?.threadId === record.threadId) binding = undefined
    else if (record._tag === "model") modelChoice = record.model
  }
  return { binding, modelChoice }
}
