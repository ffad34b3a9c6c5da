// The node relay (S26) reads the exec-server wire through its one decoder: a malformed frame from either peer is a
// typed ExecWireError the relay records and acts on (refuses, closes, or passes on), never a crash; the cleanup client
// fails with a typed error when the node answers its resume with something that does not decode. The node here is a
// scripted WebSocket peer on loopback (no binary): it is what lets the test make a node misbehave.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, Schedule } from "effect"
import * as net from "node:net"
// @ts-expect-error `ws` ships no type declarations
import { WebSocket, WebSocketServer } from "ws"
import * as NodeRelay from "../../src/nodes/NodeRelay.js"

interface FakeNode {
  readonly url: string
  /** every frame each connection received, by connection */
  readonly received: Array<Array<any>>
}

/** A scripted exec-server: answers initialize (a fresh session, or a malformed answer to a resume) and process/start,
 * after which it sends a `process/exited` that does not decode. */
const fakeNode = Effect.acquireRelease(
  Effect.async<{ node: FakeNode; wss: any }>((resume) => {
    const received: Array<Array<any>> = []
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" })
    wss.on("connection", (ws: any) => {
      const log: Array<any> = []
      received.push(log)
      ws.on("message", (data: Buffer) => {
        const m = JSON.parse(data.toString())
        log.push(m)
        if (m.method === "initialize") {
          const result = m.params.resumeSessionId ? { session: "no id here" } : { sessionId: "s-1" }
          ws.send(JSON.stringify({ id: m.id, result }))
        }
        if (m.method === "process/start") {
          ws.send(JSON.stringify({ id: m.id, result: { processId: m.params.processId } }))
          ws.send(JSON.stringify({ method: "process/exited", params: { seq: 2 } }))
        }
      })
    })
    wss.on("listening", () => resume(Effect.succeed({ node: { url: `ws://127.0.0.1:${wss.address().port}`, received }, wss })))
  }),
  ({ wss }) => Effect.sync(() => wss.close())
).pipe(Effect.map(({ node }) => node))

/** The app-server's side of the link: a raw socket to the relay that collects what comes back. */
const appServerSide = (url: string) =>
  Effect.acquireRelease(
    Effect.async<{ ws: any; got: Array<any>; closed: Array<number> }>((resume) => {
      const ws = new WebSocket(url)
      const got: Array<any> = []
      const closed: Array<number> = []
      ws.on("message", (d: Buffer) => got.push(JSON.parse(d.toString())))
      ws.on("close", (code: number) => closed.push(code))
      ws.on("error", () => {})
      ws.on("open", () => resume(Effect.succeed({ ws, got, closed })))
    }),
    ({ ws }) => Effect.sync(() => ws.terminate())
  )

const eventually = (check: () => boolean, what: string) =>
  Effect.suspend(() => (check() ? Effect.void : Effect.fail(what))).pipe(
    Effect.retry({ schedule: Schedule.spaced(Duration.millis(20)), times: 250 })
  )

describe("[S26] the node relay on a malformed exec-server wire", () => {
  it.scopedLive("malformed frames are typed errors: refused or closed from the app-server, passed on from the node; a bad cleanup answer fails the cleanup", () =>
    Effect.gen(function* () {
      const node = yield* fakeNode
      const relay = yield* NodeRelay.make({ node: "n1", url: node.url, token: Option.none(), cleanupTries: 1, cleanupTimeout: Duration.seconds(2) })
      const side = yield* appServerSide(relay.url)
      side.ws.send(JSON.stringify({ id: 1, method: "initialize", params: { clientName: "t", resumeSessionId: null } }))
      yield* eventually(() => side.got.some((m) => m.id === 1), "no initialize answer")

      // a request the relay polices whose params do not decode: answered in the node's place, never passed on
      side.ws.send(JSON.stringify({ id: 2, method: "process/start", params: { processId: 42 } }))
      yield* eventually(() => side.got.some((m) => m.id === 2), "no refusal")
      expect(side.got.find((m) => m.id === 2).error.message).toMatch(/^refused by codex-harness: unexpected process\/start from the app-server/)

      side.ws.send(JSON.stringify({ id: 3, method: "process/start", params: { processId: "p1", argv: ["sleep", "1"] } }))
      yield* eventually(() => side.got.some((m) => m.method === "process/exited"), "the node's frame was not passed on")
      // the node's undecodable notification reached the app-server unchanged, and is on record
      expect(side.got.find((m) => m.method === "process/exited")).toEqual({ method: "process/exited", params: { seq: 2 } })
      expect(node.received[0]!.map((m) => m.id)).toEqual([1, 3])
      expect(yield* relay.running).toEqual(["p1"])

      // not JSON: the link is closed (1007), the relay keeps running and ends what the node still runs
      side.ws.send("{not json")
      yield* eventually(() => side.closed.length > 0, "the link stayed open")
      expect(side.closed).toEqual([1007])
      const undecoded = yield* relay.undecoded
      expect(undecoded.map((e) => `${e._tag} ${e.from} ${e.kind} ${e.method ?? ""}`)).toEqual([
        "ExecWireError app-server params process/start",
        "ExecWireError node params process/exited",
        "ExecWireError app-server notJson "
      ])
      expect((yield* relay.refusals).map((r) => r.reason)).toEqual([expect.stringMatching(/^undecodable: /)])

      // the cleanup resumes the node session; the node's answer does not decode, so the cleanup fails (typed, reported)
      yield* eventually(() => Effect.runSync(relay.cleanups).length === 1, "no cleanup report")
      const [report] = yield* relay.cleanups
      expect(report).toMatchObject({ sessionId: "s-1", processIds: ["p1"], outcome: "failed" })
      expect(report!.detail).toMatch(/unexpected initialize from the node's exec-server/)
      expect(node.received[1]![0]).toMatchObject({ method: "initialize", params: { resumeSessionId: "s-1" } })
    }), 30_000)
})

describe("the node relay's upgrades", () => {
  it.scopedLive("a client that resets its connection while the relay handles its upgrade raises no uncaught error", () =>
    Effect.gen(function* () {
      const node = yield* fakeNode
      const relay = yield* NodeRelay.make({ node: "n1", url: node.url, token: Option.none() })
      const { port } = new URL(relay.url)
      const uncaught: Array<unknown> = []
      const onUncaught = (error: unknown) => void uncaught.push(error)
      yield* Effect.acquireRelease(
        Effect.sync(() => process.on("uncaughtException", onUncaught)),
        () => Effect.sync(() => process.off("uncaughtException", onUncaught))
      )
      const request = (path: string) =>
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
      // each writes an upgrade request (to no attempt: refused with a 404 by the relay's fiber) and resets at once, so
      // the reset reaches the relay's socket between Node's `upgrade` event and the relay's answer
      for (let i = 0; i < 20; i++) {
        yield* Effect.async<void>((resume) => {
          const socket = net.connect(Number(port), "127.0.0.1", () => {
            socket.write(request("/nobody"), () => socket.resetAndDestroy())
          })
          socket.on("error", () => {})
          socket.on("close", () => resume(Effect.void))
        })
      }
      // the receipt that the relay has handled what came before: a later refused upgrade is answered
      const answered = yield* Effect.async<string>((resume) => {
        const socket = net.connect(Number(port), "127.0.0.1", () => socket.write(request("/nobody")))
        let text = ""
        socket.on("data", (chunk: Buffer) => (text += chunk.toString()))
        socket.on("error", () => {})
        socket.on("close", () => resume(Effect.succeed(text)))
      })
      expect(answered).toContain("404")
      expect(uncaught).toEqual([])
    }))
})
