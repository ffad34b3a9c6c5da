// What the Control UI's browser tests share: the real `codex-harness serve` (the compiled CLI as a child process, the
// real app-server behind it, the scripted model in the test's process), headless Chromium driven by playwright-core
// (test/support/chromium.ts finds it), a tab per client with what the page threw recorded, and the end every test
// checks: the browser closes and its processes with it, serve stops on SIGTERM, nothing is left behind.
import { expect } from "@effect/vitest"
import { type Duration, Effect, Schedule, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import type { ChromiumLaunch } from "./chromium.js"
import { type Fixture, leftBehind } from "./harness.js"
import { type Running, startBin } from "./process.js"

const listening = /codex-harness serve: listening on (\S+) for /

export const step = <A>(run: () => Promise<A>) => Effect.promise(run)

/** the live processes under `root` (its children, theirs...), from /proc; a zombie is already dead */
export const descendants = (root: number): ReadonlyArray<number> => {
  const parent = new Map<number, number>()
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      if (fields[0] !== "Z") parent.set(Number(entry), Number(fields[1]))
    } catch {
      // gone
    }
  }
  const found: Array<number> = []
  const walk = (pid: number) => {
    for (const [child, ppid] of parent) {
      if (ppid !== pid) continue
      found.push(child)
      walk(child)
    }
  }
  walk(root)
  return found
}
export const stillAlive = (pids: ReadonlyArray<number>) => pids.filter((pid) => {
  try {
    return !fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.startsWith("Z")
  } catch {
    return false
  }
})
/** waits until none of `pids` is alive or the bound passes; the caller checks which are left */
const goneWithin = (pids: ReadonlyArray<number>, bound: Duration.DurationInput) =>
  Effect.sync(() => stillAlive(pids).length).pipe(
    // /proc is the only receipt of a process that is not our child: look again every 50 ms
    Effect.repeat({ until: (left) => left === 0, schedule: Schedule.spaced("50 millis") }),
    Effect.timeout(bound),
    Effect.ignore
  )
const cmdline = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
  } catch {
    return ""
  }
}

/** types a prompt and sends it */
export const sendPrompt = (page: Page, text: string) =>
  step(async () => {
    await page.fill(`[data-testid="prompt"]`, text)
    await page.click(`[data-testid="send"]`)
  })

/** waits (playwright's own polling, bounded) for the page to satisfy a selector */
export const seen = (page: Page, selector: string, state: "visible" | "attached" | "detached" = "visible", timeout = 30_000): Effect.Effect<void> =>
  step(() => page.waitForSelector(selector, { state, timeout })).pipe(Effect.asVoid)

export interface Tab {
  readonly page: Page
  /** what the page threw or logged as an error */
  readonly problems: Array<string>
  readonly close: () => Effect.Effect<void>
}

export interface ServeWithUi {
  readonly serve: Running
  /** the page's address, as serve announced it in serve.json */
  readonly ui: string
  readonly token: string
  readonly browser: Browser
  /** a fresh tab in a context of its own (its own sessionStorage) */
  readonly open: (url: string) => Effect.Effect<Tab>
}

/** serve on the fixture's state dir with `args` added, and a browser; the scope stops both should the test fail */
export const serveWithUi = (
  f: Fixture,
  args: ReadonlyArray<string>,
  browserToUse: ChromiumLaunch
): Effect.Effect<ServeWithUi, never, Scope.Scope> =>
  Effect.gen(function* () {
    const serve = yield* startBin([
      "serve", "--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "--listen", "127.0.0.1:0",
      // the thread catalog reads this CODEX_HOME, not the user's own
      "--supervision-home", path.join(f.stateDir, "supervision-home"),
      ...args
    ])
    yield* Effect.addFinalizer(() =>
      serve.child.exitCode !== null || serve.child.signalCode !== null
        ? Effect.void
        : Effect.sync(() => serve.child.kill("SIGTERM")).pipe(Effect.zipRight(serve.exited), Effect.timeout("20 seconds"), Effect.ignore)
    )
    expect(yield* serve.waitFor(({ stderr }) => listening.test(stderr)), serve.stderr()).toBe(true)
    const announced = JSON.parse(fs.readFileSync(path.join(f.stateDir, "serve.json"), "utf8")) as { pid: number; ui?: string }
    expect(announced.pid).toBe(serve.child.pid)
    const ui = announced.ui!
    expect(ui).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    const token = fs.readFileSync(path.join(f.stateDir, "serve.token"), "utf8").trim()

    const browser: Browser = yield* Effect.acquireRelease(
      step(() => chromium.launch({ executablePath: browserToUse.executablePath, args: [...browserToUse.args], ...(browserToUse.env === undefined ? {} : { env: browserToUse.env }) })),
      (b) => Effect.promise(() => b.close())
    )
    const open = (url: string) =>
      Effect.gen(function* () {
        const context = yield* step(() => browser.newContext({ viewport: { width: 1280, height: 860 } }))
        const page = yield* step(() => context.newPage())
        const problems: Array<string> = []
        page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`))
        page.on("console", (m) => {
          // the token check's refused POST is the one error a browser logs by itself for a wrong token
          if (m.type() === "error" && !/status of 401/.test(m.text())) problems.push(`console: ${m.text()}`)
        })
        yield* step(() => page.goto(url))
        return { page, problems, close: () => step(() => context.close()) }
      })
    return { serve, ui, token, browser, open }
  })

/** the end: the browser closes (its processes too), serve stops on SIGTERM and takes its app-servers with it */
export const shutDown = (f: Fixture, s: ServeWithUi) =>
  Effect.gen(function* () {
    const chromiums = descendants(process.pid).filter((pid) => cmdline(pid).includes("chromium"))
    expect(chromiums.length).toBeGreaterThan(0)
    yield* step(() => s.browser.close())
    // close() returns once the browser's main process is gone; its helpers (zygote, renderer, GPU) exit on their own
    // right after, which on a loaded machine can take a moment: wait for each to go, within a bound for a leftover
    yield* goneWithin(chromiums, "30 seconds")
    expect(stillAlive(chromiums)).toEqual([])
    s.serve.child.kill("SIGTERM")
    const exit = yield* s.serve.exited.pipe(Effect.timeout("90 seconds"))
    // 128 + SIGTERM: stopped by the signal, after its own shutdown (the files it wrote are gone)
    expect(exit, s.serve.stderr()).toEqual({ code: 143, signal: null })
    expect(s.serve.stderr()).toContain("codex-harness serve: stopping")
    expect(fs.existsSync(path.join(f.stateDir, "serve.json"))).toBe(false)
    expect(yield* leftBehind(f.stateDir)).toEqual([])
  })
