// A real `codex-harness serve` started by a test (bin, a free loopback port, the fixture's model and dirs) and raw ways
// to talk to it: HTTP requests on fresh connections, raw bytes on a socket, WebSocket upgrade headers.
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import * as ControlClient from "../../src/control/ControlClient.js"
import type { Fixture } from "./harness.js"
import { type Running, startBin } from "./process.js"

export const listening = /codex-harness serve: listening on (\S+) for /

export interface Served {
  readonly serve: Running
  readonly url: string
  readonly port: number
  readonly token: string
}

/**
 * Starts `serve` for the fixture (its model, state and work dirs) on a free loopback port and waits for its receipt (the
 * "listening" line). The scope stops it as a person would (SIGTERM, bounded), before the fixture's dirs go.
 */
export const startServe = (f: Fixture, extra: ReadonlyArray<string> = [], listen = "127.0.0.1:0", logLevel?: string) =>
  Effect.gen(function* () {
    const serve = yield* startBin([
      // @effect/cli takes its own --log-level only before the command's other flags
      "serve", ...(logLevel !== undefined ? [`--log-level=${logLevel}`] : []), "--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "--listen", listen, ...extra
    ])
    yield* Effect.addFinalizer(() =>
      serve.child.exitCode !== null || serve.child.signalCode !== null
        ? Effect.void
        : Effect.sync(() => serve.child.kill("SIGTERM")).pipe(Effect.zipRight(serve.exited), Effect.timeout("20 seconds"), Effect.ignore)
    )
    const up = yield* serve.waitFor(({ stderr }) => listening.test(stderr))
    expect(up, serve.stderr()).toBe(true)
    const url = listening.exec(serve.stderr())![1]!
    const token = fs.readFileSync(path.join(f.stateDir, "serve.token"), "utf8").trim()
    return { serve, url, port: Number(new URL(url).port), token } satisfies Served
  })

/** a control API client on its own connection, for the scope */
export const client = (url: string, token: string) =>
  ControlClient.make({ url, token }).pipe(Effect.provide(NodeSocket.layerWebSocketConstructor))

/** one raw HTTP request to the serve: its status (101 when a WebSocket upgrade is accepted) and body */
export const request = (port: number, options: { readonly method: string; readonly path?: string; readonly headers: Record<string, string>; readonly body?: string }) =>
  Effect.async<{ readonly status: number; readonly body: string }>((resume) => {
    // a fresh connection each (no keep-alive pool): a socket whose upgrade was refused is not reused
    const req = http.request({ host: "127.0.0.1", port, method: options.method, path: options.path ?? "/rpc", headers: options.headers, agent: false })
    req.on("response", (res) => {
      let body = ""
      res.on("data", (c: Buffer) => (body += c.toString("utf8")))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body })))
    })
    req.on("upgrade", (res, socket) => {
      socket.destroy()
      resume(Effect.succeed({ status: res.statusCode ?? 0, body: "" }))
    })
    req.on("error", (e) => resume(Effect.die(e)))
    req.end(options.body ?? "")
    return Effect.sync(() => req.destroy())
  }).pipe(Effect.timeout("60 seconds"))

/** what the serve answers to raw request bytes, read until it closes the connection or the bound passes */
export const rawAnswer = (port: number, bytes: string) =>
  Effect.async<string>((resume) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(bytes))
    let answer = ""
    socket.on("data", (c: Buffer) => (answer += c.toString("utf8")))
    socket.on("close", () => resume(Effect.succeed(answer)))
    socket.on("error", () => {})
    return Effect.sync(() => socket.destroy())
  }).pipe(Effect.timeout("20 seconds"))

export const upgradeHeaders = (port: number, extra: Record<string, string>) => ({
  host: `127.0.0.1:${port}`,
  connection: "Upgrade",
  upgrade: "websocket",
  "sec-websocket-version": "13",
  "sec-websocket-key": crypto.randomBytes(16).toString("base64"),
  ...extra
})

