// The selected session's live work as the page follows it. serve's session work registry owns every run: a message
// sent with StartTurn starts a turn, is steered into the running one or is queued after it (the stream's
// `message.accepted` says which), and its stream then carries the events of the run that carries it. The run does not
// belong to the stream: a page that goes away (a reload, a closed tab) leaves it running, and a page that comes back
// follows it again with Watch for the session. Nothing here calls Interrupt: only the page's Interrupt button does.
//
// Several streams can carry the same run (a message steered into the run another message started; messages collected
// into one turn; a Watch and a message sent while watching). The log shows each run once: one stream at a time is the
// feed, drawn as it comes; the others wait, their events kept, until their run is known (by its turn id). A stream whose
// run the log already shows only says what became of its message; one whose run is a later turn (a queued message)
// becomes the feed when the current feed ends.
import type { ControlEvent } from "../../../schemas/control.js"
import type { Connection } from "./connection.js"
import type { Disposition, SentMessage, TurnView } from "./turnView.js"

interface Source {
  readonly kind: "message" | "watch"
  sessionId: string | undefined
  /** feed: drawn; pending: run not known yet (events kept); joined: its run is (or was) drawn by another source */
  role: "feed" | "pending" | "joined"
  disposition: Disposition | undefined
  /** the turn its events belong to, from the first event that names one */
  turnId: string | undefined
  /** its run's outcome (turn.completed or turn.failed) came */
  outcome: boolean
  /** how many of its events came */
  seen: number
  ended: boolean
  error: string | undefined
  readonly buffer: Array<ControlEvent>
  readonly message: SentMessage | undefined
  stop: () => void
}

export interface LiveDeps {
  readonly connection: () => Connection | undefined
  readonly view: TurnView
  /** every event of every stream (approval and question cards, the sessions list) */
  readonly shared: (event: ControlEvent, sessionId: string | undefined) => void
  /** a message's session is known (a new session's id comes with its stream's first event) */
  readonly sessionKnown: (sessionId: string) => void
  /** something started or ended: the page's controls may change */
  readonly changed: () => void
  /** a message's stream ended (its run's records are written by then: the sessions list can say so) */
  readonly messageEnded: () => void
}

export interface Live {
  /** sends a message to the session (undefined: a new one) and follows what carries it */
  readonly send: (prompt: string, sessionId: string | undefined) => void
  /** follows the session's events from now on (a turn runs there that this page is not following) */
  readonly attach: (sessionId: string, turnId: string | undefined) => void
  /** stops following everything (another session selected, the connection closed); the runs go on in serve */
  readonly detach: () => void
  /** a turn is drawn running, or a message sent from this page waits for its run */
  readonly busy: () => boolean
  /** a Watch follows this session */
  readonly watching: (sessionId: string) => boolean
  /** the session the feed draws */
  readonly session: () => string | undefined
  /** serve no longer lists the session's turn: if its Watch has brought nothing, the turn ended before the Watch began */
  readonly endedUnseen: (sessionId: string) => void
  /** this page asked serve to interrupt the turn it draws (an interrupted turn's stream may end without an outcome) */
  readonly interruptSent: (sent: boolean) => void
}

const isTerminal = (e: ControlEvent) => e.type === "turn.completed" || e.type === "turn.failed"

/** the turn an event names, when it names one */
const turnOf = (e: ControlEvent): string | undefined => {
  switch (e.type) {
    case "turn.started":
    case "turn.completed":
    case "turn.failed":
    case "item.started":
    case "item.completed":
      return e.turn_id
    default:
      return undefined
  }
}

export const make = (deps: LiveDeps): Live => {
  let sources: Array<Source> = []
  let feed: Source | undefined
  /** the turns the log has drawn (or is drawing) */
  const drawn = new Set<string>()
  let interrupting = false

  const draw = (e: ControlEvent) => {
    const turnId = turnOf(e)
    if (turnId !== undefined) drawn.add(turnId)
    if (e.type === "turn.started") interrupting = false
    deps.view.event(e)
  }

  /** a waiting source whose run is a turn the log has not drawn: by its turn id, or (none came) by its outcome alone */
  const ownRun = (s: Source) =>
    s.turnId !== undefined
      ? !drawn.has(s.turnId)
      : s.ended && s.outcome && (s.disposition === "start" || s.disposition === "queue")

  const becomeFeed = (s: Source) => {
    feed = s
    s.role = "feed"
    for (const e of s.buffer.splice(0)) draw(e)
    if (s.ended) feedEnded(s)
  }

  /** the next waiting run, in the order its messages were sent */
  const promote = () => {
    // a waiting stream whose run has been drawn since (collected into the same turn as the feed's) only says what
    // became of its message: ended, it is done with
    for (const s of sources) {
      if (s.role === "pending" && s.turnId !== undefined && drawn.has(s.turnId)) {
        s.role = "joined"
        s.buffer.length = 0
      }
    }
    sources = sources.filter((s) => !(s.role === "joined" && s.ended))
    while (feed === undefined) {
      const next = sources.find((s) => s.role === "pending" && ownRun(s))
      if (next === undefined) return
      becomeFeed(next)
    }
  }

  const feedEnded = (s: Source) => {
    // a Watch carries every run of the session: it left a turn unfinished only if the log still shows one running
    if (s.kind === "watch" ? deps.view.state() === "running" : !s.outcome) {
      if (s.error !== undefined) deps.view.streamFailed(s.error)
      else deps.view.endedWithoutOutcome(interrupting)
    }
    feed = undefined
    sources = sources.filter((x) => x !== s)
  }

  const onEvent = (s: Source, e: ControlEvent) => {
    if (!sources.includes(s)) return
    s.seen++
    deps.shared(e, s.sessionId)
    if (e.type === "session.selected") {
      s.sessionId = e.session_id
      deps.sessionKnown(e.session_id)
    }
    if (e.type === "message.accepted") {
      s.disposition = e.disposition
      s.message?.accepted(e.disposition, e.mode)
      // a Watch draws every run of the session: the message's stream only says what became of it
      if (feed?.kind === "watch") {
        s.role = "joined"
        s.buffer.length = 0
      } else if (e.disposition === "start" && feed === undefined) {
        becomeFeed(s)
      }
      return deps.changed()
    }
    if (isTerminal(e)) s.outcome = true
    s.turnId ??= turnOf(e)
    if (s.role === "feed") return draw(e)
    if (s.role === "joined") return
    s.buffer.push(e)
    if (s.turnId !== undefined && drawn.has(s.turnId)) {
      // steered into (or collected with) the run the log draws
      s.role = "joined"
      s.buffer.length = 0
      return
    }
    promote()
  }

  const onEnd = (s: Source, error: string | undefined) => {
    if (!sources.includes(s)) return
    s.ended = true
    s.error = error
    if (s.role === "feed") {
      feedEnded(s)
    } else if (s.role === "joined") {
      sources = sources.filter((x) => x !== s)
    } else if (!(s.role === "pending" && ownRun(s))) {
      // refused before serve took it (no disposition), or its run was drawn by another source
      if (error !== undefined && s.disposition === undefined) {
        if (feed === undefined && sources.length === 1) deps.view.streamFailed(error)
        s.message?.refused(error)
      }
      sources = sources.filter((x) => x !== s)
    }
    promote()
    deps.changed()
    if (s.kind === "message") deps.messageEnded()
  }

  const follow = (s: Source, start: (c: Connection) => () => void) => {
    const connection = deps.connection()
    if (connection === undefined) return
    sources.push(s)
    s.stop = start(connection)
    deps.changed()
  }

  const newSource = (kind: Source["kind"], sessionId: string | undefined, message?: SentMessage): Source => ({
    kind,
    sessionId,
    role: "pending",
    disposition: undefined,
    turnId: undefined,
    outcome: false,
    seen: 0,
    ended: false,
    error: undefined,
    buffer: [],
    message,
    stop: () => {}
  })

  const watching = (sessionId: string) => sources.some((s) => s.kind === "watch" && s.sessionId === sessionId)

  return {
    send: (prompt, sessionId) => {
      const s = newSource("message", sessionId, deps.view.sent(prompt))
      follow(s, (c) =>
        c.follow(
          "StartTurn",
          sessionId === undefined ? { prompt } : { session: sessionId, prompt },
          (e) => onEvent(s, e),
          (error) => onEnd(s, error)
        ))
    },
    attach: (sessionId, turnId) => {
      if (watching(sessionId)) return
      if (turnId !== undefined) drawn.add(turnId)
      const s = newSource("watch", sessionId)
      deps.view.following(sessionId)
      // what a message stream of this page was drawing is drawn by the Watch from here on
      if (feed !== undefined) feed.role = "joined"
      feed = s
      s.role = "feed"
      follow(s, (c) => c.follow("Watch", { session: sessionId }, (e) => onEvent(s, e), (error) => onEnd(s, error)))
    },
    detach: () => {
      const stopping = sources
      // dropped first: the streams' ends (their stop is an interruption) then find nothing to do
      sources = []
      feed = undefined
      drawn.clear()
      interrupting = false
      for (const s of stopping) s.stop()
      deps.changed()
    },
    busy: () => deps.view.state() === "running" || sources.some((s) => s.kind === "message"),
    watching,
    session: () => feed?.sessionId ?? sources[0]?.sessionId,
    endedUnseen: (sessionId) => {
      const s = feed
      // an event on its way still draws the turn's real outcome over this
      if (s?.kind === "watch" && s.sessionId === sessionId && s.seen === 0) deps.view.endedUnseen()
    },
    interruptSent: (sent) => {
      interrupting = sent
    }
  }
}
