// A cold `run` starts its app-server before the CLI loads (issue 31, item 1: bin/codex-harness.js, cli/prelaunch.ts),
// and the CLI's transport takes that process only when it is exactly the one it would have spawned. Shown here on the
// real binary through the bin, the way a user runs it: the `took` debug line appears only when the bin's guess was the
// CLI's own spawn (executable, arguments, environment, initialize line), and a wrapper `--codex-bin` counts the
// app-servers started, so a guess that was thrown away and replaced would show as two.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as CodexBinary from "../../src/appserver/CodexBinary.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { type Fixture, fixture, leftBehind, tempDir } from "../support/harness.js"

const took = "app-server: took the one started before the CLI loaded"

/** a codex that notes each start (its pid) and then is codex */
const countingCodex = (dir: string) => {
  const codex = CodexBinary.candidates().find((c) => fs.existsSync(c.prefixArgs[0] ?? c.command))!
  const log = path.join(dir, "starts.log")
  const wrapper = path.join(dir, "codex")
  const exec = [codex.command, ...codex.prefixArgs].map((a) => `'${a}'`).join(" ")
  fs.writeFileSync(wrapper, `#!/bin/sh\necho $$ >> '${log}'\nexec ${exec} "$@"\n`, { mode: 0o700 })
  return { wrapper, starts: () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n").map(Number) : []) }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z"
  } catch {
    return false
  }
}

const setUp = Effect.gen(function* () {
  const f = yield* fixture({ fallback: reply.text("cold reply") })
  const codex = countingCodex(yield* tempDir("codex-harness-bin-"))
  const common = ["--log-level", "debug", "--cwd", f.workDir, "--provider-url", f.model.url, "--codex-bin", codex.wrapper]
  return { f, codex, common }
})

const finished = (f: Fixture) => Effect.map(leftBehind(f.stateDir), (left) => expect(left).toEqual([]))

describe("a cold run's app-server, started before the CLI loads", () => {
  it.scopedLive("is the one the run uses, for each way of naming the state dir, the key's variable and CODEX_HOME", () =>
    Effect.gen(function* () {
      const { f, codex, common } = yield* setUp
      const variants: ReadonlyArray<{ readonly args: ReadonlyArray<string>; readonly env?: Record<string, string> }> = [
        { args: ["--state-dir", f.stateDir] },
        { args: [`--state-dir=${f.stateDir}`, "--provider-key-env", "MY_PROVIDER_KEY"], env: { MY_PROVIDER_KEY: "sk-test-key" } },
        { args: ["--codex-home", path.join(f.stateDir, "elsewhere")], env: { CODEX_HARNESS_HOME: f.stateDir } }
      ]
      for (const [i, variant] of variants.entries()) {
        const ran = yield* runBin(["run", ...common, ...variant.args, `message ${i}`], { env: variant.env })
        expect(ran.code, ran.stderr).toBe(0)
        expect(ran.stdout).toBe("cold reply\n")
        expect(ran.stderr).toContain(took)
        expect(codex.starts()).toHaveLength(i + 1)
      }
      yield* finished(f)
    }))

  it.scopedLive("is not taken when turned off, and none is started where a config file may change what the CLI spawns", () =>
    Effect.gen(function* () {
      const { f, codex, common } = yield* setUp
      // the control: the same run without the early start spawns its own, and says nothing of taking one
      const off = yield* runBin(["run", ...common, "--state-dir", f.stateDir, "one"], { env: { CODEX_HARNESS_PRELAUNCH: "0" } })
      expect(off.code, off.stderr).toBe(0)
      expect(off.stderr).not.toContain(took)
      expect(codex.starts()).toHaveLength(1)
      fs.writeFileSync(path.join(f.stateDir, "config.json"), "{}\n", { mode: 0o600 })
      const configured = yield* runBin(["run", ...common, "--state-dir", f.stateDir, "two"])
      expect(configured.code, configured.stderr).toBe(0)
      expect(configured.stdout).toBe("cold reply\n")
      expect(configured.stderr).not.toContain(took)
      expect(codex.starts()).toHaveLength(2)
      yield* finished(f)
    }))

  it.scopedLive("is stopped when the CLI refuses the command line, and nothing is left behind", () =>
    Effect.gen(function* () {
      const { f, codex, common } = yield* setUp
      const ran = yield* runBin(["run", ...common, "--state-dir", f.stateDir, "--timeout", "0", "never sent"])
      expect(ran.code).toBe(1)
      expect(ran.stderr).toContain("--timeout")
      const [pid] = codex.starts()
      expect(pid).toBeDefined()
      // the CLI SIGKILLs it as it exits; a 100 MB process takes a moment to be torn down (a newcomer run saw it still
      // there right after the CLI's exit), so its being gone is waited for, within a bound
      yield* Effect.sync(() => (alive(pid!) ? Option.none() : Option.some(true))).pipe(
        Effect.flatten,
        Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 250 }),
        Effect.orElseSucceed(() => false),
        Effect.map((gone) => expect(gone, `app-server ${pid} still alive 5 s after the CLI exited`).toBe(true))
      )
      expect(yield* f.model.requests).toHaveLength(0)
      yield* finished(f)
    }))
})
