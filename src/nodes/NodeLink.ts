// Owns one link of a node relay (S26): the app-server's socket (down), the socket to the node it opens (up), and the
// relay's policy on every frame between them. The sockets' callbacks only put events on the link's queue; one fiber
// handles them in order, so the link's state is read and written by that fiber alone. Frames are decoded by the
// exec-server wire (src/appserver/ExecServerWire) and passed on byte for byte; what the relay refuses never reaches
// the node: credential headers, a resume of an earlier node session, a request it polices but cannot read, a non-JSON
// or binary frame. It never changes a frame it passes on.
import { Effect, Either, Option, Queue, Redacted } from "effect"
// @ts-expect-error `ws` ships no type declarations (see WebSocketTransport.ts)
import { WebSocket as WsImpl } from "ws"
import { ErrorCodes, type RequestId } from "../../schemas/jsonrpc.js"
import type { ExecWireError } from "../appserver/errors.js"
import * as Wire from "../appserver/ExecServerWire.js"
import { sensitiveMessageHeaders } from "./HeaderFilter.js"

export interface Ws {
  readonly readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  terminate(): void
  ping(): void
  on(event: "message", f: (data: Buffer, isBinary: boolean) => void): void
  on(event: "open" | "pong", f: () => void): void
  on(event: "close", f: (code: number) => void): void
  on(event: "error", f: (e: Error) => void): void
}
const WsClient = WsImpl as new (url: string, options: Record<string, unknown>) => Ws
const OPEN = 1

export interface Refusal {
  readonly at: "upgrade" | "message"
  readonly reason: string
  readonly method?: string | undefined
  readonly headers: ReadonlyArray<string>
}

/** A node session as the relay saw it open: what to end on the node if the link is lost. */
export interface Session {
  released: boolean
  nodeSessionId: string | undefined
  initializeId: RequestId | undefined
  readonly running: Set<string>
  readonly startIds: Map<RequestId, string>
}

/** What a link shares with its relay. */
export interface LinkContext {
  readonly url: string
  readonly token: Option.Option<Redacted.Redacted<string>>
  readonly pingMs: number
  readonly maxPayload: number
  /** every open socket of the relay, so a lost link can drop them all */
  readonly sockets: Set<Ws>
  readonly sessions: Set<Session>
  readonly refuse: (refusal: Refusal) => Effect.Effect<void>
  readonly undecoded: (error: ExecWireError) => Effect.Effect<void>
  readonly loseLink: (reason: string) => Effect.Effect<void>
  /** the link is over: queue the node session's leftover processes for cleanup */
  readonly release: (session: Session) => Effect.Effect<void>
}

export type LinkEvent =
  | { readonly _tag: "FromAppServer"; readonly data: Buffer; readonly isBinary: boolean }
  | { readonly _tag: "AppServerClosed" }
  | { readonly _tag: "FromNode"; readonly data: Buffer }
  | { readonly _tag: "NodeOpen" }
  | { readonly _tag: "NodeClosed"; readonly code: number }
  | { readonly _tag: "Pong" }
  | { readonly _tag: "Tick" }

const enqueue = (events: Queue.Queue<LinkEvent>) => (event: LinkEvent) => {
  // bridge: called from the sockets' callbacks, which must not wait; the queue is unbounded and the link's fiber drains it
  events.unsafeOffer(event)
}

/** Wires the app-server's socket to the link's queue; called in the upgrade callback itself, so no frame is missed. */
export const attachAppServer = (down: Ws, events: Queue.Queue<LinkEvent>): void => {
  const offer = enqueue(events)
  down.on("error", () => {})
  down.on("message", (data, isBinary) => offer({ _tag: "FromAppServer", data, isBinary }))
  down.on("close", () => offer({ _tag: "AppServerClosed" }))
}

const refusedText = (reason: string) => `refused by codex-harness: ${reason}`

/** Runs the link until both sockets have closed (or the relay's scope ends it). */
export const run = (ctx: LinkContext, down: Ws, events: Queue.Queue<LinkEvent>): Effect.Effect<void> =>
  Effect.gen(function* () {
    const session: Session = { released: false, nodeSessionId: undefined, initializeId: undefined, running: new Set(), startIds: new Map() }
    const headers = Option.match(ctx.token, { onNone: () => ({}), onSome: (t) => ({ Authorization: `Bearer ${Redacted.value(t)}` }) })
    const up = yield* Effect.sync(() => {
      ctx.sessions.add(session)
      ctx.sockets.add(down)
      const socket = new WsClient(ctx.url, { headers, perMessageDeflate: false, followRedirects: false, maxPayload: ctx.maxPayload })
      ctx.sockets.add(socket)
      const offer = enqueue(events)
      socket.on("error", () => {})
      socket.on("open", () => offer({ _tag: "NodeOpen" }))
      socket.on("pong", () => offer({ _tag: "Pong" }))
      socket.on("message", (data) => offer({ _tag: "FromNode", data }))
      socket.on("close", (code) => offer({ _tag: "NodeClosed", code }))
      return socket
    })
    // the link's watch: a ping unanswered by the next tick ends the attempt
    yield* Queue.offer(events, { _tag: "Tick" }).pipe(Effect.delay(ctx.pingMs), Effect.forever, Effect.forkScoped)

    const queued: Array<string> = []
    let upOpen = false
    let upClosed = false
    let downClosed = false
    let alive = true

    const toNode = (text: string) => (upOpen && up.readyState === OPEN ? up.send(text) : void queued.push(text))
    const refuse = (refusal: Refusal, id: RequestId | undefined, answer: string) =>
      ctx.refuse(refusal).pipe(
        Effect.zipRight(Effect.sync(() => id !== undefined && down.send(Wire.encodeError(id, ErrorCodes.invalidRequest, refusedText(answer)))))
      )

    const fromAppServer = (data: Buffer, isBinary: boolean): Effect.Effect<void> =>
      Effect.gen(function* () {
        if (isBinary) return down.close(1003, "text frames only")
        const text = data.toString("utf8")
        const decoded = Wire.decodeFromAppServer(text)
        if (Either.isLeft(decoded)) {
          const error = decoded.left
          yield* ctx.undecoded(error)
          if (error.kind === "notJson") return down.close(1007, error.detail)
          // a frame the relay cannot read is not passed on unread: the policy could not be applied to it
          return yield* refuse({ at: "message", reason: `undecodable: ${error.detail}`, method: error.method, headers: [] }, error.id, error.message)
        }
        const frame = decoded.right
        const id = frame._tag === "Notification" || frame._tag === "Response" ? undefined : frame.id
        // reported as sent, in the refusal record
        const method = typeof frame.raw.method === "string" ? frame.raw.method : undefined
        const names = sensitiveMessageHeaders(frame.raw)
        if (names.length > 0) {
          return yield* refuse(
            { at: "message", reason: "sensitive HTTP headers", method, headers: names },
            id,
            `credential headers (${names.join(", ")}) never go to a node; authenticated HTTP runs on the harness`
          )
        }
        switch (frame._tag) {
          case "Initialize": {
            if (frame.params.resumeSessionId !== undefined && frame.params.resumeSessionId !== null) {
              return yield* refuse(
                { at: "message", reason: "resume of an earlier node session", method, headers: [] },
                frame.id,
                "a node attempt never resumes a node session; start a fresh attempt"
              )
            }
            session.initializeId = frame.id
            break
          }
          case "ProcessStart": {
            session.running.add(frame.params.processId)
            session.startIds.set(frame.id, frame.params.processId)
            break
          }
        }
        toNode(text)
      })

    const fromNode = (data: Buffer): Effect.Effect<void> =>
      Effect.gen(function* () {
        const text = data.toString("utf8")
        const decoded = Wire.decodeFromNode(text)
        // the node's frames are passed on as they are; only the relay's bookkeeping needs them decoded
        if (Either.isLeft(decoded)) yield* ctx.undecoded(decoded.left)
        else {
          const frame = decoded.right
          switch (frame._tag) {
            case "Response": {
              if (frame.id === null) break
              if (frame.id === session.initializeId && frame.error === undefined) {
                const opened = Wire.decodeResult("initialize", frame.result)
                if (Either.isRight(opened)) session.nodeSessionId = opened.right.sessionId
                else yield* ctx.undecoded(opened.left)
              }
              const started = session.startIds.get(frame.id)
              if (frame.error !== undefined && started !== undefined) session.running.delete(started)
              break
            }
            case "ProcessExited":
            case "ProcessClosed":
              session.running.delete(frame.params.processId)
              break
          }
        }
        if (down.readyState === OPEN) down.send(text)
      })

    const handle = (event: LinkEvent): Effect.Effect<void> => {
      switch (event._tag) {
        case "FromAppServer":
          return fromAppServer(event.data, event.isBinary)
        case "FromNode":
          return fromNode(event.data)
        case "NodeOpen":
          return Effect.sync(() => {
            upOpen = true
            for (const m of queued.splice(0)) up.send(m)
          })
        case "Pong":
          return Effect.sync(() => void (alive = true))
        case "Tick":
          if (!upOpen || upClosed) return Effect.void
          if (!alive) return ctx.loseLink(`no answer to a ping within ${ctx.pingMs * 2} ms`).pipe(Effect.zipRight(Effect.sync(() => up.terminate())))
          return Effect.sync(() => {
            alive = false
            up.ping()
          })
        case "NodeClosed":
          upClosed = true
          ctx.sockets.delete(up)
          return (downClosed
            ? Effect.void
            : ctx.loseLink(upOpen ? `the node closed the link (${event.code})` : `could not reach the node (${event.code})`)
          ).pipe(Effect.zipRight(ctx.release(session)))
        case "AppServerClosed":
          return Effect.sync(() => {
            downClosed = true
            ctx.sockets.delete(down)
            if (!upClosed) up.close(1000)
          })
      }
    }

    while (!(upClosed && downClosed)) yield* Queue.take(events).pipe(Effect.flatMap(handle))
  }).pipe(Effect.scoped)
