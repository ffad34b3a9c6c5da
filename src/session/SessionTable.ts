// `sessions list` as a table a person reads at a terminal: one row per session, most recent first, with the shortest id
// prefix that is unique among the rows (what `sessions show` and `--session` accept), a title taken from the first
// prompt, when it was last updated, its turns and the runtime it lives in. Pure: sessions.ts reads the files.
import type { SessionRecord } from "../../schemas/session.js"
import * as CodexArgs from "../appserver/CodexArgs.js"
import { sessionState } from "../session/SessionState.js"
import { terminalText } from "../platform/terminalText.js"

/** one session as `sessions list` shows it (and, as it is, in `--json`) */
export interface SessionRow {
  readonly sessionId: string
  readonly updatedAt: Date
  readonly threadId: string | null
  readonly turns: number
  /** the first prompt, on one line, made safe for a terminal and cut at titleMaxChars; null when there is none */
  readonly title: string | null
  /** the model later turns ask for: the session's explicit choice, else what its thread was bound with */
  readonly model: string | null
  /** the provider of its thread, as Codex named it when the thread was bound */
  readonly modelProvider: string | null
  /** the Responses API server its runtime records, when the harness pointed Codex at one */
  readonly providerUrl: string | null
}

/** the longest title kept (the table cuts it further to fit) */
export const titleMaxChars = 120
/** the shortest id prefix the table shows */
export const minIdChars = 8

// Controls terminalText shows as visible symbols (U+2400-U+2421 and U+FFFD), dropped here: a title is a hint, and a
// symbol for a bell in it helps nobody. Also the invisible characters that reorder or hide text (bidi overrides and
// isolates, zero-width spaces): in a table they could make one row look like another.
const shownControls = /[\u2400-\u2421\ufffd]/g
const invisible = /[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g

/** `text` as one line of at most `max` characters that a terminal shows as it is. Pure. */
export const oneLine = (text: string, max = titleMaxChars): string => {
  const flat = terminalText(text.replace(/[\t\n\v\f\r]/g, " "))
    .replace(shownControls, "")
    .replace(invisible, "")
    .replace(/\s+/g, " ")
    .trim()
  return cut(flat, max)
}

/** at most `max` characters (code points), the last one an ellipsis when it was cut. Pure. */
export const cut = (text: string, max: number): string => {
  const chars = [...text]
  if (chars.length <= max) return text
  return max <= 0 ? "" : `${chars.slice(0, max - 1).join("")}…`
}

const width = (text: string) => [...text].length

/** The first prompt a person wrote (heartbeat prompts are the harness's own), as a title. Pure. */
export const titleOf = (records: ReadonlyArray<SessionRecord>): string | null => {
  const first = records.find((r): r is Extract<SessionRecord, { _tag: "user" }> => r._tag === "user" && r.kind !== "heartbeat")
  if (first === undefined) return null
  const title = oneLine(first.text)
  return title === "" ? null : title
}

/** A session's row from its records. Pure. */
export const rowOf = (sessionId: string, updatedAt: Date, records: ReadonlyArray<SessionRecord>): SessionRow => {
  const state = sessionState(records)
  // a detached session continues in the runtime of its last binding: that binding still says where it lives
  const lastBinding = state.binding ?? [...records].reverse().find((r): r is Extract<SessionRecord, { _tag: "binding" }> => r._tag === "binding")
  return {
    sessionId,
    updatedAt,
    threadId: state.binding?.threadId ?? null,
    turns: records.filter((r) => r._tag === "turn").length,
    title: titleOf(records),
    model: state.modelChoice ?? lastBinding?.model ?? null,
    modelProvider: lastBinding?.modelProvider ?? null,
    providerUrl: state.runtime?.providerUrl ?? null
  }
}

/**
 * How many characters of each id the table shows: the fewest that tell every listed id from the others, at least
 * `min`. An id shorter than that is shown whole (typed whole, it names itself, even when it starts another id). Pure.
 */
export const uniquePrefixLength = (ids: ReadonlyArray<string>, min = minIdChars): number => {
  const sorted = [...ids].sort()
  const common = (a: string, b: string) => {
    let i = 0
    while (i < a.length && i < b.length && a[i] === b[i]) i++
    return i
  }
  let needed = min
  for (let i = 0; i < sorted.length; i++) {
    const id = sorted[i]!
    // in sorted order an id shares its longest common prefix with a neighbour
    const shared = Math.max(i > 0 ? common(sorted[i - 1]!, id) : 0, i + 1 < sorted.length ? common(id, sorted[i + 1]!) : 0)
    needed = Math.max(needed, Math.min(id.length, shared + 1))
  }
  return needed
}

const two = (n: number) => String(n).padStart(2, "0")

/** Local time, compact: `MM-DD HH:MM` within `now`'s year, `YYYY-MM-DD` before it. Pure. */
export const compactTime = (at: Date, now: Date): string =>
  at.getFullYear() === now.getFullYear()
    ? `${two(at.getMonth() + 1)}-${two(at.getDate())} ${two(at.getHours())}:${two(at.getMinutes())}`
    : `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}`

/** `model / provider`: the provider as its URL's host when the harness defined it (its name says nothing). Pure. */
export const runtimeText = (row: SessionRow): string => {
  let provider = row.modelProvider
  if (row.providerUrl !== null && (provider === null || provider === CodexArgs.providerId)) {
    try {
      provider = new URL(row.providerUrl).host
    } catch {
      // a recorded URL that does not parse: the provider's name, as Codex gave it
    }
  }
  if (row.model === null && provider === null) return "-"
  return oneLine(`${row.model ?? "-"} / ${provider ?? "-"}`)
}

const gap = "  "
/** the title keeps at least this much room; the runtime gives way first */
const minTitle = 16
const maxRuntime = 24

/**
 * The table: a header row, then one row per session in the order given, every line at most `columns` wide. Only ids
 * that need more than about 30 characters to be told apart (hand-picked names sharing a long start) can make a line
 * longer: a prefix cut shorter would name no session. Pure.
 */
export const renderTable = (rows: ReadonlyArray<SessionRow>, options: { readonly now: Date; readonly columns?: number }): ReadonlyArray<string> => {
  const columns = options.columns ?? 80
  const idLength = uniquePrefixLength(rows.map((r) => r.sessionId))
  const cells = rows.map((row) => ({
    // ids come from file names: made safe like any text (a valid id is unchanged)
    id: oneLine(row.sessionId.slice(0, idLength), idLength),
    title: row.title ?? "-",
    updated: compactTime(row.updatedAt, options.now),
    turns: String(row.turns),
    runtime: runtimeText(row)
  }))
  const header = { id: "ID", title: "TITLE", updated: "UPDATED", turns: "TURNS", runtime: "RUNTIME" }
  const widest = (key: keyof typeof header) => Math.max(width(header[key]), ...cells.map((c) => width(c[key])))
  const idW = widest("id")
  const updatedW = widest("updated")
  const turnsW = widest("turns")
  const room = columns - idW - updatedW - turnsW - 4 * gap.length
  let runtimeW = Math.min(widest("runtime"), maxRuntime)
  const titleW = Math.max(Math.min(widest("title"), room - runtimeW), Math.min(widest("title"), minTitle))
  runtimeW = Math.max(width(header.runtime), Math.min(widest("runtime"), room - titleW))
  const line = (c: typeof header) =>
    [
      pad(c.id, idW),
      pad(cut(c.title, titleW), titleW),
      pad(c.updated, updatedW),
      c.turns.padStart(turnsW),
      cut(c.runtime, runtimeW)
    ].join(gap).trimEnd()
  return [line(header), ...cells.map(line)]
}

const pad = (text: string, to: number) => text + " ".repeat(Math.max(0, to - width(text)))
