// A harness killed with SIGKILL leaves its relay directory (the socket, the token files) behind; the next relay server
// to start removes those of this user whose owner process is gone, and never one whose owner is alive, one of another
// user, or a link.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
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
})
