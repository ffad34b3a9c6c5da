// A harness killed with SIGKILL leaves its relay directory (the socket, the token files) behind; the next relay server
// to start removes those of this user whose owner process is gone, and never one whose owner is alive, one of another
// user, one others may write, or a link. Directories of the old format, without a pid in the name, count as gone when
// nobody listens on their socket (or, with no socket at all, once they are older than a minute).
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as HookRelayServer from "../../src/approvals/HookRelayServer.js"
import { isAlive, tempDir } from "../support/harness.js"

/** a pid that was alive a moment ago and is not now: a child that has exited and been reaped */
const deadPid = Effect.async<number>((resume) => {
  const child = spawn("true", [], { stdio: "ignore" })
  child.on("close", () => resume(Effect.succeed(child.pid!)))
})

/** a `sleep` child for the scope's life: a live pid that is not this process */
const liveChild = Effect.acquireRelease(
  Effect.sync(() => spawn("sleep", ["60"], { stdio: "ignore" })),
  (child) =>
    Effect.async<void>((resume) => {
      if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
      child.on("close", () => resume(Effect.void))
      child.kill("SIGKILL")
    })
)

const leftover = (parent: string, name: string) => {
  const dir = path.join(parent, name)
  fs.mkdirSync(dir, { mode: 0o700 })
  fs.writeFileSync(path.join(dir, "session-1.token"), "secret", { mode: 0o600 })
  return dir
}

/** an old-format relay directory (no pid in its name), as harnesses before the pid made it: 0700, the socket only */
const oldFormat = (parent: string, name: string) => {
  const dir = path.join(parent, name)
  fs.mkdirSync(dir, { mode: 0o700 })
  return dir
}

/** what a killed harness leaves: a socket file nobody listens on (a child bound it, then was SIGKILLed) */
const deadSocket = (socket: string) =>
  Effect.async<void>((resume) => {
    const child = spawn(process.execPath, ["-e", `require("net").createServer().listen(${JSON.stringify(socket)}, () => console.log("up"))`], {
      stdio: ["ignore", "pipe", "ignore"]
    })
    child.stdout.once("data", () => child.kill("SIGKILL"))
    child.on("close", () => resume(Effect.void))
  })

/** a socket this test process listens on for the scope's life: a live old-format harness */
const liveSocket = (socket: string) =>
  Effect.acquireRelease(
    Effect.async<net.Server>((resume) => {
      const server = net.createServer((connection) => connection.destroy())
      server.listen(socket, () => resume(Effect.succeed(server)))
    }),
    (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  )

describe("stale relay directories", () => {
  it.scopedLive("a server that starts removes the directories of dead harnesses, and only those", () =>
    Effect.gen(function* () {
      const sleeperPid = yield* Effect.scoped(Effect.gen(function* () {
        const parent = yield* tempDir("codex-fault-stale-")
        const dead = yield* deadPid
        expect(isAlive(dead)).toBe(false)
        const sleeper = yield* liveChild
        const gone = leftover(parent, `codex-hr-${dead}-a1b2c3`)
        const mine = leftover(parent, `codex-hr-${process.pid}-d4e5f6`)
        const running = leftover(parent, `codex-hr-${sleeper.pid}-g7h8i9`)
        const noPid = leftover(parent, "codex-hr-j0k1l2")
        const unrelated = leftover(parent, `other-${dead}-m3n4o5`)
        // a link that looks like a dead harness's directory: neither it nor what it points to is touched
        const target = leftover(parent, "link-target")
        fs.symlinkSync(target, path.join(parent, `codex-hr-${dead}-link`))
        // another user's directory (only root can make one here)
        const foreign = process.getuid?.() === 0 ? leftover(parent, `codex-hr-${dead}-p6q7r8`) : undefined
        if (foreign !== undefined) fs.chownSync(foreign, 65534, 65534)

        const server = yield* HookRelayServer.make({ parentDir: parent, handle: () => Effect.succeed(HookRelayServer.noDecision) }).pipe(
          Effect.provide(NodeFileSystem.layer)
        )
        expect(fs.existsSync(gone)).toBe(false)
        for (const kept of [mine, running, noPid, unrelated, target, ...(foreign !== undefined ? [foreign] : [])]) {
          expect(fs.existsSync(path.join(kept, "session-1.token")), kept).toBe(true)
        }
        expect(fs.lstatSync(path.join(parent, `codex-hr-${dead}-link`)).isSymbolicLink()).toBe(true)
        // its own directory carries its pid, so a later server can tell whether it is still running
        expect(path.basename(path.dirname(server.socketPath))).toMatch(new RegExp(`^codex-hr-${process.pid}-`))
        return sleeper.pid!
      }))
      // nothing this test started is left
      expect(isAlive(sleeperPid)).toBe(false)
    }))

  it.scopedLive("old-format directories (no pid in the name) are removed once nobody listens on their socket, and only then", () =>
    Effect.gen(function* () {
      const parent = yield* tempDir("codex-fault-old-")
      const socketDead = oldFormat(parent, "codex-hr-Ab12Cd")
      yield* deadSocket(path.join(socketDead, "relay.sock"))
      expect(fs.lstatSync(path.join(socketDead, "relay.sock")).isSocket()).toBe(true)
      const socketLive = oldFormat(parent, "codex-hr-Ef34Gh")
      yield* liveSocket(path.join(socketLive, "relay.sock"))
      // no socket: one made a while ago lost it; a fresh one may be a harness that is binding it right now
      const socketlessOld = oldFormat(parent, "codex-hr-Ij56Kl")
      const longAgo = new Date(Date.now() - 10 * 60_000)
      fs.utimesSync(socketlessOld, longAgo, longAgo)
      const socketlessNew = oldFormat(parent, "codex-hr-Mn78Op")
      // gone owners, but group or others may write in them: never removed
      const groupWritable = oldFormat(parent, "codex-hr-Qr90St")
      yield* deadSocket(path.join(groupWritable, "relay.sock"))
      fs.chmodSync(groupWritable, 0o770)
      const dead = yield* deadPid
      const worldWritable = leftover(parent, `codex-hr-${dead}-u1v2w3`)
      fs.chmodSync(worldWritable, 0o777)
      // a name of neither format
      const longer = oldFormat(parent, "codex-hr-Xy12Zw9")
      yield* deadSocket(path.join(longer, "relay.sock"))

      const server = yield* HookRelayServer.make({ parentDir: parent, handle: () => Effect.succeed(HookRelayServer.noDecision) }).pipe(
        Effect.provide(NodeFileSystem.layer)
      )
      for (const gone of [socketDead, socketlessOld]) expect(fs.existsSync(gone), gone).toBe(false)
      for (const kept of [socketLive, socketlessNew, groupWritable, worldWritable, longer]) expect(fs.existsSync(kept), kept).toBe(true)
      expect(fs.readdirSync(parent).sort()).toEqual(
        [path.basename(path.dirname(server.socketPath)), ...[socketLive, socketlessNew, groupWritable, worldWritable, longer].map((d) => path.basename(d))].sort()
      )
    }))
})
