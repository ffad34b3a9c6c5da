// Row `otlp` of bench/figures.ts (issue 31, item 5): what a collector that is down or hangs costs an exit. `--otlp`
// flushes the last spans when the telemetry layer closes; the close may wait at most 200 ms.
//
//   layer close   in this process: Telemetry.layer around one span, timed from the span's end to the layer's close,
//                 with a collector that is not listening (a closed port) and one that takes the post and never answers
//                 (a node:http server here); the close must say once, at info, that the span was dropped
//   serve exit    a whole `serve --otlp HANGING`, after one `run --connect` turn (so there are spans to export): from
//                 the arrival of its last post at the collector (the flush at exit: the app-server and the listener
//                 are closed by then) to the process's exit. For a note, SIGTERM to exit of that serve and of a plain
//                 one, which move by more than the bound from run to run on this machine (the app-server's own exit)
import { Effect, Logger } from "effect"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import * as Telemetry from "../../src/control/Telemetry.js"
import { startServe, stopServe, tokenEnv, treeOf } from "./connect.js"
import { check, cleanUp, cliNode, type Context, freshPrefix, message, REPLY } from "./context.js"
import { settle, timedNode } from "./proc.js"
import type { RowResult } from "./rows.js"
import { median, millis, millisBare, show, signed, spread } from "./stats.js"

const GOAL_MS = 200

/**
 * a collector that takes each post and never answers; `lastPost` is when the latest post arrived (performance.now());
 * `close` ends it and every connection it holds
 */
const hangingCollector = async () => {
  let lastPost = NaN
  const server = http.createServer(() => void (lastPost = performance.now()))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    lastPost: () => lastPost,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

/** a port nothing listens on: bound, then closed again */
const closedPort = async () => {
  const server = http.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return `http://127.0.0.1:${port}`
}

/** one span inside the layer, then the close, timed from the span's end; with how many lines said spans were dropped */
const layerClose = (base: string) =>
  Effect.runPromise(Effect.gen(function* () {
    const said: Array<string> = []
    const logger = Logger.make(({ message }) => void said.push(Array.isArray(message) ? message.map(String).join(" ") : String(message)))
    let ended = 0
    yield* Effect.void.pipe(
      Effect.withSpan("bench span"),
      Effect.zipRight(Effect.sync(() => void (ended = performance.now()))),
      Effect.provide(Telemetry.layer({ endpoint: `${base}/v1/traces` })),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger))
    )
    return { ms: performance.now() - ended, dropped: said.filter((line) => line.includes("spans dropped") || line.includes("span dropped")).length }
  }))

/**
 * a serve (with `extra` flags), one `run --connect` turn through it, then SIGTERM: how long it took to exit, and when
 * it exited (performance.now())
 */
const serveStop = async (ctx: Context, extra: ReadonlyArray<string>): Promise<{ readonly ms: number; readonly exitedAt: number }> => {
  const serve = await startServe(ctx, extra)
  let stopped = false
  try {
    const args = [...cliNode(), "run", "--connect", serve.url, "--session", crypto.randomUUID(), message(freshPrefix(), 0, 0)]
    check("codex-harness run --connect", await timedNode({ args, env: { ...ctx.env, [tokenEnv]: serve.token }, watchLine: REPLY }), REPLY, 1)
    const found = await settle(3_000, () => treeOf(serve.pid))
    ctx.leftovers.atEnd += found.atEnd
    ctx.leftovers.left.push(...found.left)
    stopped = true
    const stop = await stopServe(serve)
    const exitedAt = performance.now()
    await cleanUp(ctx)
    return { ms: stop.ms, exitedAt }
  } finally {
    if (!stopped) {
      await stopServe(serve).catch(() => {})
      await cleanUp(ctx)
    }
  }
}

export const otlpExit = async (ctx: Context, runs: number): Promise<RowResult> => {
  const hanging = await hangingCollector()
  try {
    const dead = await closedPort()
    const closes: Record<"dead" | "hanging", Array<number>> = { dead: [], hanging: [] }
    const said: Array<number> = []
    // fetch's first uses in a process load and compile Node's HTTP client: done before measuring, as a serve has done
    // it by the time it exits (it posts every second)
    await layerClose(dead)
    await layerClose(hanging.url)
    for (let i = 0; i < Math.max(runs, 5); i++) {
      for (const [kind, base] of [["dead", dead], ["hanging", hanging.url]] as const) {
        const close = await layerClose(base)
        closes[kind].push(close.ms)
        said.push(close.dropped)
      }
    }
    const plainStops: Array<number> = []
    const hangingStops: Array<number> = []
    const afterLastPost: Array<number> = []
    for (let i = 0; i < runs; i++) {
      const tasks = [
        async () => void plainStops.push((await serveStop(ctx, [])).ms),
        async () => {
          const stop = await serveStop(ctx, ["--otlp", hanging.url])
          hangingStops.push(stop.ms)
          afterLastPost.push(stop.exitedAt - hanging.lastPost())
        }
      ]
      for (let k = 0; k < tasks.length; k++) await tasks[(i + k) % tasks.length]!()
    }
    const row = (figure: string, samples: ReadonlyArray<number>) => {
      const s = spread(samples)
      return { figure, floor: "-", harness: show(s, millis, millisBare), compare: "-", goal: `<= ${GOAL_MS} ms`, met: s.max <= GOAL_MS }
    }
    return {
      rows: [
        row("exit with --otlp, collector not listening: layer close (worst)", closes.dead),
        row("exit with --otlp, collector never answers: layer close (worst)", closes.hanging),
        row("`serve --otlp` to a hanging collector: last post -> exit (worst)", afterLastPost)
      ],
      notes: [
        `otlp: each layer close said the span was dropped exactly once in ${said.filter((n) => n === 1).length} of ${said.length} closes ` +
        `(flush bound ${Telemetry.shutdownBoundMs} ms; the rest of 200 ms is for the abort and a late timer)`,
        `otlp: a whole serve, one turn, then SIGTERM to exit: ${show(spread(plainStops), millis, millisBare)} without --otlp, ` +
        `${show(spread(hangingStops), millis, millisBare)} with --otlp to a collector that never answers ` +
        `(${signed(median(hangingStops) - median(plainStops), millis)}; the app-server's exit moves by more than that between runs)`
      ]
    }
  } finally {
    await hanging.close()
  }
}
