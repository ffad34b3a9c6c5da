// Where a turn's time goes, plain serve against a one-runner cluster: both export their spans (`--otlp`) to a collector
// in this process, the same sequential turns go through each (ControlClient on one WebSocket), and the spans' median
// durations are printed by name, side by side, with how many of each a turn has. A diagnostic for the routing overhead of
// bench/cluster.ts, not a figure of its own.
//
// Build and run: npm run build && node dist/bench/cluster/trace.js [--turns 30] [--sessions 3]
import { NodeRuntime } from "@effect/platform-node"
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as ControlClient from "../../src/control/ControlClient.js"
import * as ScriptedModel from "../../src/testing/ScriptedModel.js"
import { stopServe } from "../figures/connect.js"
import * as Ctx from "../figures/context.js"
import { marked } from "../figures/proc.js"
import { turnOnce } from "./load.js"
import { startPostgres } from "./postgres.js"
import { spawnServe } from "./serves.js"
import { benchArgs } from "../args.js"

interface Span {
  readonly name: string
  readonly ms: number
  readonly start: bigint
  readonly traceId: string
  /** the statement of an sql.execute span (its first 60 characters) */
  readonly statement?: string | undefined
}

const collector = () =>
  new Promise<{ readonly url: string; readonly spans: Array<Span>; readonly close: () => void }>((resolve) => {
    const spans: Array<Span> = []
    const server = http.createServer((req, res) => {
      let body = ""
      req.setEncoding("utf8")
      req.on("data", (c: string) => (body += c))
      req.on("end", () => {
        try {
          const json = JSON.parse(body) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<{ name: string; traceId: string; startTimeUnixNano: string; endTimeUnixNano: string; attributes?: Array<{ key: string; value: { stringValue?: string } }> }> }> }> }
          for (const rs of json.resourceSpans ?? []) {
            for (const ss of rs.scopeSpans ?? []) {
              for (const s of ss.spans ?? []) {
                const statement = s.attributes?.find((a) => a.key === "db.query.text")?.value.stringValue
                spans.push({
                  name: s.name,
                  ms: Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6,
                  start: BigInt(s.startTimeUnixNano),
                  traceId: s.traceId,
                  statement: statement?.replace(/\s+/g, " ").slice(0, 60)
                })
              }
            }
          }
        } catch {}
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, close: () => server.close() })
    })
  })

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s[Math.floor(s.length / 2)]!
}

const args = benchArgs("trace", "usage: node dist/bench/cluster/trace.js [--turns 30] [--sessions 3]", { counts: ["turns", "sessions"] })

const program = Effect.gen(function* () {
  const turns = args.count("turns", 30)
  const sessionCount = args.count("sessions", 3)
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(Ctx.REPLY) })
  const ctx = Ctx.make(model)
  const pg = yield* Effect.promise(() => startPostgres())
  yield* Effect.addFinalizer(() =>
    Effect.promise(async () => {
      await pg.stop()
      for (const pid of marked()) {
        try {
          process.kill(pid, "SIGKILL")
        } catch {}
      }
      fs.rmSync(ctx.root, { recursive: true, force: true })
    })
  )
  // both serves up at once, their turns interleaved (the order alternating): load on the machine hits both alike
  const setups = ["plain", "cluster"] as const
  const collectors = { plain: yield* Effect.promise(collector), cluster: yield* Effect.promise(collector) }
  const db = yield* Effect.promise(() => pg.createDatabase("trace"))
  const serves = {
    plain: yield* Effect.promise(() => spawnServe(ctx, ["--otlp", collectors.plain.url])),
    cluster: yield* Effect.promise(() =>
      spawnServe(ctx, ["--cluster", db, "--runner-listen", `127.0.0.1:${40000 + Math.floor(Math.random() * 20000)}`, "--otlp", collectors.cluster.url], {
        PGPASSWORD: pg.password
      }))
  }
  const clients = {
    plain: yield* ControlClient.make({ url: serves.plain.url, token: serves.plain.token }),
    cluster: yield* ControlClient.make({ url: serves.cluster.url, token: serves.cluster.token })
  }
  const sessions = Array.from({ length: sessionCount }, () => crypto.randomUUID())
  for (const setup of setups) for (const s of sessions) yield* turnOnce(clients[setup], s, `warm ${s}`, Ctx.REPLY)
  yield* Effect.sleep("2 seconds")
  collectors.plain.spans.length = 0
  collectors.cluster.spans.length = 0
  const turnMs = { plain: [] as Array<number>, cluster: [] as Array<number> }
  const marks = { plain: [] as Array<[number, number]>, cluster: [] as Array<[number, number]> }
  for (let i = 0; i < turns; i++) {
    for (const setup of i % 2 === 0 ? setups : [...setups].reverse()) {
      const t = yield* turnOnce(clients[setup], sessions[i % sessions.length]!, `turn ${i} ${crypto.randomUUID()}`, Ctx.REPLY)
      if (t.ok) turnMs[setup].push(t.ms)
      if (t.ok) marks[setup].push([t.selectedMs ?? NaN, t.startedMs ?? NaN])
    }
  }
  yield* Effect.sleep("6 seconds")
  const results = {
    plain: { spans: [...collectors.plain.spans], turnMs: turnMs.plain },
    cluster: { spans: [...collectors.cluster.spans], turnMs: turnMs.cluster }
  }
  yield* Effect.promise(() => Promise.all([stopServe(serves.plain), stopServe(serves.cluster)]))
  collectors.plain.close()
  collectors.cluster.close()
  const names = [...new Set(Object.values(results).flatMap((r) => r.spans.map((s) => s.name)))].sort()
  console.log(`turn p50: plain ${median(results.plain.turnMs).toFixed(1)} ms, cluster ${median(results.cluster.turnMs).toFixed(1)} ms (${turns} turns each)`)
  for (const setup of setups) {
    console.log(`${setup}: session.selected p50 ${median(marks[setup].map((m) => m[0])).toFixed(1)} ms, turn.started p50 ${median(marks[setup].map((m) => m[1])).toFixed(1)} ms`)
  }
  console.log(["span".padEnd(60), "plain: n/turn, p50 ms".padEnd(24), "cluster: n/turn, p50 ms"].join(" "))
  for (const name of names) {
    const cell = (setup: "plain" | "cluster") => {
      const xs = results[setup].spans.filter((s) => s.name === name).map((s) => s.ms)
      return xs.length === 0 ? "-" : `${(xs.length / turns).toFixed(2)} x ${median(xs).toFixed(2)}`
    }
    console.log([name.slice(0, 60).padEnd(60), cell("plain").padEnd(24), cell("cluster")].join(" "))
  }
  // a turn's timeline: each span's start and end as offsets from its trace's Control.StartTurn, medians over the turns
  for (const setup of setups) {
    const byTrace = new Map<string, Array<Span>>()
    for (const span of results[setup].spans) {
      const spans = byTrace.get(span.traceId)
      if (spans === undefined) byTrace.set(span.traceId, [span])
      else spans.push(span)
    }
    const offsets = new Map<string, { from: Array<number>; to: Array<number> }>()
    for (const spans of byTrace.values()) {
      const root = spans.find((x) => x.name === "Control.StartTurn")
      if (root === undefined) continue
      const seen = new Map<string, number>()
      for (const span of [...spans].sort((a, b) => (a.start < b.start ? -1 : 1))) {
        const base = span.name.startsWith("Session(") ? "Session.Turn" : span.name
        const label = span.statement === undefined ? base : `${base} ${span.statement}`
        const nth = (seen.get(label) ?? 0) + 1
        seen.set(label, nth)
        const key = nth === 1 ? label : `${label} #${nth}`
        const from = Number(span.start - root.start) / 1e6
        const entry = offsets.get(key) ?? { from: [], to: [] }
        entry.from.push(from)
        entry.to.push(from + span.ms)
        offsets.set(key, entry)
      }
    }
    console.log(`\n${setup}: timeline (ms from Control.StartTurn, p50 start .. p50 end, turns that have it)`)
    for (const [key, entry] of [...offsets].sort((a, b) => median(a[1].from) - median(b[1].from))) {
      console.log(`  ${median(entry.from).toFixed(1).padStart(7)} .. ${median(entry.to).toFixed(1).padStart(7)}  ${String(entry.from.length).padStart(3)}  ${key}`)
    }
  }
})

NodeRuntime.runMain(program.pipe(Effect.scoped, Effect.provide(NodeSocket.layerWebSocketConstructor)))
