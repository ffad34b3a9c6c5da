// A real `codex app-server --listen ws://127.0.0.1:PORT` started by a test as a process of its own (the harness only
// connects to it), with its own CODEX_HOME and the ScriptedModel as its provider. Killed (its whole process group) when
// the scope closes, or earlier with `kill`.
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { Deferred, Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as CodexArgs from "../../src/appserver/CodexArgs.js"
import * as CodexBinary from "../../src/appserver/CodexBinary.js"

const ansi = /\x1b\[[0-9;]*m/g

/** A port nobody listens on right now (the kernel's pick; closed again before it is returned). */
export const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const port = (server.address() as net.AddressInfo).port
    server.close(() => resume(Effect.succeed(port)))
  })
})

export interface RemoteAppServer {
  readonly url: string
  readonly pid: number
  /** SIGKILL to its process group; completes when it has exited */
  readonly kill: Effect.Effect<void>
  readonly stderr: () => string
}

export interface RemoteOptions {
  readonly codexHome: string
  readonly modelUrl: string
  readonly port: number
  /** extra app-server arguments (e.g. `--ws-auth capability-token --ws-token-file F`) */
  readonly listenArgs?: ReadonlyArray<string>
}

const stop = (proc: ChildProcess, exited: Deferred.Deferred<void>) =>
  Effect.gen(function* () {
    if (proc.exitCode === null && proc.signalCode === null) {
      try {
        process.kill(-proc.pid!, "SIGKILL")
      } catch {
        // already gone
      }
    }
    yield* Deferred.await(exited)
  })

/** Starts it and waits for its "listening on" banner; stopped with the scope. */
export const start = (options: RemoteOptions) =>
  Effect.gen(function* () {
    const codex = yield* CodexBinary.resolve().pipe(Effect.provide(NodeFileSystem.layer), Effect.orDie)
    fs.mkdirSync(options.codexHome, { recursive: true })
    const url = `ws://127.0.0.1:${options.port}`
    const argv = [
      ...codex.prefixArgs,
      "-c",
      "thread_unload_delay_secs=0",
      ...CodexArgs.providerArgs(options.modelUrl, "mock-model"),
      ...CodexArgs.shellEnvironmentArgs(),
      "app-server",
      "--listen",
      url,
      ...(options.listenArgs ?? [])
    ]
    const exited = yield* Deferred.make<void>()
    let stderr = ""
    const proc = yield* Effect.acquireRelease(
      Effect.async<ChildProcess, Error>((resume) => {
        const child = spawn(codex.command, argv, {
          env: { ...process.env, CODEX_HOME: options.codexHome, ...CodexArgs.providerEnv(undefined) },
          stdio: ["ignore", "ignore", "pipe"],
          detached: true
        })
        let ready = false
        child.once("exit", (code, signal) => {
          Deferred.unsafeDone(exited, Effect.void)
          if (!ready) resume(Effect.fail(new Error(`remote app-server exited (${code ?? signal}): ${stderr.replace(ansi, "")}`)))
        })
        child.stderr!.setEncoding("utf8")
        child.stderr!.on("data", (text: string) => {
          stderr += text
          if (!ready && stderr.replace(ansi, "").includes(`listening on: ${url}`)) {
            ready = true
            resume(Effect.succeed(child))
          }
        })
      }),
      (child) => stop(child, exited)
    ).pipe(Effect.orDie)
    return {
      url,
      pid: proc.pid!,
      kill: stop(proc, exited),
      stderr: () => stderr.replace(ansi, "")
    } satisfies RemoteAppServer
  })
