// Issue 33's parts of `npm run bench:cluster`, after the setups of bench/cluster.ts, on the same PostgreSQL: each a
// section of the output (markdown tables and notes), in this order:
//   overhead   a turn through one runner against a plain serve, side by side, quiet and with two busy loops; the
//              statements of a turn, by text (overhead.ts)
//   retention  table rows and sizes and per-turn time after 1,000 and after 10,000 cluster turns (retention.ts)
//   scale      20 runners on the mock app-server with 400 sessions (scale.ts)
// `--quick`: smaller numbers everywhere, to try the bench out; Sizes (the flags --overhead-turns, --retention-turns,
// --scale, --scale-turns) set one part's numbers. A part that fails is reported and the rest still run.
import type * as Socket from "@effect/platform/Socket"
import { Effect } from "effect"
import type * as Ctx from "../figures/context.js"
import { measureOverhead, type OverheadPhase } from "./overhead.js"
import type { Postgres } from "./postgres.js"
import { defaultRetention, measureRetention, tables } from "./retention.js"
import { defaultScale, measureScale } from "./scale.js"

export const parts = ["overhead", "retention", "scale"] as const

/** the numbers a run's flags set, over the defaults (or --quick's) */
export interface Sizes {
  readonly overheadTurns?: number
  readonly retention?: readonly [first: number, total: number]
  readonly scale?: readonly [runners: number, sessions: number]
  readonly scaleTurns?: number
  readonly scaleConnections?: number
}

export const parseParts = (raw: string, usage: (message: string) => never): Set<string> => {
  const known = new Set<string>(["setups", ...parts])
  const given = raw.split(",").map((p) => p.trim()).filter((p) => p !== "")
  const unknown = given.filter((p) => !known.has(p))
  if (given.length === 0 || unknown.length > 0) usage(`--parts wants some of ${[...known].join(",")}, got ${JSON.stringify(raw)}`)
  return new Set(given)
}

const fmt = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : "-")
const kb = (bytes: number) => `${fmt(bytes / 1024)} kB`

const markdown = (header: ReadonlyArray<string>, cells: ReadonlyArray<ReadonlyArray<string>>): ReadonlyArray<string> => {
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  const line = (c: ReadonlyArray<string>) => `| ${c.map((x, i) => x.padEnd(widths[i]!)).join(" | ")} |`
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...cells.map(line)]
}

const goal = (met: boolean) => (met ? "yes" : "NO")

const overheadLines = (phases: ReadonlyArray<OverheadPhase>, turns: number): ReadonlyArray<string> => [
  `### routing overhead: a turn through one runner against a plain serve (${turns} turns each per phase, one at a time, interleaved)`,
  "",
  ...markdown(
    ["phase", "plain p50", "cluster p50", "+p50 (goal <= 10 ms)", "plain p99", "cluster p99", "+p99 (goal <= 50 ms)", "turns ok", "statements/turn (goal <= 4)"],
    phases.map((p) => {
      const d50 = p.cluster.p50 - p.plain.p50
      const d99 = p.cluster.p99 - p.plain.p99
      return [
        p.label,
        `${fmt(p.plain.p50)} ms`,
        `${fmt(p.cluster.p50)} ms`,
        `${d50 >= 0 ? "+" : ""}${fmt(d50, 1)} ms ${goal(d50 <= 10)}`,
        `${fmt(p.plain.p99)} ms`,
        `${fmt(p.cluster.p99)} ms`,
        `${d99 >= 0 ? "+" : ""}${fmt(d99, 1)} ms ${goal(d99 <= 50)}`,
        `${p.plain.ok}/${p.cluster.ok}`,
        `${fmt(p.ownPerTurn, 2)} ${goal(p.ownPerTurn <= 4)} (all: ${fmt(p.perTurn, 2)})`
      ]
    })
  ),
  "",
  "- statements/turn: the turn's own, the statements that ran at least once every two turns after each one's idle rate is",
  "  subtracted; in brackets every statement less the idle window's total rate, which also counts the background's periodic",
  "  statements (heartbeat, runner reads, pings, the shard locks' refresh) landing more or fewer times in the phase than the",
  "  5 s idle window's rate says (up to about a tenth of a statement a turn either way)",
  `- the statements of a cluster turn (quiet phase, per turn, background subtracted):`,
  ...(phases[0]?.statements ?? []).map((s) => `    ${fmt(s.calls, 2)} x (${fmt(s.rows, 1)} rows, ${fmt(s.msPerCall, 2)} ms in the server) ${s.query.slice(0, 230)}`),
  ""
]

export const run = (
  ctx: Ctx.Context,
  pg: Postgres,
  selected: ReadonlySet<string>,
  quick: boolean,
  sizes: Sizes,
  failures: Array<string>,
  check: () => Promise<void>
) =>
  Effect.gen(function* () {
    const out: Array<string> = []
    const part = <A>(name: string, effect: Effect.Effect<A, unknown, Socket.WebSocketConstructor>, lines: (a: A) => ReadonlyArray<string>) =>
      !selected.has(name)
        ? Effect.void
        : Effect.sync(() => process.stderr.write(`cluster bench: ${name} ...\n`)).pipe(
          Effect.zipRight(effect),
          // also on stderr as soon as the part ends, so a run stopped later keeps what it measured
          Effect.map((a) => {
            const text = lines(a)
            out.push(...text)
            process.stderr.write(`${text.join("\n")}\n`)
          }),
          Effect.catchAllCause((cause) => Effect.sync(() => void failures.push(`${name}: ${String(cause).split("\n").slice(0, 3).join(" / ")}`))),
          Effect.zipRight(Effect.promise(check))
        )

    const overhead = { ...(quick ? { turns: 20, sessions: 3 } : { turns: 80, sessions: 4 }), ...(sizes.overheadTurns === undefined ? {} : { turns: sizes.overheadTurns }) }
    yield* part("overhead", Effect.scoped(measureOverhead(ctx, pg, overhead)), (phases) => overheadLines(phases, overhead.turns))

    const retention = {
      ...(quick ? { ...defaultRetention, first: 200, total: 1_000, sample: 20, sessions: 10, concurrency: 8, rate: 40, runners: 1, retentionS: 2, everyS: 1 } : defaultRetention),
      ...(sizes.retention === undefined ? {} : { first: sizes.retention[0], total: sizes.retention[1] })
    }
    yield* part("retention", Effect.scoped(measureRetention(ctx, pg, retention)), (r) => {
      const [a, b] = r.points
      return [
        `### retention: tables and per-turn time after ${a.turns} and after ${b.turns} turns`,
        "",
        `${b.turns + b.ok + b.failed} turns through the cluster in ${fmt(r.seconds, 0)} s (${retention.runners} runner(s) on the mock app-server, ${retention.sessions} sessions, ` +
          `up to ${retention.concurrency} at once, paced at ${retention.rate} turns/s: ${fmt(a.rate, 1)} and ${fmt(b.rate, 1)} turns/s ran; ${b.failed} failed), ` +
          `the runners keeping ${retention.retentionS} s of what turns write (their job every ${retention.everyS} s). Sizes: rows, the table's heap, and with ` +
          `its indexes; deleted: rows the retention job had removed by then.`,
        "",
        ...markdown(
          ["table", `rows @${a.turns}`, `heap @${a.turns}`, `total @${a.turns}`, `deleted @${a.turns}`, `rows @${b.turns}`, `heap @${b.turns}`, `total @${b.turns}`, `deleted @${b.turns}`],
          tables.map((t) => {
            const x = a.sizes[t]!
            const y = b.sizes[t]!
            return [t, String(x.rows), kb(x.heap), kb(x.total), String(a.deleted[t] ?? 0), String(y.rows), kb(y.heap), kb(y.total), String(b.deleted[t] ?? 0)]
          })
        ),
        "",
        ...markdown(["per-turn time (the next turns, one at a time)", `after ${a.turns}`, `after ${b.turns}`], [
          ["p50", `${fmt(a.p50, 1)} ms`, `${fmt(b.p50, 1)} ms`],
          ["p99", `${fmt(a.p99, 1)} ms`, `${fmt(b.p99, 1)} ms`],
          ["turns ok", String(a.ok), String(b.ok)]
        ]),
        ""
      ]
    })

    const scale = {
      ...(quick ? { runners: 5, sessions: 50, turns: 2, concurrency: 8 } : defaultScale),
      ...(sizes.scale === undefined ? {} : { runners: sizes.scale[0], sessions: sizes.scale[1] }),
      ...(sizes.scaleTurns === undefined ? {} : { turns: sizes.scaleTurns }),
      ...(sizes.scaleConnections === undefined ? {} : { connections: sizes.scaleConnections })
    }
    yield* part("scale", Effect.scoped(measureScale(ctx, pg, scale)), (lines) => [
      `### scale: ${scale.runners} runners on the mock app-server, ${scale.sessions} sessions`,
      "",
      ...lines.map((l) => `- ${l}`),
      ""
    ])
    return out
  })
