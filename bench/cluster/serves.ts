// The serves of the cluster bench's issue 33 parts (overhead.ts, retention.ts): the compiled CLI in a process of its own,
// ready at its "listening on" line (checked against its serve.json), its warnings kept, as bench/cluster.ts starts them.
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import type { Serve } from "../figures/connect.js"
import * as Ctx from "../figures/context.js"

export interface Served extends Serve {
  readonly warnings: Array<string>
}

const warningLine = /level=(WARN|ERROR|FATAL)|Error\b|Warning\b/

/** `codex-harness serve` with `extra` arguments and environment */
export const spawnServe = (ctx: Ctx.Context, extra: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Promise<Served> =>
  new Promise((resolve, reject) => {
    const dir = Ctx.freshDir(ctx, "serve-state")
    // BENCH_SERVE_NODE_FLAGS: Node flags for the serves only (a diagnostic: `--cpu-prof --cpu-prof-dir=DIR`)
    const nodeFlags = (process.env.BENCH_SERVE_NODE_FLAGS ?? "").split(" ").filter((f) => f !== "")
    const args = [...nodeFlags, ...Ctx.cliNode(), "serve", "--state-dir", dir, "--cwd", ctx.work, "--listen", "127.0.0.1:0", "--provider-url", ctx.model.url, ...extra]
    const t0 = performance.now()
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...ctx.env, ...env } })
    let stderr = ""
    let partial = ""
    const warnings: Array<string> = []
    let settled = false
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once("exit", (code, signal) => done({ code, signal })))
    const fail = (why: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      child.kill("SIGKILL")
      reject(new Error(`codex-harness serve: ${why}; stderr: ${stderr.trim().split("\n").slice(-3).join(" / ")}`))
    }
    const timer = setTimeout(() => fail("no \"listening on\" line within 90 s"), 90_000)
    child.stdout!.resume()
    child.stderr!.setEncoding("utf8")
    child.stderr!.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-16000)
      const lines = (partial + chunk).split("\n")
      partial = lines.pop() ?? ""
      for (const line of lines) if (warningLine.test(line) && warnings.length < 500) warnings.push(line)
      const listening = /listening on (\S+) for /.exec(stderr)
      if (settled || listening === null) return
      settled = true
      clearTimeout(timer)
      try {
        const announced = JSON.parse(fs.readFileSync(path.join(dir, "serve.json"), "utf8")) as { pid: number; url: string }
        if (announced.pid !== child.pid || announced.url !== listening[1]) throw new Error(`serve.json says pid ${announced.pid} at ${announced.url}`)
        const token = fs.readFileSync(path.join(dir, "serve.token"), "utf8").trim()
        resolve({ child, pid: child.pid!, url: listening[1]!, token, readyMs: performance.now() - t0, stderr: () => stderr, exited, warnings })
      } catch (error) {
        child.kill("SIGKILL")
        reject(error)
      }
    })
    child.once("error", (error) => fail(error.message))
    void exited.then(({ code, signal }) => fail(`exited (${signal ?? code}) before it listened`))
  })

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
