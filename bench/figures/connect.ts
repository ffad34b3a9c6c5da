// Row `connect` of bench/figures.ts (issue 18, then issue 31 item 2): a `run --connect` turn costs no app-server
// start-up. Its figure is the wall time of one warm `codex-harness run --connect URL --session S PROMPT` process (spawn
// to exit) through a running `codex-harness serve`, against `node -e 0` plus 1.5 times the per-message cost of a warm
// piped `chat` (the `warm` row's slope, same code: rows.ts pipedChat), all measured in the same run: a process per turn
// pays Node's start whatever it loads, and the rest of it may cost half a turn.
//
// Each run: one `serve --state-dir DIR --cwd WORK --listen 127.0.0.1:0 --provider-url MODEL` (ready when it prints its
// "listening on URL" line, checked against DIR/serve.json and its pid), WARM_UP_TURNS warm-up `run --connect`s (the
// service's app-server and thread start in the first), then CONNECT_TURNS sequential `run --connect` processes on one
// session, each timed alone; the token goes in $CODEX_HARNESS_TOKEN (read from DIR/serve.token), never on argv. Then, for a note, as many
// turns with this process as the client on one open WebSocket: the turn through the serve without a process around it.
// After each turn every marked process not below the serve must be gone (proc.ts settle, the serve spared); at the end
// the serve gets SIGTERM, must exit by itself, and then the usual leftover check runs with nothing spared, so its
// app-server is covered too. In the same run, interleaved with the order rotating: the piped chats of WARM_FEW and
// WARM_MANY messages (the comparison side), and for context one cold `run` and one `node -e 0` (what any
// process-per-turn client pays before its turn).
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Effect, Stream } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import * as ControlClient from "../../src/control/ControlClient.js"
import { check, cleanUp, cliArgs, cliNode, type Context, freshDir, freshPrefix, message, REPLY } from "./context.js"
import { cmdline, descendants, settle, timedNode } from "./proc.js"
import { pipedChat, type RowResult, WARM_FEW, WARM_MANY } from "./rows.js"
import { median, millis, millisBare, seconds, show, signed, spread, times } from "./stats.js"

/** measured `run --connect` turns per run (after the warm-up) */
export const CONNECT_TURNS = 10
/**
 * `run --connect` turns before the measured ones, as many as the comparison's chat has before its slope (WARM_FEW):
 * the serve then runs code V8 has compiled for it, as the chat does by its sixth message. (With one warm-up turn the
 * next ten ran at 330-380 ms here against 240-280 ms from the twelfth on: a serve that has just started is not warm.)
 */
const WARM_UP_TURNS = WARM_FEW
/** the goal: a whole `run --connect` process within `node -e 0` plus this many warm chat turns */
const CHAT_TURNS = 1.5

export const tokenEnv = "CODEX_HARNESS_TOKEN"

export interface Serve {
  readonly child: ChildProcess
  readonly pid: number
  readonly url: string
  readonly token: string
  /** spawn to its "listening on" line, ms */
  readonly readyMs: number
  readonly stderr: () => string
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
}

/** the serve and every process below it, as of now */
export const treeOf = (pid: number): ReadonlySet<number> => new Set([pid, ...descendants(pid)])

/** `extra`: more of serve's flags (`--otlp URL`), after the ones every serve here gets */
export const startServe = (ctx: Context, extra: ReadonlyArray<string> = []): Promise<Serve> =>
  new Promise((resolve, reject) => {
    const dir = freshDir(ctx, "serve-state")
    const args = [...cliNode(), "serve", "--state-dir", dir, "--cwd", ctx.work, "--listen", "127.0.0.1:0", "--provider-url", ctx.model.url, ...extra]
    const t0 = performance.now()
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...ctx.env } })
    let stderr = ""
    let settled = false
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
      child.once("exit", (code, signal) => done({ code, signal }))
    )
    const fail = (why: string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      child.kill("SIGKILL")
      reject(new Error(`codex-harness serve: ${why}; stderr: ${stderr.trim().split("\n").slice(-3).join(" / ")}`))
    }
    const timer = setTimeout(() => fail("no \"listening on\" line within 60 s"), 60_000)
    child.stdout!.resume()
    child.stderr!.setEncoding("utf8")
    child.stderr!.on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-8000)
      const listening = /listening on (\S+) for /.exec(stderr)
      if (settled || listening === null) return
      const readyMs = performance.now() - t0
      settled = true
      clearTimeout(timer)
      try {
        // the receipt: serve.json names this process and this URL; the token is the state dir's, 0600
        const announced = JSON.parse(fs.readFileSync(path.join(dir, "serve.json"), "utf8")) as { pid: number; url: string }
        if (announced.pid !== child.pid || announced.url !== listening[1]) {
          throw new Error(`serve.json says pid ${announced.pid} at ${announced.url}, the process is ${child.pid} at ${listening[1]}`)
        }
        const token = fs.readFileSync(path.join(dir, "serve.token"), "utf8").trim()
        resolve({ child, pid: child.pid!, url: listening[1]!, token, readyMs, stderr: () => stderr, exited })
      } catch (error) {
        child.kill("SIGKILL")
        reject(error)
      }
    })
    child.once("error", (error) => fail(error.message))
    void exited.then(({ code, signal }) => fail(`exited (${signal ?? code}) before it listened`))
  })

/** SIGTERM, then its own exit within 30 s (else SIGKILL and a failure); how long it took */
export const stopServe = async (serve: Serve): Promise<{ readonly ms: number; readonly code: number | null; readonly signal: NodeJS.Signals | null }> => {
  const t0 = performance.now()
  serve.child.kill("SIGTERM")
  let timer: NodeJS.Timeout | undefined
  const outcome = await Promise.race([
    serve.exited,
    new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), 30_000)))
  ])
  clearTimeout(timer)
  if (outcome === "timeout") {
    serve.child.kill("SIGKILL")
    throw new Error(`codex-harness serve did not exit within 30 s of SIGTERM; stderr: ${serve.stderr().trim().split("\n").slice(-3).join(" / ")}`)
  }
  return { ms: performance.now() - t0, ...outcome }
}

interface ConnectRun {
  /** each measured turn, spawn to exit */
  readonly turns: ReadonlyArray<number>
  /** each measured turn, spawn to its reply on stdout */
  readonly replies: ReadonlyArray<number>
  readonly warmUpMs: number
  readonly readyMs: number
  readonly stopMs: number
  /** each turn with this process as the client on one open WebSocket: the turn alone, through the serve */
  readonly inProcess: ReadonlyArray<number>
  /** the serve's tree just before SIGTERM */
  readonly tree: ReadonlyArray<string>
}

/**
 * `count` turns from this process (ControlClient, the code `run --connect` uses) on one WebSocket opened before the
 * first: each StartTurn timed to the end of its stream, which must carry turn.completed with REPLY
 */
const turnsInProcess = (target: ControlClient.Target, session: string, prefix: string, count: number): Promise<ReadonlyArray<number>> =>
  Effect.runPromise(
    Effect.scoped(Effect.gen(function* () {
      const client = yield* ControlClient.make(target)
      yield* client.Health() // opens the connection
      const times: Array<number> = []
      for (let i = 0; i < count; i++) {
        const t0 = performance.now()
        let final: string | null | undefined
        yield* client.StartTurn({ session, prompt: message(prefix, 1, i), approvals: "deny" }).pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => {
              if (event.type === "turn.completed") final = event.final_text
            })
          )
        )
        if (final !== REPLY) return yield* Effect.dieMessage(`in-process StartTurn ${i}: ended without ${JSON.stringify(REPLY)} (${String(final)})`)
        times.push(performance.now() - t0)
      }
      return times.slice(1) // the first is a warm-up of this process's client code
    })).pipe(Effect.provide(NodeSocket.layerWebSocketConstructor))
  )

/** one serve, its warm-up turn and CONNECT_TURNS timed `run --connect` turns on one session, then SIGTERM */
const connectRun = async (ctx: Context): Promise<ConnectRun> => {
  const serve = await startServe(ctx)
  let stopped = false
  try {
    const spared = () => treeOf(serve.pid)
    const env = { ...ctx.env, [tokenEnv]: serve.token }
    const session = crypto.randomUUID()
    const prefix = freshPrefix()
    const turn = async (i: number) => {
      const args = [...cliNode(), "run", "--connect", serve.url, "--session", session, message(prefix, 0, i)]
      const run = check(`codex-harness run --connect (turn ${i})`, await timedNode({ args, env, watchLine: REPLY }), REPLY, 1)
      const found = await settle(3_000, spared)
      ctx.leftovers.atEnd += found.atEnd
      ctx.leftovers.left.push(...found.left)
      return run
    }
    const warmUpMs = (await turn(0)).ms
    for (let i = 1; i < WARM_UP_TURNS; i++) await turn(i)
    const turns: Array<number> = []
    const replies: Array<number> = []
    for (let i = WARM_UP_TURNS; i < WARM_UP_TURNS + CONNECT_TURNS; i++) {
      const run = await turn(i)
      turns.push(run.ms)
      replies.push(run.lineTimes[0] ?? NaN)
    }
    const inProcess = await turnsInProcess({ url: serve.url, token: serve.token }, session, prefix, CONNECT_TURNS + 1)
    const tree = [...treeOf(serve.pid)].filter((pid) => pid !== serve.pid).map((pid) => {
      const line = cmdline(pid)
      return `${path.basename(line.split(" ")[0] ?? "?")}${/ app-server\b/.test(line) ? " app-server" : ""} (${pid})`
    })
    stopped = true
    const stop = await stopServe(serve)
    if (!/serve: stopping/.test(serve.stderr())) throw new Error(`codex-harness serve exited (${stop.signal ?? stop.code}) without saying it stopped`)
    await cleanUp(ctx) // nothing spared now: the serve's app-server and anything else below it must be gone
    return { turns, replies, warmUpMs, readyMs: serve.readyMs, stopMs: stop.ms, inProcess, tree }
  } finally {
    if (!stopped) {
      await stopServe(serve).catch(() => {})
      await cleanUp(ctx)
    }
  }
}

/** runs the tasks of one round in a rotating order: round i starts with task i mod n */
const rotate = async (round: number, tasks: ReadonlyArray<() => Promise<void>>) => {
  for (let k = 0; k < tasks.length; k++) await tasks[(round + k) % tasks.length]!()
}

export const connectTurn = async (ctx: Context, runs: number): Promise<RowResult> => {
  const connect: Array<number> = [] // per run: the median of its turns
  const allTurns: Array<number> = []
  const allReplies: Array<number> = []
  const warmUps: Array<number> = []
  const readies: Array<number> = []
  const stops: Array<number> = []
  let tree: ReadonlyArray<string> = []
  const chat: Record<number, Array<number>> = { [WARM_FEW]: [], [WARM_MANY]: [] }
  const chatGaps: Array<number> = []
  const cold: Array<number> = []
  const node: Array<number> = []
  const inProcess: Array<number> = [] // per run: the median of its in-process turns
  for (let i = 0; i < runs; i++) {
    await rotate(i, [
      async () => {
        const run = await connectRun(ctx)
        connect.push(median(run.turns))
        allTurns.push(...run.turns)
        allReplies.push(...run.replies)
        warmUps.push(run.warmUpMs)
        readies.push(run.readyMs)
        stops.push(run.stopMs)
        inProcess.push(median(run.inProcess))
        tree = run.tree
      },
      async () => void chat[WARM_FEW]!.push((await pipedChat(ctx, WARM_FEW)).ms),
      async () => {
        const run = await pipedChat(ctx, WARM_MANY)
        chat[WARM_MANY]!.push(run.ms)
        run.lineTimes.slice(1).forEach((t, k) => chatGaps.push(t - run.lineTimes[k]!))
      },
      async () => {
        const run = await timedNode({ args: cliArgs(ctx, "run", message(freshPrefix(), 0, 0)), env: ctx.env })
        cold.push(check("codex-harness run (cold)", run, REPLY, 1).ms)
        await cleanUp(ctx)
        // Node's own start and exit: what any client in a process of its own pays on top of the turn
        node.push(check("node -e 0", await timedNode({ args: ["-e", "0"], env: ctx.env })).ms)
        await cleanUp(ctx)
      }
    ])
  }
  const slopes = chat[WARM_MANY]!.map((x, k) => (x - chat[WARM_FEW]![k]!) / (WARM_MANY - WARM_FEW))
  const c = spread(connect)
  const s = spread(slopes)
  const n = spread(node)
  // issue 31: a whole process per turn may cost Node's own start plus half a turn more than the turn in a warm chat
  const budget = n.median + CHAT_TURNS * s.median
  return {
    rows: [{
      figure: "warm `run --connect`, whole process",
      floor: `node ${millis(n.median)} + ${CHAT_TURNS}x chat ${millis(s.median)} = ${millis(budget)}`,
      harness: show(c, millis, millisBare),
      compare: signed(c.median - budget, millis),
      goal: `<= node -e 0 + ${CHAT_TURNS}x chat turn`,
      met: c.median <= budget
    }],
    notes: [
      `connect: a warm \`run --connect\` process ${millis(c.median)} per turn (median of each run's ${CONNECT_TURNS} turns; ` +
      `all ${allTurns.length} turns ${show(spread(allTurns), millis, millisBare)}), its reply on stdout ${millis(median(allReplies))} after spawn; ` +
      `the comparison: a warm piped \`chat\` ${millis(s.median)} per message (slope ${WARM_FEW} -> ${WARM_MANY}: ` +
      `${seconds(spread(chat[WARM_FEW]!).median)}, ${seconds(spread(chat[WARM_MANY]!).median)}; reply to reply inside the ` +
      `${WARM_MANY}-message chat ${millis(median(chatGaps))}); a cold \`run\` (fresh state dir, own app-server) ${seconds(spread(cold).median)} ` +
      `(${times(spread(cold).median / c.median)} the connect turn)`,
      `connect: \`node -e 0\` ${millis(spread(node).median)}, so a client in a process of its own cannot go below ` +
      `${millis(spread(node).median + s.median)} a turn (${times((spread(node).median + s.median) / s.median)} the chat's per message)`,
      `connect: the turn alone through the serve (this process as the client, one open WebSocket, ${CONNECT_TURNS} turns a run): ` +
      `${show(spread(inProcess), millis, millisBare)}, ${times(spread(inProcess).median / s.median)} the chat's per message`,
      `connect: serve ready (\"listening on\") ${seconds(spread(readies).median)} after spawn, its warm-up turn ` +
      `${seconds(spread(warmUps).median)}, stopped ${seconds(spread(stops).median)} after SIGTERM; below it at SIGTERM: ` +
      `${tree.length === 0 ? "nothing" : tree.join(", ")}`
    ]
  }
}
