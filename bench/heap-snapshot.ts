// Issue 31, item 3: what holds the harness's memory at the end of a 20-message piped chat, with the bin's shebang
// flags (as the installed command runs) and without them (plain `node bin/...`), side by side. Each chat runs with a
// preload that, as the process exits, records its peak RSS (VmHWM), V8's heap spaces and a heap snapshot; the snapshot
// is then summed by what its objects are (compiled code, strings, closures, arrays, objects by constructor).
//
// Build and run: npm run build && node dist/bench/heap-snapshot.js [--keep]   (--keep leaves the snapshots in the temp dir)
import * as fs from "node:fs"
import * as path from "node:path"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import { Effect } from "effect"
import * as Ctx from "./figures/context.js"
import { timedNode } from "./figures/proc.js"

const keep = process.argv.includes("--keep")

/** written next to the snapshots; runs at exit, in the measured process */
const preloadSource = `
const fs = require("node:fs"), v8 = require("node:v8")
const out = process.env.HEAP_BENCH_OUT
process.on("exit", () => {
  const status = fs.readFileSync("/proc/self/status", "utf8")
  const hwm = Number(/VmHWM:\\s+(\\d+)/.exec(status)[1])
  const spaces = v8.getHeapSpaceStatistics().map((s) => ({ name: s.space_name, size: s.space_size, used: s.space_used_size }))
  v8.writeHeapSnapshot(out + ".heapsnapshot")
  fs.writeFileSync(out + ".json", JSON.stringify({ hwmKb: hwm, spaces }))
})
`

interface Snapshot {
  readonly snapshot: { readonly meta: { readonly node_fields: ReadonlyArray<string>; readonly node_types: ReadonlyArray<ReadonlyArray<string> | string> } }
  readonly nodes: ReadonlyArray<number>
  readonly strings: ReadonlyArray<string>
}

/** self size by kind: V8's node type, objects split by constructor name (the 8 largest, the rest together) */
const summarize = (file: string): Map<string, number> => {
  const snap = JSON.parse(fs.readFileSync(file, "utf8")) as Snapshot
  const fields = snap.snapshot.meta.node_fields
  const types = snap.snapshot.meta.node_types[0] as ReadonlyArray<string>
  const width = fields.length
  const typeAt = fields.indexOf("type")
  const nameAt = fields.indexOf("name")
  const sizeAt = fields.indexOf("self_size")
  const byKind = new Map<string, number>()
  const objects = new Map<string, number>()
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!]!
    const size = snap.nodes[i + sizeAt]!
    if (type === "object") {
      const name = snap.strings[snap.nodes[i + nameAt]!]!
      objects.set(name, (objects.get(name) ?? 0) + size)
    } else {
      const kind = type === "code" ? "compiled code (bytecode, feedback, shared function info)" : type === "closure" ? "closures" : type === "string" || type === "concatenated string" || type === "sliced string" ? "strings" : type
      byKind.set(kind, (byKind.get(kind) ?? 0) + size)
    }
  }
  const sorted = [...objects].sort((a, b) => b[1] - a[1])
  for (const [name, size] of sorted.slice(0, 8)) byKind.set(`objects: ${name}`, size)
  byKind.set("objects: every other constructor", sorted.slice(8).reduce((n, [, size]) => n + size, 0))
  return byKind
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

const program = Effect.gen(function* () {
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(Ctx.REPLY) })
  const ctx = Ctx.make(model)
  const preload = path.join(ctx.root, "heap-preload.cjs")
  fs.writeFileSync(preload, preloadSource)
  const flags = Ctx.cliNode().slice(0, -1)
  const sides = [
    { label: `with the shebang's flags (${flags.join(" ") || "none"})`, args: Ctx.cliArgs(ctx, "chat") },
    { label: "plain node", args: Ctx.cliArgs(ctx, "chat").slice(flags.length) }
  ]
  const results: Array<{ readonly label: string; readonly hwmKb: number; readonly spaces: ReadonlyArray<{ name: string; size: number; used: number }>; readonly kinds: Map<string, number> }> = []
  for (const [i, side] of sides.entries()) {
    const out = path.join(ctx.root, `side-${i}`)
    const prefix = Ctx.freshPrefix()
    const stdin = Array.from({ length: 20 }, (_, t) => Ctx.message(prefix, 0, t) + "\n").join("")
    // the plain side runs twice: its first run writes the code cache of its own flags, the second is measured
    if (flags.length > 0 && i === 1) yield* Effect.promise(() => timedNode({ args: side.args, stdin: "hello\n", env: ctx.env }))
    const run = yield* Effect.promise(() => timedNode({ args: ["--require", preload, ...side.args], stdin, env: { ...ctx.env, HEAP_BENCH_OUT: out } }))
    Ctx.check(`chat (${side.label})`, run, Ctx.REPLY, 20)
    const stats = JSON.parse(fs.readFileSync(`${out}.json`, "utf8")) as { hwmKb: number; spaces: Array<{ name: string; size: number; used: number }> }
    results.push({ label: side.label, ...stats, kinds: summarize(`${out}.heapsnapshot`) })
    yield* Effect.promise(() => Ctx.cleanUp(ctx))
  }
  const [a, b] = results as [typeof results[0], typeof results[0]]
  console.log(`heap at the exit of a 20-message piped chat: ${a.label} vs ${b.label}\n`)
  console.log(`| | ${a.label} | ${b.label} |\n|---|---|---|`)
  console.log(`| peak RSS (VmHWM) | ${(a.hwmKb / 1024).toFixed(0)} MB | ${(b.hwmKb / 1024).toFixed(0)} MB |`)
  for (const space of a.spaces) {
    const other = b.spaces.find((s) => s.name === space.name)!
    if (space.size === 0 && other.size === 0) continue
    console.log(`| V8 ${space.name}: used / reserved | ${mb(space.used)} / ${mb(space.size)} | ${mb(other.used)} / ${mb(other.size)} |`)
  }
  const kinds = [...new Set([...a.kinds.keys(), ...b.kinds.keys()])].sort((x, y) => (b.kinds.get(y) ?? 0) - (b.kinds.get(x) ?? 0))
  for (const kind of kinds) console.log(`| snapshot: ${kind} | ${mb(a.kinds.get(kind) ?? 0)} | ${mb(b.kinds.get(kind) ?? 0)} |`)
  if (keep) console.log(`\nsnapshots kept in ${ctx.root}`)
  else fs.rmSync(ctx.root, { recursive: true, force: true })
})

Effect.runPromise(Effect.scoped(program)).catch((error: unknown) => {
  console.error(`heap snapshot bench: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
})
