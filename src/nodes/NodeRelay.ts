// Owns the harness's relay between one attempt's app-server and a paired node's exec-server (S26): the app-server is
// told the node lives at ws://127.0.0.1:PORT/<secret> (loopback, an unguessable path), and every byte of the node's
// exec traffic passes through here. It refuses, before anything reaches the node: an upgrade carrying authentication,
// cookie, API-key or other credential headers; any message whose params carry such HTTP headers (`http/request`);
// a resume of an earlier node session; a non-JSON or binary frame. It watches the link (close, or a missed ping) and
// on loss ends the attempt: every socket is dropped and every later upgrade is refused (410), so only a fresh attempt
// can follow. Processes the node still runs for a closed session (the exec-server keeps them for a resume) are ended
// by resuming that session once, only to `process/terminate` them. It never reads or changes a message's meaning
// beyond that, and never sends the app-server's headers on: the upstream request carries only the node's own token.
import { Deferred, Duration, Effect, Option, Queue, Redacted, Ref, Schedule, type Scope } from "effect"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { AddressInfo, Socket } from "node:net"
// @ts-expect-error `ws` ships no type declarations (see WebSocketTransport.ts)
import { WebSocket as WsImpl, WebSocketServer as WssImpl } from "ws"
import { NodeUnreachable } from "./errors.js"
import { sensitiveMessageHeaders, sensitiveRequestHeaders } from "./HeaderFilter.js"

interface Ws {
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
interface Wss {
  handleUpgrade(req: http.IncomingMessage, socket: Socket, head: Buffer, done: (ws: Ws) => void): void
  close(): void
}
const WsServer = WssImpl as new (options: Record<string, unknown>) => Wss
const OPEN = 1

export interface Refusal {
  readonly at: "upgrade" | "message"
  readonly reason: string
  readonly method?: string | undefined
  readonly headers: ReadonlyArray<string>
}

export interface CleanupReport {
  readonly sessionId: string
  readonly processIds: ReadonlyArray<string>
  readonly outcome: "terminated" | "failed"
  readonly detail: string
}

export interface RelayOptions {
  readonly node: string
  /** the node's exec-server URL (checked by the pairing: wss://, or ws:// to loopback) */
  readonly url: string
  readonly token: Option.Option<Redacted.Redacted<string>>
  /** how often the link is pinged; a ping unanswered by the next one ends the attempt */
  readonly pingInterval?: Duration.DurationInput | undefined
  /** one cleanup try (connect, resume, terminate); tried up to `cleanupTries` times */
  readonly cleanupTimeout?: Duration.DurationInput | undefined
  readonly cleanupTries?: number | undefined
  readonly maxFrameBytes?: number | undefined
}

export const defaults = {
  pingInterval: Duration.seconds(5),
  cleanupTimeout: Duration.seconds(5),
  cleanupTries: 3,
  maxFrameBytes: 8 * 1024 * 1024
} as const

export interface NodeRelay {
  /** what the app-server's `environment/add` gets as `execServerUrl` */
  readonly url: string
  /** completes with the reason when the link to the node is lost */
  readonly lost: Effect.Effect<string>
  readonly isLost: Effect.Effect<boolean>
  readonly refusals: Effect.Effect<ReadonlyArray<Refusal>>
  /** process ids the node runs for this attempt right now (as the relay saw them start and end) */
  readonly running: Effect.Effect<ReadonlyArray<string>>
  readonly cleanups: Effect.Effect<ReadonlyArray<CleanupReport>>
}

interface Session {
  released: boolean
  nodeSessionId: string | undefined
  initializeId: unknown
  readonly running: Set<string>
  readonly startIds: Map<unknown, string>
}

const rpcError = (id: unknown, message: string) => JSON.stringify({ id, error: { code: -32600, message } })

const refuseUpgrade = (socket: Socket, status: number, text: string, reason: string) => {
  socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(reason)}\r\n\r\n${reason}`)
}

/** Resumes a node session only to terminate its processes; resolves with what the node answered. */
const terminateDetached = (options: RelayOptions, sessionId: string, ids: ReadonlyArray<string>) =>
  Effect.async<string, string>((resume) => {
    const headers = Option.match(options.token, { onNone: () => ({}), onSome: (t) => ({ Authorization: `Bearer ${Redacted.value(t)}` }) })
    const ws = new WsClient(options.url, { headers, perMessageDeflate: false, followRedirects: false })
    const answers: Array<string> = []
    let done = false
    const finish = (e: Effect.Effect<string, string>) => {
      if (done) return
      done = true
      ws.terminate()
      resume(e)
    }
    ws.on("error", (e) => finish(Effect.fail(e.message)))
    ws.on("close", (code) => finish(Effect.fail(`closed (${code})`)))
    ws.on("open", () => {
      ws.send(JSON.stringify({ id: 1, method: "initialize", params: { clientName: "codex-harness-cleanup", resumeSessionId: sessionId } }))
    })
    ws.on("message", (data) => {
      // a node that answers with something other than JSON fails the cleanup; it must never throw in this callback
      let m: { id?: unknown; result?: unknown; error?: { message?: string } }
      try {
        m = JSON.parse(data.toString("utf8")) as typeof m
      } catch {
        return finish(Effect.fail("the node answered with something other than JSON"))
      }
      if (typeof m !== "object" || m === null) return finish(Effect.fail("the node answered with something other than a JSON object"))
      if (m.id === 1) {
        if (m.error !== undefined) return finish(Effect.fail(`resume refused: ${m.error.message ?? ""}`))
        ws.send(JSON.stringify({ method: "initialized", params: {} }))
        ids.forEach((id, i) => ws.send(JSON.stringify({ id: 2 + i, method: "process/terminate", params: { processId: id } })))
        if (ids.length === 0) finish(Effect.succeed(""))
      } else if (typeof m.id === "number" && m.id >= 2) {
        answers.push(`${ids[m.id - 2]}: ${m.error !== undefined ? `error ${m.error.message ?? ""}` : JSON.stringify(m.result)}`)
        if (answers.length === ids.length) finish(Effect.succeed(answers.join("; ")))
      }
    })
    return Effect.sync(() => finish(Effect.fail("interrupted")))
  })

/** Listens on loopback for this attempt's app-server; closes (and ends the node's leftover processes) with the Scope. */
export const make = (options: RelayOptions): Effect.Effect<NodeRelay, NodeUnreachable, Scope.Scope> =>
  Effect.gen(function* () {
    const secret = crypto.randomBytes(24).toString("base64url")
    const lost = yield* Deferred.make<string>()
    const refusals = yield* Ref.make<ReadonlyArray<Refusal>>([])
    const reports = yield* Ref.make<ReadonlyArray<CleanupReport>>([])
    const toClean = yield* Queue.unbounded<{ readonly sessionId: string; readonly ids: ReadonlyArray<string> }>()
    const inFlight = yield* Ref.make(0)
    const sessions = new Set<Session>()
    const sockets = new Set<Ws>()
    let closing = false
    let linkLost: string | undefined
    const pingMs = Duration.toMillis(Duration.decode(options.pingInterval ?? defaults.pingInterval))
    const maxPayload = options.maxFrameBytes ?? defaults.maxFrameBytes

    // bridge: called from socket callbacks
    const refuse = (r: Refusal) => Effect.runSync(Ref.update(refusals, (all) => [...all, r]))
    const loseLink = (reason: string) => {
      if (closing || linkLost !== undefined) return
      linkLost = reason
      // bridge: called from the sockets' close and ping-timer callbacks
      Deferred.unsafeDone(lost, Effect.succeed(reason))
      for (const s of sockets) s.terminate()
    }
    const release = (session: Session) => {
      if (session.released) return
      session.released = true
      sessions.delete(session)
      if (session.running.size > 0 && session.nodeSessionId !== undefined) {
        Effect.runSync(Ref.update(inFlight, (n) => n + 1))
        // bridge: called from the upstream socket's close callback
        toClean.unsafeOffer({ sessionId: session.nodeSessionId, ids: [...session.running] })
      }
    }

    const connect = (down: Ws) => {
      const session: Session = { released: false, nodeSessionId: undefined, initializeId: undefined, running: new Set(), startIds: new Map() }
      sessions.add(session)
      sockets.add(down)
      const headers = Option.match(options.token, { onNone: () => ({}), onSome: (t) => ({ Authorization: `Bearer ${Redacted.value(t)}` }) })
      const up = new WsClient(options.url, { headers, perMessageDeflate: false, followRedirects: false, maxPayload })
      sockets.add(up)
      const queued: Array<string> = []
      let upOpen = false
      let downClosed = false
      let upClosed = false
      let alive = true
      const timer = setInterval(() => {
        if (!upOpen) return
        if (!alive) {
          loseLink(`no answer to a ping within ${pingMs * 2} ms`)
          up.terminate()
          return
        }
        alive = false
        up.ping()
      }, pingMs)
      up.on("pong", () => {
        alive = true
      })
      up.on("open", () => {
        upOpen = true
        for (const m of queued.splice(0)) up.send(m)
      })
      up.on("error", () => {})
      up.on("close", (code) => {
        upClosed = true
        clearInterval(timer)
        sockets.delete(up)
        if (!downClosed) loseLink(upOpen ? `the node closed the link (${code})` : `could not reach the node (${code})`)
        release(session)
      })
      down.on("error", () => {})
      down.on("close", () => {
        downClosed = true
        sockets.delete(down)
        if (!upClosed) up.close(1000)
      })
      down.on("message", (data, isBinary) => {
        if (isBinary) return down.close(1003, "text frames only")
        let message: Record<string, unknown>
        const text = data.toString("utf8")
        try {
          message = JSON.parse(text) as Record<string, unknown>
        } catch {
          return down.close(1007, "not JSON")
        }
        if (typeof message !== "object" || message === null || Array.isArray(message)) return down.close(1007, "not a JSON object")
        const method = typeof message.method === "string" ? message.method : undefined
        const params = (message.params ?? {}) as Record<string, unknown>
        const names = sensitiveMessageHeaders(message)
        if (names.length > 0) {
          refuse({ at: "message", reason: "sensitive HTTP headers", method, headers: names })
          if (message.id !== undefined) {
            down.send(rpcError(message.id, `refused by codex-harness: credential headers (${names.join(", ")}) never go to a node; authenticated HTTP runs on the harness`))
          }
          return
        }
        if (method === "initialize") {
          if (params.resumeSessionId !== undefined && params.resumeSessionId !== null) {
            refuse({ at: "message", reason: "resume of an earlier node session", method, headers: [] })
            return down.send(rpcError(message.id, "refused by codex-harness: a node attempt never resumes a node session; start a fresh attempt"))
          }
          session.initializeId = message.id
        }
        if (method === "process/start" && typeof params.processId === "string") {
          session.running.add(params.processId)
          session.startIds.set(message.id, params.processId)
        }
        if (upOpen && up.readyState === OPEN) up.send(text)
        else queued.push(text)
      })
      up.on("message", (data) => {
        const text = data.toString("utf8")
        try {
          const m = JSON.parse(text) as { id?: unknown; method?: string; params?: { processId?: unknown }; result?: { sessionId?: unknown }; error?: unknown }
          if (m.method === undefined && m.id !== undefined && m.id === session.initializeId && typeof m.result?.sessionId === "string") {
            session.nodeSessionId = m.result.sessionId
          }
          if (m.method === undefined && m.error !== undefined && session.startIds.has(m.id)) session.running.delete(session.startIds.get(m.id)!)
          if ((m.method === "process/exited" || m.method === "process/closed") && typeof m.params?.processId === "string") {
            session.running.delete(m.params.processId)
          }
        } catch {
          // the node's frames are passed on as they are; only the relay's bookkeeping needs them parsed
        }
        if (down.readyState === OPEN) down.send(text)
      })
    }

    // forked before the server, so it is still there while the server's finalizer waits for the last cleanups
    const cleanupTimeout = options.cleanupTimeout ?? defaults.cleanupTimeout
    const tries = options.cleanupTries ?? defaults.cleanupTries
    yield* Queue.take(toClean).pipe(
      Effect.flatMap(({ ids, sessionId }) =>
        terminateDetached(options, sessionId, ids).pipe(
          Effect.timeoutFail({ duration: cleanupTimeout, onTimeout: () => "timed out" }),
          Effect.retry({ times: tries - 1, schedule: Schedule.spaced(Duration.millis(250)) }),
          Effect.match({
            onFailure: (detail): CleanupReport => ({ sessionId, processIds: ids, outcome: "failed", detail }),
            onSuccess: (detail): CleanupReport => ({ sessionId, processIds: ids, outcome: "terminated", detail })
          }),
          Effect.tap((report) =>
            report.outcome === "failed"
              ? Effect.logWarning(`node ${options.node}: could not end processes ${ids.join(", ")} (${report.detail}); they may still run there`)
              : Effect.void
          ),
          Effect.flatMap((report) => Ref.update(reports, (all) => [...all, report])),
          Effect.ensuring(Ref.update(inFlight, (n) => n - 1))
        )
      ),
      Effect.forever,
      Effect.forkScoped
    )

    const wss = new WsServer({ noServer: true, maxPayload, perMessageDeflate: false })
    const server = http.createServer((_req, res) => {
      res.writeHead(426, { "content-type": "text/plain" }).end("WebSocket only")
    })
    server.on("upgrade", (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
      if (req.url !== `/${secret}`) return refuseUpgrade(socket, 404, "Not Found", "unknown attempt")
      if (linkLost !== undefined || closing) {
        return refuseUpgrade(socket, 410, "Gone", "the link to the node was lost: this attempt is over, start a fresh one")
      }
      const names = sensitiveRequestHeaders(req.headers)
      if (names.length > 0) {
        refuse({ at: "upgrade", reason: "sensitive headers on the upgrade", headers: names })
        return refuseUpgrade(socket, 403, "Forbidden", `credential headers (${names.join(", ")}) never go to a node`)
      }
      wss.handleUpgrade(req, socket, head, connect)
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number, NodeUnreachable>((resume) => {
        server.once("error", (e) => resume(Effect.fail(new NodeUnreachable({ node: options.node, reason: `relay: ${e.message}` }))))
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.gen(function* () {
          closing = true
          for (const s of sockets) s.close(1001, "attempt over")
          wss.close()
          yield* Effect.async<void>((resume) => {
            server.close(() => resume(Effect.void))
            server.closeAllConnections()
          })
          // the node's leftover processes are ended before the attempt counts as gone (bounded by the cleanup tries)
          yield* Effect.forEach(sessions, (s) => Effect.sync(() => release(s)))
          yield* Ref.get(inFlight).pipe(
            Effect.repeat({ until: (n) => n === 0, schedule: Schedule.spaced(Duration.millis(20)) }),
            Effect.timeoutOption(Duration.times(Duration.decode(options.cleanupTimeout ?? defaults.cleanupTimeout), (options.cleanupTries ?? defaults.cleanupTries) + 1))
          )
        })
    )

    return {
      url: `ws://127.0.0.1:${port}/${secret}`,
      lost: Deferred.await(lost),
      isLost: Deferred.isDone(lost),
      refusals: Ref.get(refusals),
      running: Effect.sync(() => [...sessions].flatMap((s) => [...s.running])),
      cleanups: Ref.get(reports)
    } satisfies NodeRelay
  })
