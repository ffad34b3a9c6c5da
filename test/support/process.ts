// The compiled CLI as a live process a test can watch and signal: its stdout and stderr as they arrive, a wait for a
// line that says something happened (the receipt), a signal, and its end. Killed with SIGKILL when the scope closes.
import { Deferred, Effect, type Scope } from "effect"
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { binArgv } from "./cli.js"

export interface Running {
  readonly child: ChildProcessWithoutNullStreams
  readonly stdout: () => string
  readonly stderr: () => string
  /** waits (bounded) until the output so far satisfies `check` */
  readonly waitFor: (check: (out: { readonly stdout: string; readonly stderr: string }) => boolean, ms?: number) => Effect.Effect<boolean>
  readonly exited: Effect.Effect<{ readonly code: number | null; readonly signal: string | null }>
}

export const startBin = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Readonly<Record<string, string>>; readonly input?: string } = {}
): Effect.Effect<Running, never, Scope.Scope> =>
  Effect.gen(function* () {
    const exit = yield* Deferred.make<{ readonly code: number | null; readonly signal: string | null }>()
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => spawn(process.execPath, [...binArgv, ...args], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...options.env } })),
      (c) => Effect.sync(() => (c.exitCode === null && c.signalCode === null ? void c.kill("SIGKILL") : undefined))
    )
    let stdout = ""
    let stderr = ""
    const listeners = new Set<() => void>()
    const changed = () => {
      for (const l of [...listeners]) l()
    }
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString("utf8")
      changed()
    })
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString("utf8")
      changed()
    })
    child.stdin.on("error", () => {})
    if (options.input !== undefined) child.stdin.write(options.input)
    // bridge: Node's close callback runs outside any fiber; it only completes the Deferred
    child.on("close", (code, signal) => Deferred.unsafeDone(exit, Effect.succeed({ code, signal })))
    // a bound on a receipt, not a margin: a serve took over 30 s to say it listens on the 2-core machine at load 27 (two
    // of its tests failed there); the suite's 180 s per test still ends a real hang
    const waitFor = (check: (out: { readonly stdout: string; readonly stderr: string }) => boolean, ms = 120_000) =>
      Effect.async<boolean>((resume) => {
        const test = () => {
          if (!check({ stdout, stderr })) return false
          done(true)
          return true
        }
        const timer = setTimeout(() => done(false), ms)
        const done = (ok: boolean) => {
          clearTimeout(timer)
          listeners.delete(listener)
          resume(Effect.succeed(ok))
        }
        const listener = () => void test()
        if (test()) return
        listeners.add(listener)
        return Effect.sync(() => {
          clearTimeout(timer)
          listeners.delete(listener)
        })
      })
    return { child, stdout: () => stdout, stderr: () => stderr, waitFor, exited: Deferred.await(exit) } satisfies Running
  })
