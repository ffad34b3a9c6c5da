// The Control UI's script (bundled to /ui.js; the page is index.html): a person at a browser drives `serve` through
// the same control API as the CLI. It checks the token, then keeps one WebSocket to /rpc:
//   - Watch (all sessions) for the approvals and questions waiting for any client, and to refresh the sessions list
//     when a turn ends; Pending when it (re)subscribes, to drop cards closed while it was away
//   - StartTurn for every message typed, a turn running or not (serve starts, steers or queues it), and Watch for the
//     selected session when a turn runs there that the page is not following (after a reload): live.ts, drawn as
//     they stream (turnView.ts), their prompts as cards (prompts.ts)
//   - the one-shot calls: Health, ListSessions, ShowSession, Interrupt, Compact, ListThreads, Answer
// The page owns no turn: closing or reloading it stops nothing (no unload handler); only Interrupt stops a turn. The
// selected session is kept in the address's fragment, so a reload comes back to it and follows its running turn.
// No framework: the page is small and everything untrusted goes in as text (dom.ts).
import type { ControlEvent } from "../../../schemas/control.js"
import * as Connection from "./connection.js"
import { byId } from "./dom.js"
import * as Live from "./live.js"
import { renderSessions, renderThreads, renderTranscript } from "./panels.js"
import * as Prompts from "./prompts.js"
import * as TurnView from "./turnView.js"

type AuthState = "connecting" | "connected" | "unauthorized" | "unreachable" | "disconnected"

const page = {
  auth: byId("auth"),
  serveInfo: byId("serve-info"),
  forget: byId<HTMLButtonElement>("forget-token"),
  tokenPanel: byId("token-panel"),
  tokenProblem: byId("token-problem"),
  tokenForm: byId<HTMLFormElement>("token-form"),
  tokenInput: byId<HTMLInputElement>("token-input"),
  app: byId("app"),
  tabs: { sessions: byId<HTMLButtonElement>("tab-sessions"), threads: byId<HTMLButtonElement>("tab-threads") },
  views: { sessions: byId("view-sessions"), threads: byId("view-threads") },
  sessions: byId("sessions"),
  newSession: byId<HTMLButtonElement>("new-session"),
  refreshSessions: byId<HTMLButtonElement>("refresh-sessions"),
  selected: byId("selected-session"),
  interrupt: byId<HTMLButtonElement>("interrupt"),
  compact: byId<HTMLButtonElement>("compact"),
  actionStatus: byId("action-status"),
  transcript: byId("transcript"),
  promptForm: byId<HTMLFormElement>("prompt-form"),
  prompt: byId<HTMLTextAreaElement>("prompt"),
  send: byId<HTMLButtonElement>("send"),
  threads: byId("threads"),
  threadsStatus: byId("threads-status"),
  refreshThreads: byId<HTMLButtonElement>("refresh-threads")
}

let connection: Connection.Connection | undefined
/** the session the next prompt goes to; undefined: a new one */
let selected: string | undefined
let stopWatch: (() => void) | undefined
/** bumped on every (re)connect, so a stale retry or stream end does nothing */
let generation = 0

const view = TurnView.make(byId("turn-log"), byId("turn-status"))
const live = Live.make({
  connection: () => connection,
  view,
  shared: (event, sessionId) => {
    onShared(event, sessionId)
    // a new session is in the list once its turn has started (its file is written by then)
    if (event.type === "turn.started" && page.sessions.querySelector(`[data-session-id="${CSS.escape(event.session_id)}"]`) === null) {
      void refreshSessions()
    }
  },
  sessionKnown: (sessionId) => {
    if (selected === sessionId) return
    selected = sessionId
    Connection.keepSessionInAddress(sessionId)
    updateControls()
  },
  changed: () => updateControls(),
  messageEnded: () => void refreshSessions()
})
const prompts = Prompts.make(byId("prompts"), async (payload) =>
  connection === undefined ? { ok: false, error: "not connected" } : connection.call("Answer", payload))

const setAuth = (state: AuthState, text: string) => {
  page.auth.dataset.state = state
  page.auth.textContent = text
}

const say = (text: string, result: "ok" | "error") => {
  page.actionStatus.dataset.result = result
  page.actionStatus.textContent = text
}

const updateControls = () => {
  page.selected.textContent = selected ?? "new session"
  page.interrupt.disabled = selected === undefined && live.session() === undefined
  page.compact.disabled = selected === undefined || live.busy()
  // a message typed while a turn runs is sent like any other: serve steers or queues it
  page.send.disabled = connection === undefined
  for (const row of page.sessions.querySelectorAll<HTMLElement>(`[data-testid="session-row"]`)) {
    row.classList.toggle("selected", row.dataset.sessionId === selected)
    row.setAttribute("aria-current", String(row.dataset.sessionId === selected))
  }
}

const showTokenForm = (problem: string) => {
  page.app.hidden = true
  page.tokenPanel.hidden = false
  page.forget.hidden = true
  page.tokenProblem.textContent = problem
  page.tokenInput.focus()
}

const refreshSessions = async () => {
  if (connection === undefined) return
  const result = await connection.call("ListSessions")
  if (!result.ok) return say(`sessions: ${result.error}`, "error")
  renderSessions(page.sessions, result.value, selected, (id) => void select(id))
  updateControls()
}

/** shows a session: its transcript, and its running turn followed from here on. Whatever was followed before goes on
 * running in serve (the page stops following it, nothing more) */
const select = async (sessionId: string | undefined) => {
  // the session already shown, with its turn followed: nothing to redo
  if (sessionId !== undefined && sessionId === selected && live.busy()) return
  live.detach()
  selected = sessionId
  Connection.keepSessionInAddress(sessionId)
  view.clear()
  page.actionStatus.textContent = ""
  updateControls()
  page.transcript.hidden = sessionId === undefined
  page.transcript.replaceChildren()
  if (sessionId === undefined || connection === undefined) return
  const result = await connection.call("ShowSession", { session: sessionId })
  if (selected !== sessionId) return
  if (!result.ok) return say(`transcript: ${result.error}`, "error")
  renderTranscript(page.transcript, result.value.session_id, result.value.records)
  await reattach()
}

/** follows the selected session's running turn (serve's Health lists it) when the page follows nothing there yet */
const reattach = async () => {
  const sessionId = selected
  if (connection === undefined || sessionId === undefined || live.busy() || live.watching(sessionId)) return
  const health = await connection.call("Health")
  if (!health.ok || selected !== sessionId || live.busy()) return
  const running = health.value.active_turns.find((t) => t.session_id === sessionId)
  if (running === undefined) return
  live.attach(sessionId, running.turn_id)
  // the turn may have ended between Health's answer and the Watch's start, and its end then never comes: asked again
  const again = await connection.call("Health")
  if (!again.ok || selected !== sessionId || again.value.active_turns.some((t) => t.session_id === sessionId)) return
  live.endedUnseen(sessionId)
  // the transcript read before it ended lacks its outcome
  const shown = await connection.call("ShowSession", { session: sessionId })
  if (shown.ok && selected === sessionId) renderTranscript(page.transcript, shown.value.session_id, shown.value.records)
}

/** what every stream brings that is not the turn log's: cards, and a list to refresh when a turn ends */
const onShared = (event: ControlEvent, sessionOfTurn: string | undefined) => {
  switch (event.type) {
    case "approval.requested":
    case "question.asked":
      return prompts.show(event)
    case "interaction.closed":
      return prompts.closed(event.id)
    case "approval.decided":
      if (sessionOfTurn !== undefined) prompts.decided(sessionOfTurn, event.kind, event.subject)
      return
  }
}

/** sends the typed message, a turn running or not: serve starts a turn with it, steers it in or queues it */
const sendPrompt = () => {
  const text = page.prompt.value
  if (connection === undefined || text.trim() === "") return
  // a new turn's log replaces the transcript; a message into a followed turn joins the log under it
  if (!live.busy()) page.transcript.hidden = true
  page.prompt.value = ""
  live.send(text, selected)
}

/** the one way the page stops a turn */
const interrupt = async () => {
  const session = live.session() ?? selected
  if (connection === undefined || session === undefined) return
  // marked before the call: the turn's stream can end before the call's answer arrives
  const drawn = live.session() === session
  if (drawn) live.interruptSent(true)
  const result = await connection.call("Interrupt", { session })
  if (drawn && (!result.ok || !result.value.interrupted)) live.interruptSent(false)
  if (!result.ok) return say(`interrupt: ${result.error}`, "error")
  say(result.value.interrupted ? "interrupt sent" : "no turn was running in this session", "ok")
}

const compact = async () => {
  if (connection === undefined || selected === undefined) return
  say("compacting…", "ok")
  page.compact.disabled = true
  const result = await connection.call("Compact", { session: selected })
  updateControls()
  if (!result.ok) return say(`compact: ${result.error}`, "error")
  say(`compacted thread ${result.value.thread_id} in ${(result.value.duration_ms / 1000).toFixed(1)} s`, "ok")
}

const loadThreads = async () => {
  if (connection === undefined) return
  page.threadsStatus.textContent = "loading…"
  const result = await connection.call("ListThreads")
  if (!result.ok) {
    page.threadsStatus.textContent = `threads: ${result.error}`
    page.threadsStatus.dataset.result = "error"
    return
  }
  page.threadsStatus.textContent = `${result.value.rows.length} thread${result.value.rows.length === 1 ? "" : "s"}`
  page.threadsStatus.dataset.result = "ok"
  renderThreads(page.threads, result.value)
}

const showTab = (tab: "sessions" | "threads") => {
  page.tabs.sessions.setAttribute("aria-selected", String(tab === "sessions"))
  page.tabs.threads.setAttribute("aria-selected", String(tab === "threads"))
  page.views.sessions.hidden = tab !== "sessions"
  page.views.threads.hidden = tab !== "threads"
  if (tab === "threads") void loadThreads()
}

/** follows Watch; when the connection drops, says so and subscribes again once serve answers */
const watch = (token: string, mine: number) => {
  if (connection === undefined || mine !== generation) return
  const live = connection
  const askedAt = performance.now()
  void live.call("Pending").then((r) => {
    if (r.ok && mine === generation) prompts.reconcile(r.value, askedAt)
  })
  stopWatch = live.follow(
    "Watch",
    {},
    (event) => {
      setAuth("connected", "connected")
      onShared(event, undefined)
      // any session's turn that ends changes the list (its turn count, its time)
      if (event.type === "turn.completed" || event.type === "turn.failed") void refreshSessions()
    },
    (error) => {
      if (mine !== generation) return
      setAuth("disconnected", `connection lost (${error ?? "the stream ended"}): reconnecting…`)
      // the next call opens the connection again; the token is checked again first, as serve may have changed
      setTimeout(() => void retry(token, mine), 2000)
    }
  )
}

const retry = async (token: string, mine: number) => {
  if (mine !== generation || connection === undefined) return
  const check = await Connection.checkToken(token)
  if (check === "unauthorized") return unauthorized("serve no longer accepts this token")
  if (check === "unreachable") return void setTimeout(() => void retry(token, mine), 2000)
  const health = await connection.call("Health")
  if (!health.ok) return void setTimeout(() => void retry(token, mine), 1000)
  setAuth("connected", "connected")
  watch(token, mine)
  void refreshSessions()
  // the streams the page followed ended with the connection: the selected session's turn may still run
  void reattach()
}

const disconnect = async () => {
  generation++
  stopWatch?.()
  live.detach()
  const old = connection
  connection = undefined
  await old?.close()
}

const unauthorized = async (problem: string) => {
  await disconnect()
  Connection.forgetToken()
  setAuth("unauthorized", "unauthorized")
  showTokenForm(`${problem[0]!.toUpperCase()}${problem.slice(1)}.`)
}

const start = async (token: string | undefined) => {
  if (token === undefined || token === "") return unauthorized("no token given (open the link `serve` printed, or paste the token)")
  await disconnect()
  const mine = generation
  setAuth("connecting", "checking the token…")
  const check = await Connection.checkToken(token)
  if (check === "unauthorized") return unauthorized("serve refused this token")
  if (check === "unreachable") {
    setAuth("unreachable", "serve is not reachable")
    return showTokenForm("serve did not answer: is it still running? Connect again once it is.")
  }
  Connection.storeToken(token)
  connection = Connection.connect(token)
  if (mine !== generation) return
  page.tokenPanel.hidden = true
  page.app.hidden = false
  page.forget.hidden = false
  setAuth("connected", "connected")
  const health = await connection.call("Health")
  if (health.ok) page.serveInfo.textContent = `serve ${health.value.version} · ${health.value.state_dir}`
  watch(token, mine)
  await refreshSessions()
  updateControls()
  // a reload comes back to the session it showed, and follows its running turn
  const remembered = Connection.sessionInAddress()
  if (remembered !== undefined && selected === undefined) await select(remembered)
}

page.tokenForm.addEventListener("submit", (e) => {
  e.preventDefault()
  const token = page.tokenInput.value.trim()
  page.tokenInput.value = ""
  void start(token)
})
page.forget.addEventListener("click", () => void unauthorized("the token was forgotten; paste it again to reconnect"))
page.promptForm.addEventListener("submit", (e) => {
  e.preventDefault()
  sendPrompt()
})
page.prompt.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    e.preventDefault()
    sendPrompt()
  }
})
page.newSession.addEventListener("click", () => void select(undefined))
page.refreshSessions.addEventListener("click", () => void refreshSessions())
page.interrupt.addEventListener("click", () => void interrupt())
page.compact.addEventListener("click", () => void compact())
page.tabs.sessions.addEventListener("click", () => showTab("sessions"))
page.tabs.threads.addEventListener("click", () => showTab("threads"))
page.refreshThreads.addEventListener("click", () => void loadThreads())

updateControls()
void start(Connection.takeToken())
