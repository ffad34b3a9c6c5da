// A real `codex exec-server` as a paired node for tests (S26). Where the machine allows (`ip netns add` works, i.e. root
// or CAP_NET_ADMIN), the node runs in a network namespace of its own, joined to the host by a veth pair the test makes
// (10.218.K.1 host side, 10.218.K.2 node side), and in a mount namespace with a private tmpfs on `nodeDir`, so a file
// written there exists only for the node. Otherwise it runs on 127.0.0.1 (`mode: "loopback"`) and says so.
// Between the harness and the node sits a TCP `tunnel` on host loopback: the stand-in for the operator's SSH forward
// (the harness accepts ws:// to loopback only). It logs each upgrade request that crossed it (plain HTTP) and can cut
// every link it carries (`cut`), as a dropped forward or a pulled cable would, while staying up for new links.
// Everything is removed with the scope: the node's process group is killed and awaited, veth and namespace deleted.
import { Deferred, Effect } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"

const codexBin = path.resolve("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")

export interface Tunnel {
  readonly url: string
  /** the HTTP head of every connection that crossed to the node, in order */
  readonly heads: () => ReadonlyArray<string>
  /** drops every link it carries now (both sides reset); new links still work */
  readonly cut: Effect.Effect<void>
}

export interface ExecNode {
  readonly mode: "netns" | "loopback"
  /** the node's exec-server as the node sees it (ws://10.218.K.2:PORT or ws://127.0.0.1:PORT) */
  readonly directUrl: string
  /** the tunnel the harness is given (ws://127.0.0.1:PORT) */
  readonly tunnel: Tunnel
  readonly pid: number
  /** a directory only the node sees in netns mode (a private tmpfs); an ordinary directory in loopback mode */
  readonly nodeDir: string
  /** the host's address as the node reaches it (for an HTTP sink the node calls) */
  readonly hostAddress: string
  readonly marker: string
  readonly token: string
  /** pids of every process the node's exec-server runs (its descendants) */
  readonly descendants: () => ReadonlyArray<number>
  readonly alive: () => boolean
}

const sh = (cmd: string, args: ReadonlyArray<string>) => execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"] }).toString()

/** whether `ip netns add` works for this user (tried once, on a throwaway name). */
export const netnsAllowed = (() => {
  let cached: boolean | undefined
  return () => {
    if (cached !== undefined) return cached
    // forces the loopback variant (to test it on a machine that allows namespaces)
    if (process.env.CODEX_HARNESS_TEST_NO_NETNS === "1") return (cached = false)
    const name = `chprobe${process.pid}`
    try {
      sh("ip", ["netns", "add", name])
      sh("ip", ["netns", "del", name])
      cached = true
    } catch {
      cached = false
    }
    return cached
  }
})()

// a child is listed under the thread that forked it: every thread of the (multi-threaded) exec-server is read
const childrenOf = (pid: number): ReadonlyArray<number> => {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8").trim().split(/\s+/).filter((s) => s !== "").map(Number)
      } catch {
        return []
      }
    })
  } catch {
    return []
  }
}
const descendantsOf = (pid: number): ReadonlyArray<number> => childrenOf(pid).flatMap((c) => [c, ...descendantsOf(c)])
const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const makeTunnel = (target: { host: string; port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ server: net.Server; tunnel: Tunnel; pairs: Set<[net.Socket, net.Socket]> }>((resume) => {
      const heads: Array<string> = []
      const pairs = new Set<[net.Socket, net.Socket]>()
      const server = net.createServer((down) => {
        const up = net.connect(target.port, target.host)
        const pair: [net.Socket, net.Socket] = [down, up]
        pairs.add(pair)
        let head = ""
        down.on("data", (chunk: Buffer) => {
          if (head !== undefined && !head.includes("\r\n\r\n")) {
            head += chunk.toString("latin1")
            if (head.includes("\r\n\r\n")) heads.push(head.split("\r\n\r\n")[0]!)
          }
          up.write(chunk)
        })
        up.on("data", (chunk: Buffer) => down.write(chunk))
        const end = () => {
          pairs.delete(pair)
          down.destroy()
          up.destroy()
        }
        down.on("close", end).on("error", end)
        up.on("close", end).on("error", end)
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as net.AddressInfo).port
        resume(Effect.succeed({
          server,
          pairs,
          tunnel: {
            url: `ws://127.0.0.1:${port}`,
            heads: () => [...heads],
            cut: Effect.sync(() => {
              for (const [d, u] of pairs) {
                d.resetAndDestroy()
                u.resetAndDestroy()
              }
            })
          }
        }))
      })
    }),
    ({ pairs, server }) =>
      Effect.async<void>((resume) => {
        for (const [d, u] of pairs) {
          d.destroy()
          u.destroy()
        }
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ tunnel }) => tunnel))

/** Starts the node (and its tunnel); everything is gone when the scope closes. */
export const start = (baseDir: string) =>
  Effect.gen(function* () {
    const mode: "netns" | "loopback" = netnsAllowed() ? "netns" : "loopback"
    const id = crypto.randomBytes(3).toString("hex")
    const k = 1 + (crypto.randomBytes(1)[0]! % 250)
    const ns = `chn${id}`
    const vethHost = `ch${id}a`
    const vethNode = `ch${id}b`
    const hostAddress = mode === "netns" ? `10.218.${k}.1` : "127.0.0.1"
    const nodeAddress = mode === "netns" ? `10.218.${k}.2` : "127.0.0.1"
    const nodeDir = path.join(baseDir, "node-only")
    const codexHome = path.join(baseDir, "node-codex-home")
    fs.mkdirSync(nodeDir, { recursive: true })
    fs.mkdirSync(codexHome, { recursive: true })
    const nodeHome = path.join(baseDir, "node-home")
    fs.mkdirSync(nodeHome, { recursive: true })
    const token = crypto.randomBytes(24).toString("hex")
    const tokenFile = path.join(baseDir, "node.token")
    fs.writeFileSync(tokenFile, token, { mode: 0o600 })
    const marker = `node-${id}`

    if (mode === "netns") {
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          sh("ip", ["netns", "add", ns])
          sh("ip", ["link", "add", vethHost, "type", "veth", "peer", "name", vethNode])
          sh("ip", ["link", "set", vethNode, "netns", ns])
          sh("ip", ["addr", "add", `${hostAddress}/24`, "dev", vethHost])
          sh("ip", ["link", "set", vethHost, "up"])
          sh("ip", ["netns", "exec", ns, "ip", "addr", "add", `${nodeAddress}/24`, "dev", vethNode])
          sh("ip", ["netns", "exec", ns, "ip", "link", "set", vethNode, "up"])
          sh("ip", ["netns", "exec", ns, "ip", "link", "set", "lo", "up"])
        }),
        () =>
          Effect.sync(() => {
            try {
              sh("ip", ["link", "del", vethHost])
            } catch {
              // gone with the namespace already
            }
            sh("ip", ["netns", "del", ns])
          })
      )
    }

    const serve = [
      "exec-server",
      "--listen",
      `ws://${nodeAddress}:0`,
      "--ws-auth",
      "capability-token",
      "--ws-token-file",
      tokenFile
    ]
    const quoted = [codexBin, ...serve].map((a) => `'${a}'`).join(" ")
    const [command, args] = mode === "netns"
      ? ["ip", ["netns", "exec", ns, "unshare", "-m", "--propagation", "private", "sh", "-c", `mount -t tmpfs none '${nodeDir}' && exec ${quoted}`]] as const
      : [codexBin, serve] as const
    const exited = yield* Deferred.make<void>()
    const started = yield* Effect.acquireRelease(
      Effect.async<{ child: ChildProcess; url: string }, Error>((resume) => {
        const child = spawn(command, [...args], {
          // a HOME of its own: the node's login shells must not run this machine's profile (a pyenv rehash there can
          // wait on a lock another user's shell holds)
          env: { ...process.env, HOME: nodeHome, CODEX_HOME: codexHome, NODE_MARKER: marker },
          cwd: baseDir,
          stdio: ["ignore", "pipe", "pipe"],
          detached: true
        })
        let out = ""
        let err = ""
        let ready = false
        child.once("exit", (code, signal) => {
          Deferred.unsafeDone(exited, Effect.void)
          if (!ready) resume(Effect.fail(new Error(`exec-server exited (${code ?? signal}): ${err}`)))
        })
        child.stderr!.on("data", (d: Buffer) => {
          err += d.toString()
        })
        child.stdout!.on("data", (d: Buffer) => {
          out += d.toString()
          const url = /ws:\/\/[0-9.]+:\d+/.exec(out)?.[0]
          if (!ready && url !== undefined) {
            ready = true
            resume(Effect.succeed({ child, url }))
          }
        })
      }),
      ({ child }) =>
        Effect.gen(function* () {
          try {
            process.kill(-child.pid!, "SIGKILL")
          } catch {
            // gone
          }
          yield* Deferred.await(exited)
        })
    ).pipe(Effect.orDie)
    const pid = started.child.pid!
    const port = Number(/:(\d+)$/.exec(started.url)![1])
    const tunnel = yield* makeTunnel({ host: nodeAddress, port })
    return {
      mode,
      directUrl: started.url,
      tunnel,
      pid,
      nodeDir,
      hostAddress,
      marker,
      token,
      descendants: () => descendantsOf(pid),
      alive: () => isAlive(pid)
    } satisfies ExecNode
  })

/** an HTTP server on `host` that logs every request reaching it (the node's HTTP egress in the header test) */
export const httpSink = (host: string) =>
  Effect.acquireRelease(
    Effect.async<{ server: import("node:http").Server; url: string; log: Array<{ path: string; headers: Record<string, unknown> }> }>(
      (resume) => {
        void import("node:http").then((http) => {
          const log: Array<{ path: string; headers: Record<string, unknown> }> = []
          const server = http.createServer((req, res) => {
            log.push({ path: req.url ?? "", headers: { ...req.headers } })
            res.end("sink")
          })
          server.listen(0, host, () => {
            resume(Effect.succeed({ server, log, url: `http://${host}:${(server.address() as net.AddressInfo).port}` }))
          })
        })
      }
    ),
    ({ server }) => Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
  )
