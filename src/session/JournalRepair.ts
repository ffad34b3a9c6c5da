// What a session file needs when it is opened after a crash, decided from its bytes and records. Pure. A torn last
// line (a write cut short) is split off so the file ends on a whole record; prompts with no outcome and compactions
// with a start but no terminal status get one, so every prompt and every compaction in a file is settled.
import type { SessionRecord } from "../../schemas/session.js"

const newline = 0x0a

/** Where the last whole line ends, and the torn fragment after it; undefined when the file ends on a newline. */
export const tornTail = (bytes: Uint8Array): { readonly keep: number; readonly fragment: Uint8Array } | undefined => {
  if (bytes.length === 0 || bytes[bytes.length - 1] === newline) return undefined
  const keep = bytes.lastIndexOf(newline) + 1
  return { keep, fragment: bytes.subarray(keep) }
}

/** The records that settle what a crash left open: pending prompts and unterminated compactions. */
export const settlements = (records: ReadonlyArray<SessionRecord>, at: string): ReadonlyArray<SessionRecord> => {
  let pending = false
  const compactions = new Map<string, { readonly threadId: string; readonly open: boolean }>()
  for (const record of records) {
    switch (record._tag) {
      case "user":
        pending = true
        break
      case "turn":
      case "settled":
        pending = false
        break
      case "compaction":
        // a compaction's place is its latest record, so a transcript cut at a snapshot settles in the same order
        compactions.delete(record.turnId)
        compactions.set(record.turnId, { threadId: record.threadId, open: record.status === "started" })
        break
    }
  }
  const out: Array<SessionRecord> = []
  for (const [turnId, c] of compactions) {
    if (c.open) out.push({ _tag: "compaction", at, threadId: c.threadId, turnId, status: "failed" })
  }
  if (pending) {
    out.push({ _tag: "settled", at, status: "interrupted", reason: "the harness stopped before the turn of this prompt ended" })
  }
  return out
}
