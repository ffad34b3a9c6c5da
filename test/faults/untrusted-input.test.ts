// Nothing untrusted is obeyed, through the compiled CLI: a state dir (and so its config.json, which may declare MCP
// server commands Codex would start) that another user owns or that others may write is refused before anything runs;
// a config path that is a FIFO or a device is refused at once instead of hanging or reading forever.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind, tempDir } from "../support/harness.js"

/** a config that would make Codex start a command (an MCP server) leaving a marker file */
const trap = (dir: string, marker: string) =>
  fs.writeFileSync(
    path.join(dir, "config.json"),
    JSON.stringify({ mcpServers: { trap: { command: "/bin/sh", args: ["-c", `touch ${marker}; sleep 5`] } } })
  )

describe("untrusted input is refused", () => {
  it.scopedLive("a state dir others may write is refused in one line; its config's command never runs", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("should never be asked")] })
      const marker = path.join(f.workDir, "pwned")
      trap(f.stateDir, marker)
      fs.chmodSync(f.stateDir, 0o777)
      const ran = yield* runBin(["run", "--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "hi"])
      expect(ran.code).toBe(1)
      expect(ran.stderr.trim().split("\n")).toEqual([
        `codex-harness: refusing the state dir ${f.stateDir}: group or others may write it (mode 777); run: chmod go-w ${f.stateDir}`
      ])
      expect(fs.existsSync(marker)).toBe(false)
      expect(yield* f.model.requests).toHaveLength(0)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a state dir another user owns is refused, and so is a config file others may write", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("should never be asked")] })
      const marker = path.join(f.workDir, "pwned")
      trap(f.stateDir, marker)
      if (process.getuid?.() === 0) {
        execFileSync("chown", ["65534", f.stateDir])
        const ran = yield* runBin(["run", "--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "hi"])
        expect(ran.code).toBe(1)
        expect(ran.stderr).toContain(`refusing the state dir ${f.stateDir}: it belongs to uid 65534, not to you (uid 0)`)
        execFileSync("chown", ["0", f.stateDir])
      }
      const config = path.join(f.stateDir, "config.json")
      fs.chmodSync(config, 0o666)
      const ran = yield* runBin(["run", "--config", config, "--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "hi"])
      expect(ran.code).toBe(1)
      expect(ran.stderr.trim()).toBe(`codex-harness: refusing the config file ${config}: group or others may write it (mode 666); run: chmod go-w ${config}`)
      expect(fs.existsSync(marker)).toBe(false)
    }))

  it.scopedLive("--config on a FIFO or a device is refused at once", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const fifo = path.join(dir, "config.fifo")
      execFileSync("mkfifo", ["-m", "600", fifo])
      const onFifo = yield* runBin(["config", "show", "--config", fifo, "--state-dir", dir])
      expect(onFifo.code).toBe(1)
      expect(onFifo.stderr.trim()).toBe(`codex-harness: ${fifo}: cannot read the config file: it is not a regular file (FIFO)`)
      const onZero = yield* runBin(["config", "show", "--config", "/dev/zero", "--state-dir", dir])
      // (a device others may write is refused as untrusted before its type is looked at; either way, one line, at once)
      expect(onZero.code).toBe(1)
      expect(onZero.stderr.trim().split("\n")).toHaveLength(1)
      expect(onZero.stderr).toMatch(/refusing the config file \/dev\/zero|not a regular file/)
    }))
})
