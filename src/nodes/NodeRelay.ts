// Owns the harness's relay between one attempt's app-server and a paired node's exec-server (S26): the app-server is
// told the node lives at ws://127.0.0.1:PORT/<secret> (loopback, an unguessable path), and every byte of the node's
// exec traffic passes through here. It refuses, before anything reaches the node: an upgrade carrying authentication,
// cookie, API-key or other credential headers; any message whose params carry such HTTP headers (`http/request`);
// a resume of an earlier node session; a non-JSON or binary frame. It watches the link (close, or a missed ping) and
// on loss ends the attempt: every socket is dropped and every later upgrade is refused (410), so only a fresh attempt
// can follow. Processes the node still runs for a closed session (the exec-server keeps them for a resume) are ended
// by resuming that session once (a typed ExecServerClient), only to `process/terminate` them. It never reads or changes a
// message's meaning beyond that, and never sends the app-server's headers on: the upstream request carries only the
// node's own token. Each link's frames are decoded and policed by NodeLink; this file owns the listener, the loss of
// the link and the cleanup. Node's server callbacks start fibers through a FiberSet runtime, so they die with the Scope.
import { Deferred, Duration, Effect, FiberSet, Option, Queue, Redacted, Ref, Schedule, type Scope } from "effect"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { AddressInfo, Socket } from "node:net"
// @ts-expect-error `ws` ships no type declarations (see WebSocketTransport.ts)
import { WebSocketServer as WssImpl } from "ws"
import type { ExecWireError } from "../appserver/errors.js"
import * as ExecServerClient from "../appserver/ExecServerClient.js"
import { NodeUnreachable } from "./errors.js"
import { sensitiveRequestHeaders } from "./HeaderFilter.js"
import * as NodeLink from "./NodeLink.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export type { Refusal } from "./NodeLink.js"

interface Wss {
  handleUpgrade(req: http.IncomingMessage, socket: Socket, head: Buffer, done: (ws: NodeLink.Ws) => void): void
  close(): void
}
const WsServer = WssImpl as new (options: Record<string, unknown>) => Wss

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
  readonly refusals: Effect.Effect<ReadonlyArray<NodeLink.Refusal>>
  /** frames of either peer that did not decode as the exec-server protocol (schemas/execServer.ts), in order */
  readonly undecoded: Effect.Effect<ReadonlyArray<ExecWireError>>
  /** process ids the node runs for this attempt right now (as the relay saw them start and end) */
  readonly running: Effect.Effect<ReadonlyArray<string>>
  readonly cleanups: Effect.Effect<ReadonlyArray<CleanupReport>>
}

const refuseUpgrade = (socket: Socket, status: number, text: string, reason: string) => {
  socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(reason)}\r\n\r\n${reason}`)
}

/** Resumes a node session only to terminate its processes; succeeds with what the node answered. */
const terminateDetached = (options: RelayOptions, sessionId: string, ids: ReadonlyArray<string>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* ExecServerClient.connect({
        url: options.url,
        token: options.token,
        clientName: "codex-harness-cleanup",
        resumeSessionId: sessionId
      })
      const answers = yield* Effect.forEach(ids, (processId) =>
        client.request("process/terminate", { processId }).pipe(
          Effect.map((r) => `${processId}: ${JSON.stringify(r)}`),
          Effect.catchTag("ExecRpcError", (e) => Effect.succeed(`${processId}: error ${e.rpcMessage}`))
        ))
      return answers.join("; ")
    })
  ).pipe(Effect.mapError((e) => e.message))

/** Listens on loopback for this attempt's app-server; closes (and ends the node's leftover processes) with the Scope. */
export const make = (options: RelayOptions): Effect.Effect<NodeRelay, NodeUnreachable, Scope.Scope> =>
  Effect.gen(function* () {
    const secret = crypto.randomBytes(24).toString("base64url")
    const lost = yield* Deferred.make<string>()
    const closing = yield* Ref.make(false)
    const refusals = yield* Ref.make<ReadonlyArray<NodeLink.Refusal>>([])
    const undecoded = yield* Ref.make<ReadonlyArray<ExecWireError>>([])
    const reports = yield* Ref.make<ReadonlyArray<CleanupReport>>([])
    const toClean = yield* Queue.unbounded<{ readonly sessionId: string; readonly ids: ReadonlyArray<string> }>()
    const inFlight = yield* Ref.make(0)
    const sessions = new Set<NodeLink.Session>()
    const sockets = new Set<NodeLink.Ws>()
    const pingMs = Duration.toMillis(Duration.decode(options.pingInterval ?? defaults.pingInterval))
    const maxPayload = options.maxFrameBytes ?? defaults.maxFrameBytes

    const context: NodeLink.LinkContext = {
      url: options.url,
      token: options.token,
      pingMs,
      maxPayload,
      sockets,
      sessions,
      refuse: (r) => Ref.update(refusals, (all) => [...all, r]),
      undecoded: (e) =>
        Ref.update(undecoded, (all) => [...all, e]).pipe(
          Effect.zipRight(HarnessLog.debug(`node ${options.node}: ${e.message}`))
        ),
      loseLink: (reason) =>
        Effect.gen(function* () {
          if (yield* Ref.get(closing)) return
          // the first loss ends the attempt; later ones change nothing
          if (!(yield* Deferred.succeed(lost, reason))) return
          for (const s of sockets) s.terminate()
        }),
      release: (session) =>
        Effect.suspend(() => {
          if (session.released) return Effect.void
          session.released = true
          sessions.delete(session)
          if (session.running.size === 0 || session.nodeSessionId === undefined) return Effect.void
          return Ref.update(inFlight, (n) => n + 1).pipe(
            Effect.zipRight(Queue.offer(toClean, { sessionId: session.nodeSessionId, ids: [...session.running] }))
          )
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
              ? HarnessLog.warning(`node ${options.node}: could not end processes ${ids.join(", ")} (${report.detail}); they may still run there`)
              : Effect.void
          ),
          Effect.flatMap((report) => Ref.update(reports, (all) => [...all, report])),
          Effect.ensuring(Ref.update(inFlight, (n) => n - 1))
        )
      ),
      Effect.forever,
      Effect.forkScoped
    )

    // the HTTP server's callbacks start fibers through this runtime: each link's fiber belongs to the relay's scope
    const runFork = yield* FiberSet.makeRuntime<never>()
    const wss = new WsServer({ noServer: true, maxPayload, perMessageDeflate: false })

    const onUpgrade = (req: http.IncomingMessage, socket: Socket, head: Buffer) =>
      Effect.gen(function* () {
        if (req.url !== `/${secret}`) return refuseUpgrade(socket, 404, "Not Found", "unknown attempt")
        if ((yield* Deferred.isDone(lost)) || (yield* Ref.get(closing))) {
          return refuseUpgrade(socket, 410, "Gone", "the link to the node was lost: this attempt is over, start a fresh one")
        }
        const names = sensitiveRequestHeaders(req.headers)
        if (names.length > 0) {
          yield* context.refuse({ at: "upgrade", reason: "sensitive headers on the upgrade", headers: names })
          return refuseUpgrade(socket, 403, "Forbidden", `credential headers (${names.join(", ")}) never go to a node`)
        }
        const events = yield* Queue.unbounded<NodeLink.LinkEvent>()
        const down = yield* Effect.async<NodeLink.Ws>((resume) =>
          wss.handleUpgrade(req, socket, head, (ws) => {
            // attached in the callback itself: the app-server may send its first frame right after the upgrade
            NodeLink.attachAppServer(ws, events)
            resume(Effect.succeed(ws))
          })
        )
        yield* NodeLink.run(context, down, events)
      })

    const server = http.createServer((_req, res) => {
      res.writeHead(426, { "content-type": "text/plain" }).end("WebSocket only")
    })
    server.on("upgrade", (req: http.IncomingMessage, socket: Socket, head: Buffer) => {
      // Node's HTTP server takes its own error listener off a socket it hands to `upgrade`, and ws puts one on only
      // when the fiber below reaches handleUpgrade (or never, for a refused upgrade): a peer that reset the connection
      // in between raised an uncaught ECONNRESET (seen in nodes.test.ts, the app-server reconnecting as a link was
      // cut). Such a socket is destroyed by its error; nothing else is to be done about it.
      socket.on("error", () => {})
      // bridge: Node's upgrade callback; the fiber it starts is owned by the relay's scope (FiberSet runtime)
      runFork(onUpgrade(req, socket, head))
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number, NodeUnreachable>((resume) => {
        server.once("error", (e) => resume(Effect.fail(new NodeUnreachable({ node: options.node, reason: `relay: ${e.message}` }))))
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
      }),
      () =>
        Effect.gen(function* () {
          yield* Ref.set(closing, true)
          for (const s of sockets) s.close(1001, "attempt over")
          wss.close()
          yield* Effect.async<void>((resume) => {
            server.close(() => resume(Effect.void))
            server.closeAllConnections()
          })
          // the node's leftover processes are ended before the attempt counts as gone (bounded by the cleanup tries)
          yield* Effect.forEach([...sessions], context.release, { discard: true })
          yield* Ref.get(inFlight).pipe(
            Effect.repeat({ until: (n) => n === 0, schedule: Schedule.spaced(Duration.millis(20)) }),
            Effect.timeoutOption(Duration.times(Duration.decode(cleanupTimeout), tries + 1))
          )
        })
    )

    return {
      url: `ws://127.0.0.1:${port}/${secret}`,
      lost: Deferred.await(lost),
      isLost: Deferred.isDone(lost),
      refusals: Ref.get(refusals),
      undecoded: Ref.get(undecoded),
      running: Effect.sync(() => [...sessions].flatMap((s) => [...s.running])),
      cleanups: Ref.get(reports)
    } satisfies NodeRelay
  })
