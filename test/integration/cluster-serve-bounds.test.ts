// The bounds on what a client sends hold on a cluster serve as on a plain one (serve-bounds.test.ts): a `serve --cluster`
// runner on a throwaway PostgreSQL refuses a POST /rpc body past its bound with 413 before reading it, closes a
// WebSocket message past it with 1009 while it arrives, and answers the next client, a slow sender's half-sent body
// open meanwhile; a body at the bound is answered.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as net from "node:net"
import * as ControlServer from "../../src/control/ControlServer.js"
import { make as makeModel, reply } from "../../src/testing/ScriptedModel.js"
import { killEverything, type Runner, startRunner, tempRoot } from "../support/cluster.js"
import { leftBehind } from "../support/harness.js"
import { rawAnswer, request } from "../support/serve.js"
import { answersHealth, authHeaders, type Endpoint, healthOf, overWebSocket } from "../support/serveBounds.js"
import { withPostgres } from "../support/withPostgres.js"

const pg = withPostgres()
const runners: Array<Runner> = []
afterAll(() => killEverything(runners))

const endpointOf = (r: Runner): Endpoint => ({ url: r.url, port: Number(new URL(r.url).port), token: r.token, pid: r.child.pid! })

describe("a cluster serve's bounds on what a client sends", () => {
  it.live("a body past the bound is refused with 413 before it is read, a WebSocket message past it closes with 1009; the runner answers on, a slow sender beside it, and stops leaving nothing", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const model = yield* makeModel({ fallback: reply.text("unscripted") }).pipe(Scope.extend(scope))
      const root = yield* tempRoot().pipe(Scope.extend(scope))
      const database = yield* pg().createDatabase("bounds")
      const runner = yield* startRunner({ name: "B", database, providerUrl: model.url, root })
      runners.push(runner)
      const s = endpointOf(runner)
      const max = ControlServer.defaultMaxRequestBytes

      const declared = yield* rawAnswer(s.port, `POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nAuthorization: Bearer ${s.token}\r\n` +
        `Content-Type: application/x-ndjson\r\nContent-Length: ${max + 1}\r\n\r\n`)
      expect(declared).toMatch(/^HTTP\/1\.1 413 /)
      expect(yield* overWebSocket(s, healthOf(max + 1))).toEqual({ closeCode: 1009, answer: undefined })
      // the controls: a body and a message of exactly the bound are answered
      const ok = yield* request(s.port, { method: "POST", headers: authHeaders(s), body: healthOf(max) })
      expect(ok.status).toBe(200)
      expect((yield* overWebSocket(s, healthOf(max))).answer).toContain(`"pid":${s.pid}`)
      expect(yield* answersHealth(s)).toBe(true)

      // a slow sender: a body under the bound, half sent and left open, holds only its own connection
      const slow = yield* Effect.acquireRelease(
        Effect.async<net.Socket>((resume) => {
          const socket = net.connect(s.port, "127.0.0.1", () => {
            socket.write(`POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nAuthorization: Bearer ${s.token}\r\n` +
              `Content-Type: application/x-ndjson\r\nContent-Length: 1000\r\n\r\n${" ".repeat(100)}`)
            resume(Effect.succeed(socket))
          })
          socket.on("error", () => {})
        }),
        (socket) => Effect.sync(() => socket.destroy())
      ).pipe(Scope.extend(scope))
      expect(slow.destroyed).toBe(false)
      expect(yield* answersHealth(s)).toBe(true)

      // stopped with the slow sender still open: its half request must not hold the runner's exit
      runner.child.kill("SIGTERM")
      const exit = yield* runner.exited.pipe(Effect.timeout("60 seconds"))
      expect(exit.signal, runner.stderr()).toBeNull()
      expect(yield* leftBehind(runner.stateDir)).toEqual([])
      yield* Scope.close(scope, Exit.void)
    }), 240_000)
})
