// What a client sends a real `codex-harness serve` is bounded while it is read: a POST /rpc body past the bound is refused
// with 413 before it is read (411 when its size is unknown), a WebSocket message past it closes that socket with 1009
// while it arrives, and a slow sender holds only its own connection. The bound is 4 MiB by default, `--max-request-bytes`
// or the config's `serve.maxRequestBytes` otherwise. After each refusal the serve answers the next client.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
// @ts-expect-error `ws` ships no type declarations
import { WebSocket } from "ws"
import * as ControlClient from "../../src/control/ControlClient.js"
import * as ControlServer from "../../src/control/ControlServer.js"
import { runBin } from "../support/cli.js"
import { fixture } from "../support/harness.js"
import { rawAnswer, request, type Served, startServe } from "../support/serve.js"
import { answersHealth, authHeaders, type Endpoint, health, healthOf, overWebSocket } from "../support/serveBounds.js"

/** a raw connection that upgrades to a WebSocket and then sends the first `sent` bytes of a masked text frame of `declared` */
const halfSentFrame = (s: Served, declared: number, sent: number) =>
  Effect.acquireRelease(
    Effect.async<net.Socket>((resume) => {
      const socket = net.connect(s.port, "127.0.0.1", () =>
        socket.write(
          `GET /rpc HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
            `Sec-WebSocket-Key: ${crypto.randomBytes(16).toString("base64")}\r\nSec-WebSocket-Protocol: ${ControlClient.protocol}, ${ControlClient.bearerProtocolPrefix}${s.token}\r\n\r\n`
        ))
      socket.on("error", () => {})
      socket.once("data", (head: Buffer) => {
        if (!head.toString("latin1").startsWith("HTTP/1.1 101")) return resume(Effect.die(new Error(`no upgrade: ${head.toString("latin1")}`)))
        // FIN + text, masked, a 64-bit length, the mask, then only part of the payload
        const header = Buffer.alloc(14)
        header[0] = 0x81
        header[1] = 0x80 | 127
        header.writeBigUInt64BE(BigInt(declared), 2)
        crypto.randomFillSync(header, 10, 4)
        socket.write(Buffer.concat([header, Buffer.alloc(sent, 0x20)]))
        resume(Effect.succeed(socket))
      })
    }).pipe(Effect.timeout("120 seconds")),
    (socket) => Effect.sync(() => socket.destroy())
  )

/** a started serve as the bounds helpers take it */
const endpoint = (s: Served): Endpoint => ({ url: s.url, port: s.port, token: s.token, pid: s.serve.child.pid! })

describe("serve's bounds on what a client sends", () => {
  it.scopedLive("a request body past the 4 MiB bound is refused with 413 before it is read, one of unknown size with 411; the serve answers on", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const s = yield* startServe(f)
      const max = ControlServer.defaultMaxRequestBytes
      const auth = `Host: 127.0.0.1:${s.port}\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: application/x-ndjson\r\n`
      // the headers alone: the answer comes before any body is sent (a client sending the body would wait for nothing)
      const declared = yield* rawAnswer(s.port, `POST /rpc HTTP/1.1\r\n${auth}Content-Length: ${max + 1}\r\n\r\n`)
      expect(declared).toMatch(/^HTTP\/1\.1 413 /)
      expect(declared).toContain(`the request body is larger than ${max} bytes`)
      const chunked = yield* rawAnswer(s.port, `POST /rpc HTTP/1.1\r\n${auth}Transfer-Encoding: chunked\r\n\r\n`)
      expect(chunked).toMatch(/^HTTP\/1\.1 411 /)
      // the control: a request of exactly the bound is read and answered
      const ok = yield* request(s.port, { method: "POST", headers: authHeaders(endpoint(s)), body: healthOf(max) })
      expect(ok.status).toBe(200)
      expect(ok.body).toContain(`"pid":${s.serve.child.pid}`)
    }))

  it.scopedLive("a WebSocket message past the bound closes its socket with 1009; one of exactly the bound is answered; the serve answers on", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const s = yield* startServe(f)
      const max = ControlServer.defaultMaxRequestBytes
      const over = yield* overWebSocket(endpoint(s), healthOf(max + 1))
      expect(over).toEqual({ closeCode: 1009, answer: undefined })
      // the control: the same message at the bound is answered on its socket (ws's own limit, 100 MiB, would take both)
      const at = yield* overWebSocket(endpoint(s), healthOf(max))
      expect(at.closeCode).toBeUndefined()
      expect(at.answer).toContain(`"pid":${s.serve.child.pid}`)
      expect(yield* answersHealth(endpoint(s))).toBe(true)
    }))

  it.scopedLive("--max-request-bytes sets the bound for bodies and messages, serve.maxRequestBytes in the config when the flag is absent; out of range is a usage error", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const flagged = yield* startServe(f, ["--max-request-bytes", "65536"])
      const auth = `Host: 127.0.0.1:${flagged.port}\r\nAuthorization: Bearer ${flagged.token}\r\n`
      expect(yield* rawAnswer(flagged.port, `POST /rpc HTTP/1.1\r\n${auth}Content-Length: 65537\r\n\r\n`)).toContain("larger than 65536 bytes")
      expect((yield* overWebSocket(endpoint(flagged), healthOf(65537))).closeCode).toBe(1009)
      expect((yield* overWebSocket(endpoint(flagged), healthOf(65536))).answer).toContain('"pid"')
      // what a person sees: `run` through the serve with a prompt past its bound is told so in one line, exit 2
      const tooLong = yield* runBin(["run", "--state-dir", f.stateDir, "--session", "big", "x".repeat(70_000)])
      expect(tooLong.code).toBe(2)
      expect(tooLong.stderr.trim().split("\n")).toEqual([expect.stringContaining("refused the request as too large (past its --max-request-bytes")])
      expect(yield* f.model.requests).toEqual([])
      yield* Effect.sync(() => flagged.serve.child.kill("SIGTERM"))
      yield* flagged.serve.exited

      fs.writeFileSync(path.join(f.stateDir, "config.json"), JSON.stringify({ serve: { maxRequestBytes: 100_000 } }), { mode: 0o600 })
      const configured = yield* startServe(f)
      const auth2 = `Host: 127.0.0.1:${configured.port}\r\nAuthorization: Bearer ${configured.token}\r\n`
      expect(yield* rawAnswer(configured.port, `POST /rpc HTTP/1.1\r\n${auth2}Content-Length: 100001\r\n\r\n`)).toContain("larger than 100000 bytes")
      expect((yield* overWebSocket(endpoint(configured), healthOf(100_001))).closeCode).toBe(1009)
      yield* Effect.sync(() => configured.serve.child.kill("SIGTERM"))
      yield* configured.serve.exited

      const tooSmall = yield* runBin(["serve", "--state-dir", f.stateDir, "--listen", "127.0.0.1:0", "--max-request-bytes", "10"])
      expect(tooSmall.code).toBe(2)
      expect(tooSmall.stderr.trim().split("\n")).toEqual(["codex-harness: --max-request-bytes must be from 65536 to 268435456, got 10"])
      fs.writeFileSync(path.join(f.stateDir, "config.json"), JSON.stringify({ serve: { maxRequestBytes: 1 } }), { mode: 0o600 })
      const badConfig = yield* runBin(["serve", "--state-dir", f.stateDir, "--listen", "127.0.0.1:0"])
      expect(badConfig.code).not.toBe(0)
      expect(badConfig.stderr.trim().split("\n")).toHaveLength(1)
      expect(badConfig.stderr).toContain("serve.maxRequestBytes: expected an integer from 65536 to 268435456")
    }))

  it.scopedLive("slow senders hold only their own connections: a body and a WebSocket message left half sent, the serve answers another client meanwhile", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const s = yield* startServe(f)
      const body = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const socket = net.connect(s.port, "127.0.0.1", () =>
            socket.write(`POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nAuthorization: Bearer ${s.token}\r\nContent-Length: 4096\r\n\r\n${health.slice(0, 20)}`))
          socket.on("error", () => {})
          return socket
        }),
        (socket) => Effect.sync(() => socket.destroy())
      )
      yield* halfSentFrame(s, 4096, 100)
      yield* halfSentFrame(s, ControlServer.defaultMaxRequestBytes, 1024 * 1024)
      expect(yield* answersHealth(endpoint(s))).toBe(true)
      const ws = yield* overWebSocket(endpoint(s), health + "\n")
      expect(ws.answer).toContain(`"pid":${s.serve.child.pid}`)
      expect(body.destroyed).toBe(false)
    }))
})
