// Where a warm `codex-harness run --connect` turn's time goes (the `connect` row of bench/figures.ts), against one
// running `codex-harness serve` and an instant ScriptedModel. Interleaved round by round, each series a fresh process
// timed from spawn to exit unless said otherwise:
//
//   node -e 0          Node's own start and exit
//   --version          bin/codex-harness.js answering from help.json: Node plus the bin, no bundle
//   refused            `run --connect ws://127.0.0.1:1/rpc`: Node, the bundle, the CLI, a connection refused (exit 1)
//   run --connect      the real turn, with a preload (--require) that notes when, after the process began (its
//                      performance.now()), the bin read cli.cjs, compiled it (and whether V8 took the code cache), the
//                      first TCP connect was asked for and made, the WebSocket upgrade came back, the
//                      reply was written to stdout, the socket closed, and the 'exit' event ran
//   in-process         this process as the client (ControlClient, the same code): a fresh WebSocket + Health; a fresh
//                      WebSocket + one StartTurn to its end; one more StartTurn on an open connection (the turn alone)
//   chat gap           reply to reply inside a piped 25-message `chat` (the turn in a warm local harness)
//
// Build and run: npm run build && node dist/bench/connect-profile.js [--rounds N] (default 10) [--cpu-prof DIR]
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import { NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { performance } from "node:perf_hooks"
import * as ControlClient from "../src/control/ControlClient.js"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import { startServe, stopServe, tokenEnv, treeOf } from "./figures/connect.js"
import * as Ctx from "./figures/context.js"
import { check, cleanUp, cliArgs, cliNode, freshPrefix, message, REPLY } from "./figures/context.js"
import { marked, settle, timedNode } from "./figures/proc.js"
import { median } from "./figures/stats.js"

const profAt = process.argv.indexOf("--cpu-prof")
/** with --cpu-prof DIR: three more `run --connect` turns at the end, each writing a V8 CPU profile into DIR */
const CPU_PROF_DIR = profAt >= 0 ? path.resolve(process.argv[profAt + 1] ?? ".") : undefined
const roundsAt = process.argv.indexOf("--rounds")
const ROUNDS = roundsAt >= 0 ? Number(process.argv[roundsAt + 1]) : 10
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error("--rounds wants a whole number of at least 1")

const PRELOAD = `"use strict";
const { performance } = require("perf_hooks"); const fs = require("fs"); const net = require("net"); const vm = require("vm");
const marks = { preload: performance.now() };
const m = (k) => { if (!(k in marks)) marks[k] = performance.now() };
const read = fs.readFileSync;
fs.readFileSync = function (p, ...rest) {
  if (typeof p === "string" && p.endsWith("cli.cjs")) m("bundleRead");
  return read.call(this, p, ...rest);
};
const Script = vm.Script;
vm.Script = class extends Script {
  constructor(...args) { m("compile"); super(...args); m("compiled"); marks.cacheRejected = this.cachedDataRejected === true }
  runInThisContext(...args) { m("runBundle"); return super.runInThisContext(...args) }
};
const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  m("tcpAsk");
  this.once("connect", () => m("tcpUp"));
  this.once("close", () => m("tcpClosed"));
  return connect.apply(this, args);
};
const http = require("http");
const request = http.request;
http.request = function (...args) {
  const req = request.apply(this, args);
  req.once("upgrade", () => m("wsOpen"));
  return req;
};
const write = process.stdout.write;
process.stdout.write = function (...args) { m("stdout"); return write.apply(this, args) };
process.on("exit", () => { m("exit"); try { fs.writeFileSync(process.env.PROFILE_MARKS, JSON.stringify(marks)) } catch {} });
`

const program = Effect.gen(function* () {
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(Ctx.REPLY) })
  const ctx = Ctx.make(model)
  yield* Effect.addFinalizer(() => Effect.sync(() => {
    for (const pid of marked()) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {}
    }
    fs.rmSync(ctx.root, { recursive: true, force: true })
  }))
  const preload = path.join(ctx.root, "profile-preload.cjs")
  fs.writeFileSync(preload, PRELOAD)
  const serve = yield* Effect.promise(() => startServe(ctx))
  const spared = () => treeOf(serve.pid)
  const target = { url: serve.url, token: serve.token }
  const env = { ...ctx.env, [tokenEnv]: serve.token }
  const session = crypto.randomUUID()
  const prefix = freshPrefix()
  let turnNo = 0
  const series: Record<string, Array<number>> = {}
  const note = (k: string, v: number) => void (series[k] ??= []).push(v)

  const inProcess = <A>(use: (client: ControlClient.Client) => Effect.Effect<A, unknown>) =>
    Effect.runPromise(Effect.scoped(Effect.flatMap(ControlClient.make(target), use)).pipe(Effect.provide(NodeSocket.layerWebSocketConstructor)) as Effect.Effect<A, unknown>)
  const turnVia = (client: ControlClient.Client) =>
    client.StartTurn({ session, prompt: message(prefix, 0, turnNo++), approvals: "deny" }).pipe(
      Stream.runForEach((event) =>
        event.type === "turn.failed" ? Effect.dieMessage(`turn failed: ${event.error}`) : Effect.void
      )
    )
  const timed = async (run: () => Promise<unknown>) => {
    const t0 = performance.now()
    await run()
    return performance.now() - t0
  }
  const processRun = async (label: string, args: ReadonlyArray<string>, expect: "ok" | "refused", marksFile?: string) => {
    const run = await timedNode({ args: marksFile === undefined ? args : ["--require", preload, ...args], env: { ...env, ...(marksFile !== undefined ? { PROFILE_MARKS: marksFile } : {}) } })
    if (expect === "ok") {
      try {
        check(label, run, args.includes("run") ? REPLY : undefined, args.includes("run") ? 1 : undefined)
      } catch (error) {
        throw new Error(`${String(error)}\nserve's stderr: ${serve.stderr().slice(-2000)}`)
      }
    }
    else if (run.code !== 1) throw new Error(`${label}: exit ${run.signal ?? run.code}, not 1; stderr: ${run.stderr}`)
    note(label, run.ms)
    const found = await settle(3_000, spared)
    ctx.leftovers.atEnd += found.atEnd
    ctx.leftovers.left.push(...found.left)
    return run
  }

  // warm-up: the serve's app-server and thread, and this process's client code
  yield* Effect.promise(() => processRun("warm-up", [...cliNode(), "run", "--connect", serve.url, "--session", session, message(prefix, 0, turnNo++)], "ok"))
  yield* Effect.promise(() => inProcess(turnVia))
  const tasks: ReadonlyArray<() => Promise<void>> = [
    async () => void await processRun("node -e 0", ["-e", "0"], "ok"),
    async () => void await processRun("--version", [...cliNode(), "--version"], "ok"),
    async () => void await processRun("refused (node + bundle + CLI)", [...cliNode(), "run", "--connect", "ws://127.0.0.1:1/rpc", "x"], "refused"),
    async () => {
      const file = path.join(ctx.root, `marks-${turnNo}.json`)
      const run = await processRun("run --connect", [...cliNode(), "run", "--connect", serve.url, "--session", session, message(prefix, 0, turnNo++)], "ok", file)
      const marks = JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, number>
      for (const [k, v] of Object.entries(marks)) if (typeof v === "number") note(`  mark ${k}`, v)
      note("  mark after exit event (spawn to exit minus the process's own clock)", run.ms - marks.exit!)
      if (marks.cacheRejected) note("  code cache rejected", 1)
    },
    async () => {
      note("in-process: fresh WebSocket + Health", await timed(() => inProcess((c) => c.Health())))
      note("in-process: fresh WebSocket + StartTurn", await timed(() => inProcess(turnVia)))
      await inProcess((c) =>
        Effect.gen(function* () {
          yield* c.Health()
          const t0 = performance.now()
          yield* c.Health()
          note("in-process: Health on an open WebSocket", performance.now() - t0)
          const t1 = performance.now()
          yield* turnVia(c)
          note("in-process: StartTurn on an open WebSocket", performance.now() - t1)
        })
      )
    },
    async () => {
      // not rows.ts pipedChat: its leftover check spares nothing, and the serve runs on
      const chatPrefix = freshPrefix()
      const stdin = Array.from({ length: 25 }, (_, i) => message(chatPrefix, 0, i) + "\n").join("")
      const run = check("chat (25 messages)", await timedNode({ args: cliArgs(ctx, "chat"), stdin, env: ctx.env, watchLine: REPLY }), REPLY, 25)
      const found = await settle(3_000, spared)
      ctx.leftovers.atEnd += found.atEnd
      ctx.leftovers.left.push(...found.left)
      note("chat: reply to reply (25 msgs)", median(run.lineTimes.slice(1).map((t, k) => t - run.lineTimes[k]!)))
    }
  ]
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < tasks.length; k++) yield* Effect.promise(() => tasks[(round + k) % tasks.length]!())
  }
  if (CPU_PROF_DIR !== undefined) {
    fs.mkdirSync(CPU_PROF_DIR, { recursive: true })
    for (let i = 0; i < 3; i++) {
      const args = ["--cpu-prof", "--cpu-prof-dir", CPU_PROF_DIR, "--cpu-prof-interval", "100", ...cliNode(), "run", "--connect", serve.url, "--session", session, message(prefix, 0, turnNo++)]
      yield* Effect.promise(() => processRun("run --connect --cpu-prof (not in the figures above)", args, "ok"))
    }
  }
  const stop = yield* Effect.promise(() => stopServe(serve))
  yield* Effect.promise(() => cleanUp(ctx))
  const width = Math.max(...Object.keys(series).map((k) => k.length))
  console.log(`connect-profile: ${ROUNDS} rounds; median [min-max] ms; serve (pid ${serve.pid}) exited ${stop.signal ?? stop.code} ${stop.ms.toFixed(0)} ms after SIGTERM`)
  console.log(`serve's stderr: ${serve.stderr().trim().split("\n").slice(-4).join(" / ")}`)
  for (const [k, xs] of Object.entries(series)) {
    console.log(`${k.padEnd(width)}  ${median(xs).toFixed(1).padStart(7)}  [${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}]  n=${xs.length}`)
  }
  console.log(`leftovers: alive at end ${ctx.leftovers.atEnd}, left after 3 s ${ctx.leftovers.left.length} ${ctx.leftovers.left.join("; ")}`)
})

NodeRuntime.runMain(program.pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))
