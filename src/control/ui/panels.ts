// The read-only panels: the sessions list, a session's transcript (briefly: its last records) and the thread catalog.
// Titles, texts and tool output come from the sessions' files and Codex's threads: text nodes only (dom.ts).
import type { CatalogRow, SessionRow } from "../../../schemas/control.js"
import type { SessionRecord } from "../../../schemas/session.js"
import { clip, el, replace, when } from "./dom.js"

type Session = typeof SessionRow.Type
type Thread = typeof CatalogRow.Type

/** how many of a session's records the transcript shows (the newest) */
const transcriptRecords = 40

export const renderSessions = (
  list: HTMLElement,
  rows: ReadonlyArray<Session>,
  selected: string | undefined,
  onSelect: (sessionId: string) => void
) => {
  const sorted = [...rows].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
  // the list is redrawn whenever a turn ends: a row that had the keyboard's focus keeps it
  const focused = list.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.sessionId : undefined
  list.dataset.count = String(sorted.length)
  if (sorted.length === 0) return replace(list, el("li", { className: "empty", testid: "sessions-empty" }, "no sessions yet: send a prompt to start one"))
  replace(
    list,
    ...sorted.map((row) => {
      const item = el(
        "li",
        {
          className: row.sessionId === selected ? "session selected" : "session",
          testid: "session-row",
          data: { sessionId: row.sessionId },
          // a row is a button to a keyboard and a screen reader too: focusable, announced as one, and opened by the
          // keys that press a button (Enter, Space)
          attrs: { tabindex: "0", role: "button", "aria-current": String(row.sessionId === selected) },
          onClick: () => onSelect(row.sessionId)
        },
        el("div", { className: "title" }, row.title ?? "(untitled)"),
        el("div", { className: "meta" }, `${row.sessionId.slice(0, 8)} · ${row.turns} turn${row.turns === 1 ? "" : "s"} · ${when(row.updatedAt)}`)
      )
      item.addEventListener("keydown", (e) => {
        if (e.key !== "Enter" && e.key !== " ") return
        // Space would otherwise scroll the list
        e.preventDefault()
        onSelect(row.sessionId)
      })
      return item
    })
  )
  if (focused !== undefined) list.querySelector<HTMLElement>(`[data-session-id="${CSS.escape(focused)}"]`)?.focus()
}

/** one line per record a person reads; the bookkeeping records (bindings, probes) are left out */
const recordLine = (r: SessionRecord): [string, string] | undefined => {
  switch (r._tag) {
    case "user":
      return ["you", r.text]
    case "assistant":
      return ["agent", r.text]
    case "message":
      return ["agent (message)", r.text]
    case "reasoning":
      return ["thinking", r.text]
    case "plan":
      return ["plan", r.text]
    case "media":
      return ["media", r.path]
    case "tool":
      return [r.native !== undefined ? "tool (native)" : "tool", `${r.name} ${r.success ? "ok" : "failed"}${r.redacted === true ? " (redacted)" : ""}: ${clip(r.text, 600)}`]
    case "compaction":
      return ["compaction", r.status]
    case "heartbeat":
      return ["heartbeat", `${r.outcome}${r.message !== undefined ? `: ${r.message}` : ""}`]
    case "notice":
      return ["notice", r.text]
    case "turn":
      return r.status === "completed" ? undefined : ["turn", `${r.status}${r.error !== undefined ? `: ${r.error}` : ""}`]
    case "settled":
      return ["turn", `${r.status}: ${r.reason}`]
    case "detached":
      return ["thread", `detached (${r.reason})`]
    case "model":
      return ["model", r.model]
    default:
      return undefined
  }
}

export const renderTranscript = (box: HTMLElement, sessionId: string, records: ReadonlyArray<SessionRecord>) => {
  const lines = records.flatMap((r) => {
    const line = recordLine(r)
    return line === undefined ? [] : [{ tag: r._tag, who: line[0], text: line[1] }]
  })
  const shown = lines.slice(-transcriptRecords)
  box.dataset.session = sessionId
  replace(
    box,
    el("h3", {}, `Transcript of ${sessionId.slice(0, 8)}`, el("span", { className: "meta" }, lines.length > shown.length ? ` (last ${shown.length} of ${lines.length})` : "")),
    ...shown.map((l) =>
      el("div", { className: `entry ${l.tag}`, testid: "transcript-entry", data: { tag: l.tag } }, el("span", { className: "who" }, `${l.who}: `), l.text)
    ),
    shown.length === 0 ? el("div", { className: "meta" }, "nothing said yet") : null
  )
}

export const renderThreads = (box: HTMLElement, result: { readonly rows: ReadonlyArray<Thread>; readonly truncated: boolean }) => {
  box.dataset.count = String(result.rows.length)
  if (result.rows.length === 0) return replace(box, el("p", { className: "empty", testid: "threads-empty" }, "no threads in the catalog"))
  const head = el("tr", {}, ...["thread", "title", "status", "model", "node", "updated", "source"].map((h) => el("th", {}, h)))
  const body = result.rows.map((t) =>
    el(
      "tr",
      { testid: "thread-row", data: { threadId: t.threadId, status: t.status } },
      el("td", { className: "mono", title: t.threadId }, t.threadId.slice(0, 13)),
      el("td", {}, t.title),
      el("td", {}, t.activeFlags.length > 0 ? `${t.status} (${t.activeFlags.join(", ")})` : t.status),
      el("td", {}, t.model ?? ""),
      el("td", {}, t.remote ? `${t.node} (remote)` : t.node),
      el("td", {}, when(t.updatedAt)),
      el("td", {}, t.source)
    )
  )
  replace(
    box,
    el("table", { className: "threads" }, el("thead", {}, head), el("tbody", {}, ...body)),
    result.truncated ? el("p", { className: "meta" }, "(more threads than shown)") : null
  )
}
