// `doctor`'s pieces that need no codex: the line each outcome prints, the time bound every check runs under, and the
// relay directories it reports as left by harnesses that are gone.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Option, TestClock } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { failed, line, passed, runCheck, skipped } from "../../src/cli/doctor/check.js"
import { staleRelayDirs } from "../../src/cli/doctor/leftovers.js"
import { tempDir } from "../support/harness.js"

/** the pid of a process that has ended (and been reaped): no process has it now, barring reuse */
const deadPid = Effect.async<number>((resume) => {
  const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" })
  child.once("exit", () => resume(Effect.succeed(child.pid!)))
})

describe("doctor checks", () => {
  it.effect("each outcome is one line: ok, FAIL with its check's name, skip; a terminal sees no escape sequence", () =>
    Effect.gen(function* () {
      const ok = yield* runCheck("thing", "1 second", Effect.succeed(passed("thing works")))
      expect(line(ok.result)).toBe("ok   thing works")
      expect(Option.isSome(ok.value)).toBe(true)
      const bad = yield* runCheck("thing", "1 second", Effect.fail(failed("broken\nbadly \u001b[2J")))
      expect(line(bad.result)).toBe("FAIL thing: broken badly")
      const skip = yield* runCheck("thing", "1 second", Effect.fail(skipped("not configured")))
      expect(line(skip.result)).toBe("skip thing: not configured")
      const died = yield* runCheck("thing", "1 second", Effect.die(new Error("a bug")))
      expect(line(died.result)).toBe("FAIL thing: internal error: a bug")
    }))

  it.effect("a check that does not finish within its bound fails saying so", () =>
    Effect.gen(function* () {
      const fiber = yield* Effect.fork(runCheck("slow", "5 seconds", Effect.never))
      yield* TestClock.adjust("5 seconds")
      const outcome = yield* Fiber.join(fiber)
      expect(outcome.result).toEqual({ check: "slow", status: "fail", detail: "no result within 5 s" })
    }))
})

describe("stale relay directories", () => {
  it.scoped("a codex-hr-<pid> directory of a process that is gone fails the check, so does a stale old-format one; live owners and other names do not", () =>
    Effect.gen(function* () {
      const tmp = yield* tempDir("codex-doctor-relay-")
      const clean = yield* staleRelayDirs(tmp)
      expect(clean.text).toBe(`no stale hook relay directories in ${tmp}`)
      const dead = yield* deadPid
      fs.mkdirSync(path.join(tmp, `codex-hr-${process.pid}-live`), { mode: 0o700 })
      fs.mkdirSync(path.join(tmp, "codex-hr-notapid-x"), { mode: 0o700 })
      fs.writeFileSync(path.join(tmp, `codex-hr-${dead}-file`), "")
      const stale = path.join(tmp, `codex-hr-${dead}-abc123`)
      fs.mkdirSync(stale, { mode: 0o700 })
      const error = yield* Effect.flip(staleRelayDirs(tmp))
      expect(error.reason).toBe(
        `1 hook relay directory of a harness that is gone: ${stale} (the next harness to start its relay removes them; so does the hook relay check)`
      )
      // reported, never removed: the harness's own sweep does that
      expect(fs.existsSync(stale)).toBe(true)

      // an old-format directory (no pid in its name) that lost its socket long ago counts as well
      const old = path.join(tmp, "codex-hr-Ab12Cd")
      fs.mkdirSync(old, { mode: 0o700 })
      const longAgo = new Date(Date.now() - 10 * 60_000)
      fs.utimesSync(old, longAgo, longAgo)
      const both = yield* Effect.flip(staleRelayDirs(tmp))
      expect(both.reason).toMatch(/^2 hook relay directories of harnesses that are gone: /)
      expect(both.reason).toContain(old)
      expect(fs.existsSync(old)).toBe(true)
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
