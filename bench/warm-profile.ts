// Where the Node CPU of a warm turn goes (issue 27, item 4): one piped `codex-harness chat` of N messages (the tsc
// output, dist/src/cli/main.js, so function names and files are readable) under `node --cpu-prof`, against an instant
// ScriptedModel in this process; then the profile's self time, split into the first `--skip` messages (start-up, the
// first turn) and the rest, is summed per function and per file/package and printed per warm turn.
//
// Build and run: npx tsc -p tsconfig.json && node dist/bench/warm-profile.js [--messages N] (60) [--dir DIR] [--top N]
import { NodeRuntime } from "@effect/platform-node"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ScriptedModel from "../src/testing/ScriptedModel.js"
import * as Ctx from "./figures/context.js"
import { check, freshDir, freshPrefix, message, REPLY } from "./figures/context.js"
import { timedNode } from "./figures/proc.js"

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] ?? fallback : fallback
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const where = (url: string) => {
  if (url === "") return "(native/v8)"
  const nm = url.lastIndexOf("node_modules/")
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/")
    const pkg = rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!
    const file = rest.slice(rest[0]!.startsWith("@") ? 2 : 1).filter((p) => p !== "dist" && p !== "esm" && p !== "cjs")
    return `${pkg}/${file.join("/")}`
  }
  const dist = url.indexOf("/dist/")
  return dist >= 0 ? url.slice(dist + 6) : url.replace(/^node:/, "node:")
}

const program = Effect.gen(function* () {
  const messages = Number(arg("--messages", "60"))
  const top = Number(arg("--top", "40"))
  const model = yield* ScriptedModel.make({ fallback: ScriptedModel.reply.text(REPLY) })
  const ctx = Ctx.make(model)
  const dir = path.resolve(arg("--dir", fs.mkdtempSync(path.join(os.tmpdir(), "warm-profile-"))))
  fs.mkdirSync(dir, { recursive: true })
  yield* Ctx.cleanUpAfter(ctx)
  const prefix = freshPrefix()
  const stdin = Array.from({ length: messages }, (_, i) => message(prefix, 0, i) + "\n").join("")
  const main = path.join(Ctx.repoRoot, "dist", "src", "cli", "main.js")
  const args = ["--cpu-prof", "--cpu-prof-interval", arg("--interval", "250"), "--cpu-prof-dir", dir, main, "chat", "--state-dir", freshDir(ctx, "state"), "--cwd", ctx.work, "--provider-url", model.url]
  const run = yield* Effect.promise(() => timedNode({ args, stdin, env: ctx.env, watchLine: REPLY, cpuDir: ctx.root, timeoutMs: 600_000 }))
  check("chat", run, REPLY, messages)
  const file = fs.readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")).map((f) => path.join(dir, f)).sort((a, b) =>
    fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs
  )[0]!
  const profile = JSON.parse(fs.readFileSync(file, "utf8")) as Profile
  // the profile's clock (µs since an origin) is not ours: the reply times are mapped through the profile's end, which
  // is the process's exit, against the process's exit as seen here (run.ms after spawn)
  const skip = Number(arg("--skip", "5"))
  const cutMs = run.lineTimes[skip - 1]! // the reply of message `skip`
  const cut = profile.endTime - (run.ms - cutMs) * 1000
  const lastReply = profile.endTime - (run.ms - run.lineTimes[messages - 1]!) * 1000
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const selfFn = new Map<string, number>()
  const selfFile = new Map<string, number>()
  // the nearest frame of the harness's own code (dist/src) on the stack: whose work a sample is, when it is visible
  const owner = new Map<string, number>()
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const ownerOf = (id: number): string => {
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame
      if (f.url.includes("/dist/src/")) return `${f.functionName || "(anonymous)"} ${where(f.url)}:${f.lineNumber + 1}`
    }
    return "(no harness frame on the stack)"
  }
  let t = profile.startTime
  let total = 0
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!
    if (t < cut || t > lastReply) continue
    const node = byId.get(profile.samples[i]!)!
    const dt = profile.timeDeltas[i + 1] ?? 0
    const f = node.callFrame
    if (f.functionName === "(idle)") continue
    total += dt
    const key = `${f.functionName || "(anonymous)"} ${where(f.url)}:${f.lineNumber + 1}`
    selfFn.set(key, (selfFn.get(key) ?? 0) + dt)
    const o = ownerOf(node.id)
    owner.set(o, (owner.get(o) ?? 0) + dt)
    const w = f.url === "" ? f.functionName : where(f.url)
    selfFile.set(w, (selfFile.get(w) ?? 0) + dt)
  }
  const turns = messages - skip
  const per = (us: number) => `${(us / 1000 / turns).toFixed(2)} ms`
  console.log(`profile ${file}`)
  console.log(`chat of ${messages} messages: exit CPU ${run.cpuMs?.toFixed(0)} ms, wall ${run.ms.toFixed(0)} ms`)
  console.log(`sampled (non-idle) over the last ${turns} turns: ${per(total)} per turn`)
  console.log("\nby file/package, per turn:")
  for (const [k, v] of [...selfFile].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${per(v).padStart(9)}  ${k}`)
  console.log("\nby the nearest harness frame on the stack, per turn:")
  for (const [k, v] of [...owner].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${per(v).padStart(9)}  ${k}`)
  console.log("\nby function (self), per turn:")
  for (const [k, v] of [...selfFn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${per(v).padStart(9)}  ${k}`)
})

NodeRuntime.runMain(program.pipe(Effect.scoped))
