// The Control UI's script (bundled to /ui.js; the page is index.html): a person at a browser drives `serve` through
// the same control API as the CLI. It checks the token, then keeps one WebSocket to /rpc:
//   - Watch (all sessions) for the approvals and questions waiting for any client, and to refresh the sessions list
//     when someone else's turn ends; Pending when it (re)subscribes, to drop cards closed while it was away
//   - StartTurn for this page's turn, drawn as it streams (turnView.ts), its prompts as cards (prompts.ts)
//   - the one-shot calls: ListSessions, ShowSession, Interrupt, Compact, ListThreads, Answer
// No framework: the page is small and everything untrusted goes in as text (dom.ts).
import type { ControlEvent } from "../../../schemas/control.js"
import * as Connection from "./connection.js"
import { byId } from "./dom.js"
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
/** this page's running turn */
let turn: { session: string | undefined; interruptSent: boolean; readonly stop: () => void } | undefined
let stopWatch: (() => void) | undefined
/** bumped on every (re)connect, so a stale retry or stream end does nothing */
let generation = 0

const view = TurnView.make(byId("turn-log"), byId("turn-status"))
const prompts = Prompts.make(byId("prompts"), async (payload) =>
  connection === undefined ? { ok: false, error: "not connected" } : connection.call(connection.client.Answer(payload)))

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
  page.interrupt.disabled = selected === undefined && turn === undefined
  page.compact.disabled = selected === undefined || turn !== undefined
  page.send.disabled = turn !== undefined || connection === undefined
  for (const row of page.sessions.querySelectorAll<HTMLElement>(`[data-testid="session-row"]`)) {
    row.classList.toggle("selected", row.dataset.sessionId === selected)
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
  const result = await connection.call(connection.client.ListSessions())
  if (!result.ok) return say(`sessions: ${result.error}`, "error")
  renderSessions(page.sessions, result.value, selected, (id) => void select(id))
  updateControls()
}

const select = async (sessionId: string | undefined) => {
  if (turn !== undefined) return say("a turn is running: wait for it or interrupt it before switching sessions", "error")
  selected = sessionId
  view.clear()
  page.actionStatus.textContent = ""
  updateControls()
  page.transcript.hidden = sessionId === undefined
  page.transcript.replaceChildren()
  if (sessionId === undefined || connection === undefined) return
  const result = await connection.call(connection.client.ShowSession({ session: sessionId }))
  if (!result.ok) return say(`transcript: ${result.error}`, "error")
  if (selected === sessionId) renderTranscript(page.transcript, result.value.session_id, result.value.records)
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

const sendPrompt = () => {
  const text = page.prompt.value
  if (connection === undefined || text.trim() === "") return
  if (turn !== undefined) return say("a turn is already running", "error")
  page.transcript.hidden = true
  view.begin(text)
  page.prompt.value = ""
  const current: { session: string | undefined; interruptSent: boolean; stop: () => void } = { session: selected, interruptSent: false, stop: () => {} }
  turn = current
  updateControls()
  current.stop = connection.follow(
    connection.client.StartTurn(selected === undefined ? { prompt: text } : { session: selected, prompt: text }),
    (event) => {
      if (event.type === "session.selected") {
        current.session = event.session_id
        selected = event.session_id
        updateControls()
      }
      // a new session is in the list once its turn has started (its file is written by then)
      if (event.type === "turn.started" && page.sessions.querySelector(`[data-session-id="${CSS.escape(event.session_id)}"]`) === null) {
        void refreshSessions()
      }
      onShared(event, current.session)
      view.event(event)
    },
    (error) => {
      if (turn === current) turn = undefined
      if (error !== undefined) view.streamFailed(error)
      else view.endedWithoutOutcome(current.interruptSent)
      updateControls()
      void refreshSessions()
    }
  )
}

const interrupt = async () => {
  const session = turn?.session ?? selected
  if (connection === undefined || session === undefined) return
  // marked before the call: the turn's stream can end before the call's answer arrives
  const mine = turn !== undefined && turn.session === session ? turn : undefined
  if (mine !== undefined) mine.interruptSent = true
  const result = await connection.call(connection.client.Interrupt({ session }))
  if (mine !== undefined && (!result.ok || !result.value.interrupted)) mine.interruptSent = false
  if (!result.ok) return say(`interrupt: ${result.error}`, "error")
  say(result.value.interrupted ? "interrupt sent" : "no turn was running in this session", "ok")
}

const compact = async () => {
  if (connection === undefined || selected === undefined) return
  say("compacting…", "ok")
  page.compact.disabled = true
  const result = await connection.call(connection.client.Compact({ session: selected }))
  updateControls()
  if (!result.ok) return say(`compact: ${result.error}`, "error")
  say(`compacted thread ${result.value.thread_id} in ${(result.value.duration_ms / 1000).toFixed(1)} s`, "ok")
}

const loadThreads = async () => {
  if (connection === undefined) return
  page.threadsStatus.textContent = "loading…"
  const result = await connection.call(connection.client.ListThreads())
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
  void live.call(live.client.Pending()).then((r) => {
    if (r.ok && mine === generation) prompts.reconcile(r.value, askedAt)
  })
  stopWatch = live.follow(
    live.client.Watch({}),
    (event) => {
      setAuth("connected", "connected")
      onShared(event, undefined)
      if ((event.type === "turn.completed" || event.type === "turn.failed") && event.session_id !== turn?.session) void refreshSessions()
    },
    (error) => {
      if (mine !== generation) return
      setAuth("disconnected", `connection lost (${error ?? "the stream ended"}): reconnecting…`)
      // the client's socket reconnects by itself (with backoff); the token is checked again, as serve may have changed
      setTimeout(() => void retry(token, mine), 2000)
    }
  )
}

const retry = async (token: string, mine: number) => {
  if (mine !== generation || connection === undefined) return
  const check = await Connection.checkToken(token)
  if (check === "unauthorized") return unauthorized("serve no longer accepts this token")
  if (check === "unreachable") return void setTimeout(() => void retry(token, mine), 2000)
  const health = await connection.call(connection.client.Health())
  if (!health.ok) return void setTimeout(() => void retry(token, mine), 1000)
  setAuth("connected", "connected")
  watch(token, mine)
  void refreshSessions()
}

const disconnect = async () => {
  generation++
  stopWatch?.()
  turn?.stop()
  turn = undefined
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
  connection = await Connection.connect(token)
  if (mine !== generation) return
  page.tokenPanel.hidden = true
  page.app.hidden = false
  page.forget.hidden = false
  setAuth("connected", "connected")
  const health = await connection.call(connection.client.Health())
  if (health.ok) page.serveInfo.textContent = `serve ${health.value.version} · ${health.value.state_dir}`
  watch(token, mine)
  await refreshSessions()
  updateControls()
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
