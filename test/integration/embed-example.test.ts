// The README's embedding example is examples/embed.ts, verbatim; the build compiles it, and here it runs against the
// real app-server and a scripted model: one turn through a ManagedRuntime, the reply delivered by its port, nothing
// left running once the runtime is disposed.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind } from "../support/harness.js"

const root = path.resolve(import.meta.dirname, "../..")

const readmeExample = () => {
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
  const section = readme.slice(readme.indexOf("## Embedding"))
  const start = section.indexOf("```ts\n") + "```ts\n".length
  return section.slice(start, section.indexOf("```\n", start))
}

const runNode = (file: string, env: Record<string, string>) =>
  Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const child = spawn(process.execPath, [file], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")))
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
    child.on("close", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("the embedding example", () => {
  it("the README shows examples/embed.ts exactly", () => {
    expect(readmeExample()).toBe(fs.readFileSync(path.join(root, "examples/embed.ts"), "utf8"))
  })

  it.scopedLive("runs one turn through a ManagedRuntime and leaves nothing running after dispose", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("src/ gained a session runtime")] })
      const ran = yield* runNode(path.join(root, "dist/examples/embed.js"), {
        BOT_STATE_DIR: f.stateDir,
        BOT_WORKSPACE: f.workDir,
        BOT_PROVIDER_URL: f.model.url
      })
      expect(ran.code).toBe(0)
      expect(ran.stdout).toContain("[chat-42] src/ gained a session runtime")
      expect(ran.stdout).toMatch(/turn \S+: completed/)
      expect(yield* f.model.requests).toHaveLength(1)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})
