// Rows 1-5 of bench/figures.ts: whole fresh `node` processes, the compiled CLI (through bin/codex-harness.js) against
// the raw floor (bench/floor/raw-client.ts), interleaved run by run with the order rotating.
import {
  check,
  cleanUp,
  cliArgs,
  cliNode,
  type Context,
  freshPrefix,
  message,
  rawArgs,
  REPLY,
  scriptToolTurns,
  TOOL_REPLY
} from "./context.js"
import type { RawReport } from "../floor/raw-client.js"
import { coldPhases } from "./phases.js"
import { nodeBaselineKb, type Timed, timedNode } from "./proc.js"
import {
  median,
  megabytes,
  megabytesBare,
  millis,
  millisBare,
  type Row,
  seconds,
  secondsBare,
  show,
  signed,
  spread,
  times
} from "./stats.js"

export interface RowResult {
  readonly rows: ReadonlyArray<Row>
  readonly notes: ReadonlyArray<string>
}

/** runs the tasks of one round in a rotating order: round i starts with task i mod n */
const rotate = async (round: number, tasks: ReadonlyArray<() => Promise<void>>) => {
  for (let k = 0; k < tasks.length; k++) await tasks[(round + k) % tasks.length]!()
}

const messages = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => message(prefix, 0, i) + "\n").join("")

// ---------------------------------------------------------------------------------------------------------------------
// 1. cold run

export const coldRun = async (ctx: Context, runs: number): Promise<RowResult> => {
  const harness: Array<number> = []
  const raw: Array<number> = []
  const rawInit: Array<number> = []
  const rawDone: Array<number> = []
  for (let i = 0; i < runs; i++) {
    await rotate(i, [
      async () => {
        const prefix = freshPrefix()
        const run = await timedNode({ args: cliArgs(ctx, "run", message(prefix, 0, 0)), env: ctx.env })
        harness.push(check("codex-harness run", run, REPLY, 1).ms)
        await cleanUp(ctx)
      },
      async () => {
        const run = await timedNode({ args: rawArgs(ctx, { threads: 1, turns: 1, prefix: freshPrefix(), report: true }), env: ctx.env })
        raw.push(check("raw floor", run).ms)
        const report = JSON.parse(run.stdout) as RawReport
        rawInit.push(report.initializedAtMs)
        rawDone.push(report.doneAtMs)
        await cleanUp(ctx)
      }
    ])
  }
  const h = spread(harness)
  const r = spread(raw)
  const diff = h.median - r.median
  // one more cold run, recorded, for where its time goes (issue 31 item 1)
  const p = await coldPhases(ctx)
  await cleanUp(ctx)
  const phase = (ms: number | undefined) => (ms === undefined ? "?" : seconds(ms))
  return {
    rows: [{
      figure: "cold `run` (fresh state, 1 turn, exit)",
      floor: show(r, seconds, secondsBare),
      harness: show(h, seconds, secondsBare),
      compare: signed(diff, seconds),
      goal: "<= floor +0.30 s",
      met: diff <= 300
    }],
    notes: [
      `cold: the floor's codex answered \`initialize\` ${seconds(spread(rawInit).median)} after its node process started, ` +
      `its turn was done at ${seconds(spread(rawDone).median)}, the process gone at ${seconds(r.median)}`,
      // the bin spawns the app-server and writes \`initialize\` before the CLI loads (src/cli/prelaunch.ts); the recording
      // starts when the CLI's transport takes that process, so "taken" is when the CLI was ready for it
      `cold: phases of one more (recorded) cold \`run\`, after its process was spawned (the bin started its app-server and ` +
      `wrote \`initialize\` at once): the CLI took the app-server ` +
      `${phase(p.initializeSent)}, answered ${phase(p.initializeAnswered)}, thread ready ${phase(p.threadReady)}, first token ` +
      `${phase(p.firstToken)}, turn completed ${phase(p.turnCompleted)}, exit ${seconds(p.exited)}`
    ]
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// 2. --help

export const help = async (ctx: Context, runs: number): Promise<RowResult> => {
  const harness: Array<number> = []
  const harnessPeak: Array<number> = []
  const node: Array<number> = []
  const nodePeak: Array<number> = []
  for (let i = 0; i < runs; i++) {
    await rotate(i, [
      async () => {
        const run = check("codex-harness --help", await timedNode({ args: [...cliNode(), "--help"], peakDir: ctx.root, env: ctx.env }))
        harness.push(run.ms)
        harnessPeak.push(run.peakKb ?? NaN)
        await cleanUp(ctx)
      },
      async () => {
        const run = check("node -e 0", await timedNode({ args: ["-e", "0"], peakDir: ctx.root, env: ctx.env }))
        node.push(run.ms)
        nodePeak.push(run.peakKb ?? NaN)
        await cleanUp(ctx)
      }
    ])
  }
  const h = spread(harness)
  const n = spread(node)
  const hp = spread(harnessPeak)
  const np = spread(nodePeak)
  return {
    rows: [
      {
        figure: "`--help` wall time (vs `node -e 0`)",
        floor: show(n, seconds, secondsBare),
        harness: show(h, seconds, secondsBare),
        compare: signed(h.median - n.median, seconds),
        goal: "<= 0.15 s",
        met: h.median <= 150
      },
      {
        figure: "`--help` peak RSS (vs `node -e 0`)",
        floor: show(np, megabytes, megabytesBare),
        harness: show(hp, megabytes, megabytesBare),
        compare: signed(hp.median - np.median, megabytes),
        goal: "-",
        met: undefined
      }
    ],
    notes: []
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// 3 and 4. warm turns: the slope of whole piped chats (one process each) from `few` to `many` messages

/** the warm row's few and many messages: its figure is the per-message slope between them (the connect row's too) */
export const WARM_FEW = 5
export const WARM_MANY = 25

/**
 * One whole piped `chat` of `n` messages in a fresh state dir (checked: exit 0, n replies; then the leftover check),
 * timed from spawn to exit, with the arrival time of each reply.
 */
export const pipedChat = async (ctx: Context, n: number, tools = false): Promise<Timed> => {
  const text = tools ? TOOL_REPLY : REPLY
  const prefix = freshPrefix()
  if (tools) scriptToolTurns(ctx, prefix, 1, n)
  const run = await timedNode({ args: cliArgs(ctx, "chat"), stdin: messages(prefix, n), env: ctx.env, watchLine: text })
  check(`codex-harness chat (${n} messages)`, run, text, n)
  await cleanUp(ctx)
  return run
}

interface SlopeOptions {
  readonly figure: string
  readonly few: number
  readonly many: number
  readonly tools: boolean
}

const slope = async (ctx: Context, runs: number, options: SlopeOptions): Promise<RowResult> => {
  const { few, many, tools } = options
  const harness: Record<number, Array<number>> = { [few]: [], [many]: [] }
  const raw: Record<number, Array<number>> = { [few]: [], [many]: [] }
  // seen inside the same runs, without their start and exit: the harness's reply-to-reply times, the floor's turns
  const harnessGaps: Array<number> = []
  const rawTurns: Array<number> = []
  const harnessTask = (n: number) => async () => {
    const run = await pipedChat(ctx, n, tools)
    harness[n]!.push(run.ms)
    if (n === many) run.lineTimes.slice(1).forEach((t, i) => harnessGaps.push(t - run.lineTimes[i]!))
  }
  const rawTask = (n: number) => async () => {
    const prefix = freshPrefix()
    if (tools) scriptToolTurns(ctx, prefix, 1, n)
    const run = check(`raw floor (${n} turns)`, await timedNode({ args: rawArgs(ctx, { threads: 1, turns: n, prefix, report: true }), env: ctx.env }))
    const report = JSON.parse(run.stdout) as RawReport
    if (tools && report.commands !== 3 * n) throw new Error(`raw floor: ${report.commands} commands ran in ${n} turns, not ${3 * n}`)
    raw[n]!.push(run.ms)
    if (n === many) rawTurns.push(report.turnMsMedian)
    await cleanUp(ctx)
  }
  for (let i = 0; i < runs; i++) {
    await rotate(i, [harnessTask(few), rawTask(few), harnessTask(many), rawTask(many)])
  }
  // one slope per round (its own few and many), then their median and range
  const slopes = (t: Record<number, Array<number>>) => t[many]!.map((x, i) => (x - t[few]![i]!) / (many - few))
  const h = spread(slopes(harness))
  const r = spread(slopes(raw))
  const ratio = h.median / r.median
  return {
    rows: [{
      figure: options.figure,
      floor: show(r, millis, millisBare),
      harness: show(h, millis, millisBare),
      compare: times(ratio),
      goal: "<= 1.05x",
      met: ratio <= 1.05
    }],
    notes: [
      `${options.figure}: whole-process medians, harness ${few} msgs ${seconds(spread(harness[few]!).median)}, ` +
      `${many} msgs ${seconds(spread(harness[many]!).median)}; floor ${seconds(spread(raw[few]!).median)}, ` +
      `${seconds(spread(raw[many]!).median)}. Inside the ${many}-message runs: harness reply to reply ` +
      `${millis(median(harnessGaps))}, floor turn ${millis(median(rawTurns))} (${times(median(harnessGaps) / median(rawTurns))})`
    ]
  }
}

export const warmTurn = (ctx: Context, runs: number) =>
  slope(ctx, runs, { figure: `warm turn, no tools (slope ${WARM_FEW} -> ${WARM_MANY} msgs)`, few: WARM_FEW, many: WARM_MANY, tools: false })

export const toolTurn = (ctx: Context, runs: number) =>
  slope(ctx, runs, { figure: "turn with 3 `exec_command` (slope 2 -> 6)", few: 2, many: 6, tools: true })

// ---------------------------------------------------------------------------------------------------------------------
// 5. memory of the harness over a 20-turn piped chat

export const memory = async (ctx: Context, runs: number): Promise<RowResult> => {
  const peaks: Array<number> = []
  const baselines: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const prefix = freshPrefix()
    const run = await timedNode({ args: cliArgs(ctx, "chat"), stdin: messages(prefix, 20), peakDir: ctx.root, env: ctx.env })
    check("codex-harness chat (20 messages)", run, REPLY, 20)
    if (run.peakKb === undefined) throw new Error("the chat exited without reporting its peak RSS")
    peaks.push(run.peakKb)
    await cleanUp(ctx)
    baselines.push((await nodeBaselineKb()).rss)
  }
  const h = spread(peaks)
  const b = spread(baselines)
  return {
    rows: [{
      figure: "harness peak RSS, 20-turn piped chat",
      floor: `node ${show(b, megabytes, megabytesBare)}`,
      harness: show(h, megabytes, megabytesBare),
      compare: signed(h.median - b.median, megabytes),
      goal: "<= 100 MB",
      met: h.median <= 100 * 1024
    }],
    notes: []
  }
}
