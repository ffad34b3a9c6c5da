// Row `hot` of bench/figures.ts (issue 27, item 4, "a lean hot path"): what a warm turn costs the harness's Node process
// against the raw floor's, quiet and with two busy loops running, all in one run:
//
//   cpu     Node CPU per warm turn: process.cpuUsage() of the Node process alone (a --require preload writes it as the
//           process exits; the app-server's CPU is not in it), the slope (c25 - c5) / 20 of a piped `chat` of 5 and of
//           25 messages against the raw floor (bench/floor/raw-client.ts) doing 5 and 25 turns. Goal <= 2x.
//   warm    the wall-time slope of the same processes. Goal <= 1.05x. Two rows without a goal beside it: the floor
//           run again with the hooks S20 makes the harness inject, each the no-op `true` as the harness sends them when
//           no HookPolicy decides (Codex runs the Stop hook at every turn's end and waits for it), against the floor
//           without them, and the harness against that hooked floor: the part of the ratio that is Codex's own work.
//   tools   the same with three exec_command calls per message, 2 and 6 messages. Goal <= 1.05x.
//   serve   a turn through `codex-harness serve` with this process as the client on one held WebSocket
//           (ControlClient.StartTurn to the end of its stream), against the reply-to-reply time of the 25-message piped
//           chat of the same round. Goal <= 1.0x.
//
// "loaded": the same rounds again with two `node -e "for(;;){}"` children running (proc.ts busyLoops), SIGKILLed and
// reaped after; they carry no FIGURES_MARK, so the leftover checks after each measurement do not take them for
// leftovers, and they are checked gone after SIGKILL (and killed by the bench's finalizer on Ctrl-C).
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Effect, Stream } from "effect"
import * as crypto from "node:crypto"
import { performance } from "node:perf_hooks"
import * as ControlClient from "../../src/control/ControlClient.js"
import type { RawReport } from "../floor/raw-client.js"
import { startServe, stopServe } from "./connect.js"
import { check, cleanUp, cliArgs, type Context, freshPrefix, message, noOpHooks, rawArgs, REPLY, scriptToolTurns, TOOL_REPLY } from "./context.js"
import { busyLoops, cpuOfPid, timedNode } from "./proc.js"
import type { RowResult } from "./rows.js"
import { median, millis, millisBare, type Row, show, spread, times } from "./stats.js"

const WARM = { few: 5, many: 25 } as const
const TOOLS = { few: 2, many: 6 } as const
/** held-connection turns through the serve per round, after two warm-up turns (the first starts its app-server) */
const SERVE_TURNS = 10
const SERVE_WARMUP = 2

const messages = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => message(prefix, 0, i) + "\n").join("")

const rotate = async (round: number, tasks: ReadonlyArray<() => Promise<void>>) => {
  for (let k = 0; k < tasks.length; k++) await tasks[(round + k) % tasks.length]!()
}

interface Sample {
  readonly ms: number
  readonly cpuMs: number
  /** inside the run: the harness's reply-to-reply times, or the floor's turn median */
  readonly inRun: ReadonlyArray<number>
}

const chat = async (ctx: Context, n: number, tools: boolean): Promise<Sample> => {
  const text = tools ? TOOL_REPLY : REPLY
  const prefix = freshPrefix()
  if (tools) scriptToolTurns(ctx, prefix, 1, n)
  const run = await timedNode({ args: cliArgs(ctx, "chat"), stdin: messages(prefix, n), env: ctx.env, watchLine: text, cpuDir: ctx.root })
  check(`codex-harness chat (${n} messages${tools ? ", tools" : ""})`, run, text, n)
  await cleanUp(ctx)
  if (run.cpuMs === undefined) throw new Error("the chat exited without reporting its CPU time")
  return { ms: run.ms, cpuMs: run.cpuMs, inRun: run.lineTimes.slice(1).map((t, i) => t - run.lineTimes[i]!) }
}

const raw = async (ctx: Context, n: number, tools: boolean, hooks = false): Promise<Sample> => {
  const prefix = freshPrefix()
  if (tools) scriptToolTurns(ctx, prefix, 1, n)
  const what = `raw floor (${n} turns${tools ? ", tools" : ""}${hooks ? ", the no-op hooks" : ""})`
  const run = check(
    what,
    await timedNode({
      args: rawArgs(ctx, { threads: 1, turns: n, prefix, report: true, ...(hooks ? { threadConfig: noOpHooks } : {}) }),
      env: ctx.env,
      cpuDir: ctx.root
    })
  )
  const report = JSON.parse(run.stdout) as RawReport
  if (tools && report.commands !== 3 * n) throw new Error(`raw floor: ${report.commands} commands ran in ${n} turns, not ${3 * n}`)
  if (hooks && report.hooksRun < n) throw new Error(`${what}: ${report.hooksRun} hooks ran in ${n} turns, fewer than one a turn`)
  await cleanUp(ctx)
  if (run.cpuMs === undefined) throw new Error("the raw floor exited without reporting its CPU time")
  return { ms: run.ms, cpuMs: run.cpuMs, inRun: [report.turnMsMedian] }
}

interface ServeSample {
  /** each held-connection turn, StartTurn to the end of its stream */
  readonly turns: ReadonlyArray<number>
  /** the serve process's CPU per measured turn (/proc, clock ticks) */
  readonly cpuPerTurnMs: number
}

/** one serve; SERVE_WARMUP + SERVE_TURNS turns from this process on one WebSocket; SIGTERM; the leftover check */
const serveTurns = async (ctx: Context): Promise<ServeSample> => {
  const serve = await startServe(ctx)
  try {
    const session = crypto.randomUUID()
    const prefix = freshPrefix()
    return await Effect.runPromise(
      Effect.scoped(Effect.gen(function* () {
        const client = yield* ControlClient.make({ url: serve.url, token: serve.token })
        yield* client.Health()
        const turns: Array<number> = []
        let cpu0 = 0
        for (let i = 0; i < SERVE_WARMUP + SERVE_TURNS; i++) {
          if (i === SERVE_WARMUP) cpu0 = cpuOfPid(serve.pid) ?? NaN
          const t0 = performance.now()
          let final: string | null | undefined
          yield* client.StartTurn({ session, prompt: message(prefix, 0, i), approvals: "deny" }).pipe(
            Stream.runForEach((event) =>
              Effect.sync(() => {
                if (event.type === "turn.completed") final = event.final_text
              })
            )
          )
          if (final !== REPLY) return yield* Effect.dieMessage(`serve turn ${i}: ended without ${JSON.stringify(REPLY)} (${String(final)})`)
          if (i >= SERVE_WARMUP) turns.push(performance.now() - t0)
        }
        const cpu1 = cpuOfPid(serve.pid) ?? NaN
        return { turns, cpuPerTurnMs: (cpu1 - cpu0) / SERVE_TURNS }
      })).pipe(Effect.provide(NodeSocket.layerWebSocketConstructor))
    )
  } finally {
    await stopServe(serve).catch(() => {})
    await cleanUp(ctx) // nothing spared: the serve's app-server must be gone too
  }
}

interface Condition {
  readonly cpu: { readonly harness: ReadonlyArray<number>; readonly raw: ReadonlyArray<number> }
  readonly warm: { readonly harness: ReadonlyArray<number>; readonly raw: ReadonlyArray<number> }
  /** the raw floor with the no-op hooks, warm-turn slope */
  readonly warmHooked: ReadonlyArray<number>
  readonly tools: { readonly harness: ReadonlyArray<number>; readonly raw: ReadonlyArray<number> }
  readonly toolsCpu: { readonly harness: ReadonlyArray<number>; readonly raw: ReadonlyArray<number> }
  /** per round: the median held-connection serve turn, and the median reply-to-reply of the round's 25-message chat */
  readonly serve: ReadonlyArray<number>
  readonly chatTurn: ReadonlyArray<number>
  readonly serveCpu: ReadonlyArray<number>
  readonly inRun: { readonly harness: ReadonlyArray<number>; readonly raw: ReadonlyArray<number> }
}

const slopeOf = (few: Sample, many: Sample, span: number, pick: (s: Sample) => number) => (pick(many) - pick(few)) / span

const condition = async (ctx: Context, runs: number): Promise<Condition> => {
  const out = {
    cpu: { harness: [] as Array<number>, raw: [] as Array<number> },
    warm: { harness: [] as Array<number>, raw: [] as Array<number> },
    warmHooked: [] as Array<number>,
    tools: { harness: [] as Array<number>, raw: [] as Array<number> },
    toolsCpu: { harness: [] as Array<number>, raw: [] as Array<number> },
    serve: [] as Array<number>,
    chatTurn: [] as Array<number>,
    serveCpu: [] as Array<number>,
    inRun: { harness: [] as Array<number>, raw: [] as Array<number> }
  }
  for (let i = 0; i < runs; i++) {
    const s: Record<string, Sample> = {}
    let served: ServeSample | undefined
    await rotate(i, [
      async () => void (s.hFew = await chat(ctx, WARM.few, false)),
      async () => void (s.rFew = await raw(ctx, WARM.few, false)),
      async () => void (s.hMany = await chat(ctx, WARM.many, false)),
      async () => void (s.rMany = await raw(ctx, WARM.many, false)),
      async () => void (s.rhFew = await raw(ctx, WARM.few, false, true)),
      async () => void (s.rhMany = await raw(ctx, WARM.many, false, true)),
      async () => void (s.hTFew = await chat(ctx, TOOLS.few, true)),
      async () => void (s.rTFew = await raw(ctx, TOOLS.few, true)),
      async () => void (s.hTMany = await chat(ctx, TOOLS.many, true)),
      async () => void (s.rTMany = await raw(ctx, TOOLS.many, true)),
      async () => void (served = await serveTurns(ctx))
    ])
    const span = WARM.many - WARM.few
    const tspan = TOOLS.many - TOOLS.few
    out.cpu.harness.push(slopeOf(s.hFew!, s.hMany!, span, (x) => x.cpuMs))
    out.cpu.raw.push(slopeOf(s.rFew!, s.rMany!, span, (x) => x.cpuMs))
    out.warm.harness.push(slopeOf(s.hFew!, s.hMany!, span, (x) => x.ms))
    out.warm.raw.push(slopeOf(s.rFew!, s.rMany!, span, (x) => x.ms))
    out.warmHooked.push(slopeOf(s.rhFew!, s.rhMany!, span, (x) => x.ms))
    out.tools.harness.push(slopeOf(s.hTFew!, s.hTMany!, tspan, (x) => x.ms))
    out.tools.raw.push(slopeOf(s.rTFew!, s.rTMany!, tspan, (x) => x.ms))
    out.toolsCpu.harness.push(slopeOf(s.hTFew!, s.hTMany!, tspan, (x) => x.cpuMs))
    out.toolsCpu.raw.push(slopeOf(s.rTFew!, s.rTMany!, tspan, (x) => x.cpuMs))
    out.serve.push(median(served!.turns))
    out.serveCpu.push(served!.cpuPerTurnMs)
    out.chatTurn.push(median(s.hMany!.inRun))
    out.inRun.harness.push(median(s.hMany!.inRun))
    out.inRun.raw.push(s.rMany!.inRun[0]!)
  }
  return out
}

const rowsOf = (label: string, c: Condition): { rows: Array<Row>; notes: Array<string> } => {
  const pair = (h: ReadonlyArray<number>, r: ReadonlyArray<number>) => {
    const hs = spread(h)
    const rs = spread(r)
    return { hs, rs, ratio: hs.median / rs.median }
  }
  const cpu = pair(c.cpu.harness, c.cpu.raw)
  const warm = pair(c.warm.harness, c.warm.raw)
  const hooksAlone = pair(c.warmHooked, c.warm.raw)
  const overHooked = pair(c.warm.harness, c.warmHooked)
  const tools = pair(c.tools.harness, c.tools.raw)
  const serve = pair(c.serve, c.chatTurn)
  const toolsCpu = pair(c.toolsCpu.harness, c.toolsCpu.raw)
  const inRun = pair(c.inRun.harness, c.inRun.raw)
  const row = (figure: string, p: ReturnType<typeof pair>, goal: number, floorLabel = ""): Row => ({
    figure: `${figure}, ${label}`,
    floor: `${floorLabel}${show(p.rs, millis, millisBare)}`,
    harness: show(p.hs, millis, millisBare),
    compare: times(p.ratio),
    goal: `<= ${goal.toFixed(goal === 2 || goal === 1 ? 1 : 2)}x`,
    met: p.ratio <= goal
  })
  return {
    rows: [
      row(`Node CPU per warm turn (slope ${WARM.few} -> ${WARM.many})`, cpu, 2),
      row(`warm turn wall (slope ${WARM.few} -> ${WARM.many})`, warm, 1.05),
      // no goal of their own: how much of the ratio above is Codex running the hooks S20 requires
      { ...row(`warm turn wall, the floor with the harness's no-op hooks vs without`, hooksAlone, 1.05), goal: "-", met: undefined },
      { ...row(`warm turn wall, harness vs the floor with the no-op hooks`, overHooked, 1.05, "hooked "), goal: "-", met: undefined },
      row(`3-tool turn wall (slope ${TOOLS.few} -> ${TOOLS.many})`, tools, 1.05),
      row("serve turn, held connection, vs chat turn", serve, 1.0, "chat ")
    ],
    notes: [
      `hot, ${label}: Node CPU per 3-tool turn: harness ${millis(toolsCpu.hs.median)}, floor ${millis(toolsCpu.rs.median)} ` +
      `(${times(toolsCpu.ratio)}); the serve process's CPU per held-connection turn ${show(spread(c.serveCpu), millis, millisBare)} ` +
      `(/proc, 10 ms ticks over ${SERVE_TURNS} turns); inside the ${WARM.many}-message runs: harness reply to reply ` +
      `${millis(inRun.hs.median)}, floor turn ${millis(inRun.rs.median)} (${times(inRun.ratio)})`
    ]
  }
}

export const hotPath = async (ctx: Context, runs: number): Promise<RowResult> => {
  const quiet = await condition(ctx, runs)
  const loops = await busyLoops.start(2)
  let loaded: Condition
  try {
    loaded = await condition(ctx, runs)
  } finally {
    await loops.stop()
  }
  const q = rowsOf("quiet", quiet)
  const l = rowsOf("loaded", loaded)
  return {
    rows: [...q.rows, ...l.rows],
    notes: [
      ...q.notes,
      ...l.notes,
      `hot: loaded = two \`node -e "for(;;){}"\` children (pids ${loops.pids.join(", ")}) running through the loaded rounds, ` +
      "SIGKILLed and reaped after (checked gone)"
    ]
  }
}
