// What the bounds tests send a serve (plain or cluster): a Health request of an exact size, over HTTP or one WebSocket
// message, and the receipt that the serve still answers.
import { Effect } from "effect"
// @ts-expect-error `ws` ships no type declarations
import { WebSocket } from "ws"
import * as ControlClient from "../../src/control/ControlClient.js"
import { request } from "./serve.js"

/** a serve's control API as these helpers need it */
export interface Endpoint {
  readonly url: string
  readonly port: number
  readonly token: string
  /** the serve's process id, which Health answers with */
  readonly pid: number
}

export const health = JSON.stringify({ _tag: "Request", id: "1", tag: "Health", payload: {}, headers: [] })
/** a Health request of exactly `bytes` bytes: its JSON padded with spaces, then the ndjson newline */
export const healthOf = (bytes: number) => health + " ".repeat(bytes - health.length - 1) + "\n"

export const authHeaders = (s: Endpoint) => ({ host: `127.0.0.1:${s.port}`, "content-type": "application/x-ndjson", authorization: `Bearer ${s.token}` })

/** Health over HTTP, the receipt that the serve still answers */
export const answersHealth = (s: Endpoint) =>
  Effect.map(request(s.port, { method: "POST", headers: authHeaders(s), body: healthOf(health.length + 1) }), (r) => r.status === 200 && r.body.includes(`"pid":${s.pid}`))

export interface WsOutcome {
  readonly closeCode: number | undefined
  readonly answer: string | undefined
}

/** one message over an authenticated WebSocket: the first answer, or the code the serve closed the socket with */
export const overWebSocket = (s: Endpoint, message: string) =>
  Effect.async<WsOutcome>((resume) => {
    const socket = new WebSocket(s.url, [ControlClient.protocol, `${ControlClient.bearerProtocolPrefix}${s.token}`])
    socket.on("error", () => {})
    socket.once("open", () => socket.send(message))
    socket.once("message", (data: Buffer) => {
      resume(Effect.succeed({ closeCode: undefined, answer: data.toString("utf8") }))
      socket.terminate()
    })
    socket.once("close", (code: number) => resume(Effect.succeed({ closeCode: code, answer: undefined })))
    return Effect.sync(() => socket.terminate())
  }).pipe(Effect.timeout("30 seconds"))

