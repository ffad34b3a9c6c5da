// A TCP proxy in the test process (node:net) between one process and a server, for a network partition that closes
// nothing: `cut` stops forwarding in both directions (every socket paused, new connections accepted and held), so both
// ends keep their connections open and hear nothing, as behind a switch that drops every packet; `heal` forwards again,
// what was held included. Scoped: its end closes the listener and every connection.
import { Effect, type Scope } from "effect"
import * as net from "node:net"

export interface TcpProxy {
  readonly port: number
  readonly cut: Effect.Effect<void>
  readonly heal: Effect.Effect<void>
  /** connections open through it now */
  readonly connections: () => number
}

export const tcpProxy = (targetPort: number, targetHost = "127.0.0.1"): Effect.Effect<TcpProxy, Error, Scope.Scope> =>
  Effect.gen(function* () {
    let cut = false
    const sockets = new Set<net.Socket>()
    const track = (socket: net.Socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      socket.on("error", () => socket.destroy())
      if (cut) socket.pause()
    }
    /** `from`'s data to `to`, honouring backpressure; nothing moves while cut (the sockets are paused, reads stop) */
    const forward = (from: net.Socket, to: net.Socket) => {
      from.on("data", (chunk) => {
        if (!to.write(chunk)) {
          from.pause()
          to.once("drain", () => !cut && from.resume())
        }
      })
      from.on("end", () => to.end())
      from.on("close", () => to.destroy())
    }
    const server = net.createServer((client) => {
      const upstream = net.connect(targetPort, targetHost)
      track(client)
      track(upstream)
      forward(client, upstream)
      forward(upstream, client)
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number, Error>((resume) => {
        server.once("error", (e) => resume(Effect.fail(e)))
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as net.AddressInfo).port)))
      }),
      () =>
        Effect.async<void>((resume) => {
          for (const s of sockets) s.destroy()
          server.close(() => resume(Effect.void))
        })
    )
    return {
      port,
      cut: Effect.sync(() => {
        cut = true
        for (const s of sockets) s.pause()
      }),
      heal: Effect.sync(() => {
        cut = false
        for (const s of sockets) s.resume()
      }),
      connections: () => sockets.size / 2
    }
  })
