// The stdio transport with stand-in executables: the shutdown sequence (end stdin, grace, SIGKILL of the group) on the
// TestClock, the bounded stderr tail, a private CODEX_HOME, and spawn failures as typed errors.
import { describe, expect, it } from "@effect/vitest"
import { NodeFileSystem } from "@effect/platform-node"
import { Effect, Exit, Fiber, Layer, Scope, Stream, TestClock } from "effect"
import { spawn as nodeSpawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Connection from "../../src/appserver/AppServerConnection.js"
import { AppServerExited, SpawnFailed } from "../../src/appserver/errors.js"
import { NodeTransportLive, Transport } from "../../src/appserver/Transport.js"
import { groupAlive, isAlive, tempDir } from "../support/harness.js"

/** writes an executable stand-in for codex and returns its path */
const standIn = (dir: string, name: string, body: string) => {
  const file = path.join(dir, name)
  fs.writeFileSync(file, `#!/usr/bin/env node\n${body}\n`, { mode: 0o755 })
  return file
}

/** a real wait while the TestClock stands still: lets process events arrive */
const realPause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

const spawn = (options: Parameters<Transport["Type"]["spawn"]>[0]) =>
  Effect.flatMap(Transport, (transport) => transport.spawn(options))

describe("Transport (stdio child process)", () => {
  it.scoped("a process that ignores stdin EOF is killed with its group after the 5 s grace, not before", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      // ignores SIGTERM and stdin EOF, and starts a grandchild in its process group
      const stubborn = standIn(
        dir,
        "stubborn",
        `process.on("SIGTERM", () => {}); require("child_process").spawn("sleep", ["60"], { stdio: "ignore" }); setInterval(() => {}, 1000); console.log("ready")`
      )
      const scope = yield* Scope.make()
      const handle = yield* spawn({ codexBin: stubborn }).pipe(Scope.extend(scope))
      yield* handle.incoming.pipe(Stream.take(1), Stream.runDrain)
      const pid = handle.pid
      const closing = yield* Scope.close(scope, Exit.void).pipe(Effect.fork)
      yield* realPause(300)
      yield* TestClock.adjust("4900 millis")
      yield* realPause(300)
      expect(isAlive(pid)).toBe(true)
      yield* TestClock.adjust("200 millis")
      yield* Fiber.join(closing)
      expect(isAlive(pid)).toBe(false)
      expect(groupAlive(pid)).toBe(false)
    }).pipe(Effect.provide(NodeTransportLive.pipe(Layer.provide(NodeFileSystem.layer))))
  )

  it.scopedLive("the process ends with its app-server: a pipe end held outside its group is not waited on", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      // like Codex's shell snapshot: a process in a session of its own that inherits stdout and stderr and lives on
      const leaky = standIn(
        dir,
        "leaky",
        `const c = require("child_process").spawn("setsid", ["sleep", "30"], { stdio: ["ignore", "inherit", "inherit"] }); ` +
          `console.log(String(c.pid)); process.stdin.resume(); process.stdin.on("end", () => process.exit(0))`
      )
      const driver = path.resolve("test/support/transport-exit.mjs")
      const child = yield* Effect.acquireRelease(
        Effect.sync(() => nodeSpawn(process.execPath, [driver, leaky], { stdio: ["ignore", "pipe", "inherit"] })),
        (c) => Effect.sync(() => void c.kill("SIGKILL"))
      )
      let out = ""
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")))
      const ended = yield* Effect.async<boolean>((resume) => {
        const timer = setTimeout(() => resume(Effect.succeed(false)), 20_000)
        child.once("close", () => {
          clearTimeout(timer)
          resume(Effect.succeed(true))
        })
      })
      const sleeper = Number(out.split("\n")[0])
      yield* Effect.addFinalizer(() => Effect.sync(() => (isAlive(sleeper) ? process.kill(sleeper, "SIGKILL") : undefined)))
      expect(out.split("\n")[1]).toBe("closed")
      // the driver ended by itself while the sleeper still held the pipes
      expect(ended).toBe(true)
      expect(isAlive(sleeper)).toBe(true)
    })
  )

  it.scoped("an exit carries the exit code and a bounded stderr tail to every pending request", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const noisy = standIn(
        dir,
        "noisy",
        `process.stderr.write("x".repeat(10000) + "\\nfatal: config is broken\\n"); process.stdin.once("data", () => process.exit(3))`
      )
      const handle = yield* spawn({ codexBin: noisy })
      const error = yield* Connection.make(handle).pipe(Effect.flip)
      expect(error).toBeInstanceOf(AppServerExited)
      const exited = error as AppServerExited
      expect(exited.exitCode).toBe(3)
      expect(exited.stderrTail.length).toBeLessThanOrEqual(2_000)
      expect(exited.message).toContain("fatal: config is broken")
    }).pipe(Effect.provide(NodeTransportLive.pipe(Layer.provide(NodeFileSystem.layer))))
  )

  it.scoped("a private CODEX_HOME is created and handed to the process", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const home = path.join(dir, "nested", "codex-home")
      const printer = standIn(dir, "printer", `console.log(process.env.CODEX_HOME); process.stdin.resume()`)
      const handle = yield* spawn({ codexBin: printer, codexHome: home })
      const [line] = yield* handle.incoming.pipe(Stream.take(1), Stream.runCollect)
      expect(line).toEqual({ _tag: "Line", text: home })
      expect(fs.statSync(home).isDirectory()).toBe(true)
    }).pipe(Effect.provide(NodeTransportLive.pipe(Layer.provide(NodeFileSystem.layer))))
  )

  it.scoped("$CODEX_HARNESS_APP_SERVER_CONFIG's lines are -c overrides ahead of the harness's own; a line that is not key=value is a SpawnFailed naming it", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const printer = standIn(dir, "printer", `console.log(JSON.stringify(process.argv.slice(2))); process.stdin.resume()`)
      const env = { CODEX_HARNESS_APP_SERVER_CONFIG: "features.shell_snapshot=false\nmodel_verbosity=\"low\"" }
      const handle = yield* spawn({ codexBin: printer, env })
      const [line] = yield* handle.incoming.pipe(Stream.take(1), Stream.runCollect)
      expect(line?._tag).toBe("Line")
      const argv = JSON.parse(line?._tag === "Line" ? line.text : "[]") as Array<string>
      expect(argv.slice(0, 6)).toEqual(["-c", "features.shell_snapshot=false", "-c", 'model_verbosity="low"', "-c", "thread_unload_delay_secs=0"])
      expect(argv.at(-1)).toBe("app-server")
      const error = yield* spawn({ codexBin: printer, env: { CODEX_HARNESS_APP_SERVER_CONFIG: "shell_snapshot" } }).pipe(Effect.flip)
      expect(error).toBeInstanceOf(SpawnFailed)
      expect(error.message).toContain("$CODEX_HARNESS_APP_SERVER_CONFIG line 1: expected key=value")
    }).pipe(Effect.provide(NodeTransportLive.pipe(Layer.provide(NodeFileSystem.layer))))
  )

  it.scoped("[cli] a codex-bin that cannot be executed is a typed SpawnFailed with a readable reason", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const notExecutable = path.join(dir, "codex")
      fs.writeFileSync(notExecutable, "not a program", { mode: 0o644 })
      const error = yield* spawn({ codexBin: notExecutable }).pipe(Effect.flip)
      expect(error).toBeInstanceOf(SpawnFailed)
      expect(error.message).toContain(notExecutable)
    }).pipe(Effect.provide(NodeTransportLive.pipe(Layer.provide(NodeFileSystem.layer))))
  )
})
