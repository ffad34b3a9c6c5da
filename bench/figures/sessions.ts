// Row 6 of bench/figures.ts: 32 sessions on one app-server, 4 turns each, all at once. The harness side is the library
// in a process of its own (harness-sessions.ts); the floor is the raw client with 32 threads on one raw app-server.
// Each round also runs both with a single session, for the app-server's one-session RSS and a lone turn's time.
import { check, cleanUp, type Context, freshDir, freshPrefix, harnessSessions, MODEL, rawArgs, REPLY } from "./context.js"
import type { RawReport } from "../floor/raw-client.js"
import type { HarnessReport } from "./harness-sessions.js"
import { timedNode } from "./proc.js"
import { megabytes, megabytesBare, millis, millisBare, type Row, seconds, secondsBare, show, signed, spread, times } from "./stats.js"
import type { RowResult } from "./rows.js"

export const SESSIONS = 32
export const TURNS = 4

interface Sample {
  readonly turnsMs: number
  readonly maxWaitMs: number
  readonly maxInFlight: number
  readonly turnMsMedian: number
  readonly appServerRssKb: number
}

const harnessRun = async (ctx: Context, sessions: number): Promise<Sample> => {
  const config = {
    stateDir: freshDir(ctx, "lib-state"),
    cwd: ctx.work,
    providerUrl: ctx.model.url,
    model: MODEL,
    sessions,
    turns: TURNS,
    prefix: freshPrefix(),
    reply: REPLY
  }
  const run = check(`harness, ${sessions} sessions`, await timedNode({ args: [harnessSessions, JSON.stringify(config)], env: ctx.env }))
  await cleanUp(ctx)
  return JSON.parse(run.stdout.trim().split("\n").pop()!) as HarnessReport
}

const rawRun = async (ctx: Context, threads: number): Promise<Sample> => {
  const run = check(
    `raw floor, ${threads} threads`,
    await timedNode({ args: rawArgs(ctx, { threads, turns: TURNS, prefix: freshPrefix(), report: true }), env: ctx.env })
  )
  await cleanUp(ctx)
  return JSON.parse(run.stdout) as RawReport
}

export const manySessions = async (ctx: Context, rounds: number): Promise<RowResult> => {
  const h32: Array<Sample> = []
  const r32: Array<Sample> = []
  const h1: Array<Sample> = []
  const r1: Array<Sample> = []
  const tasks = [
    async () => void h32.push(await harnessRun(ctx, SESSIONS)),
    async () => void r32.push(await rawRun(ctx, SESSIONS)),
    async () => void h1.push(await harnessRun(ctx, 1)),
    async () => void r1.push(await rawRun(ctx, 1))
  ]
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < tasks.length; k++) await tasks[(i + k) % tasks.length]!()
  }
  const of = (xs: ReadonlyArray<Sample>, f: (s: Sample) => number) => spread(xs.map(f))
  const perTurn = (s: Sample) => s.turnsMs / (SESSIONS * TURNS)
  const rssMany = of(h32, (s) => s.appServerRssKb)
  const rssOne = of(h1, (s) => s.appServerRssKb)
  const rssRatio = rssMany.median / rssOne.median
  const costH = of(h32, perTurn)
  const costR = of(r32, perTurn)
  const costRatio = costH.median / costR.median
  const waitH = of(h32, (s) => s.maxWaitMs)
  const waitR = of(r32, (s) => s.maxWaitMs)
  const inFlightH = of(h32, (s) => s.maxInFlight)
  const inFlightR = of(r32, (s) => s.maxInFlight)
  const rows: Array<Row> = [
    {
      figure: `app-server RSS, ${SESSIONS} sessions x ${TURNS} turns`,
      floor: `1 session ${show(rssOne, megabytes, megabytesBare)}`,
      harness: show(rssMany, megabytes, megabytesBare),
      compare: times(rssRatio),
      goal: "< 2x 1 session",
      met: rssRatio < 2
    },
    {
      figure: `per-turn cost, ${SESSIONS}x${TURNS} turns at once`,
      floor: show(costR, millis, millisBare),
      harness: show(costH, millis, millisBare),
      compare: times(costRatio),
      goal: "<= 1.1x",
      met: costRatio <= 1.1
    },
    {
      figure: `turns running at once, of ${SESSIONS} sessions`,
      floor: `${show(inFlightR, String)}, wait ${show(waitR, seconds, secondsBare)}`,
      harness: `${show(inFlightH, String)}, wait ${show(waitH, seconds, secondsBare)}`,
      compare: `wait ${signed(waitH.median - waitR.median, seconds)}`,
      goal: `${SESSIONS}: none waits`,
      met: inFlightH.median >= SESSIONS
    }
  ]
  return {
    rows,
    notes: [
      `${SESSIONS} sessions: app-server RSS of the raw floor ${megabytes(of(r32, (s) => s.appServerRssKb).median)} ` +
      `(1 thread ${megabytes(of(r1, (s) => s.appServerRssKb).median)}); a lone ${TURNS}-turn session: ` +
      `harness ${millis(of(h1, (s) => s.turnsMs / TURNS).median)}/turn, floor ${millis(of(r1, (s) => s.turnsMs / TURNS).median)}/turn; ` +
      `median turn under load: harness ${millis(of(h32, (s) => s.turnMsMedian).median)}, floor ${millis(of(r32, (s) => s.turnMsMedian).median)}`
    ]
  }
}
