// The compiled bin on a pseudo-terminal, for what a command draws and asks at a terminal (prompts, typing while a turn
// streams).
import { Duration, Effect } from "effect"
import { spawn } from "node:child_process"
import { binArgv } from "./cli.js"

/** POSIX single quotes for `script -c` */
const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`

/**
 * The bin on a pseudo-terminal (`script` from util-linux, 200 columns): what it drew, a way to type, and a wait for a
 * marker on screen (bounded). The whole process group is killed when the scope closes.
 */
export const onPty = (args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const command = `stty cols 200 rows 50; exec ${[process.execPath, ...binArgv, ...args].map(quote).join(" ")}`
      const child = spawn("script", ["-qfec", command, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"], detached: true })
      let screen = ""
      const waiting = new Set<() => void>()
      child.stdout.on("data", (chunk: Buffer) => {
        screen += chunk.toString("utf8")
        for (const wake of waiting) wake()
      })
      child.stdin.on("error", () => {})
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      return { child, exited, screen: () => screen, waiting }
    }),
    ({ child }) =>
      Effect.sync(() => {
        if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL")
      })
  ).pipe(
    Effect.map((pty) => ({
      type: (text: string) => Effect.sync(() => void pty.child.stdin.write(text)),
      screen: pty.screen,
      /** waits (90 s at most: a bound that only ends a hang, sized for a heavily loaded machine) until the screen shows `marker` (escape sequences aside: a line being typed is echoed
       * with cursor moves between its characters) */
      shows: (marker: string) =>
        Effect.async<void>((resume) => {
          const check = () => {
            if (!pty.screen().replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").includes(marker)) return
            pty.waiting.delete(check)
            resume(Effect.void)
          }
          pty.waiting.add(check)
          check()
          return Effect.sync(() => pty.waiting.delete(check))
        }).pipe(
          Effect.timeoutFail({ duration: Duration.seconds(90), onTimeout: () => new Error(`never showed ${JSON.stringify(marker)}:\n${pty.screen()}`) }),
          Effect.orDie
        ),
      exited: Effect.promise(() => pty.exited).pipe(Effect.timeout(Duration.seconds(90)), Effect.orDie)
    }))
  )
