// `npm run api:check` as a test: API Extractor compares the built declarations (npm test builds first) with the checked-in
// report (etc/codex-harness.api.md) and fails on any difference. A test rather than a step before Vitest: its 9-10
// CPU-s then run beside the other files instead of ahead of all of them. Its output, on a failure, says what differs
// (`npm run api:update` writes the new report for review).
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "../..")

const apiCheck = Effect.async<{ readonly code: number; readonly output: string }>((resume) => {
  const child = execFile(
    process.execPath,
    [path.join(root, "node_modules", "@microsoft", "api-extractor", "bin", "api-extractor"), "run", "-c", "api-extractor/config.json"],
    { cwd: root, timeout: 170_000, killSignal: "SIGKILL", maxBuffer: 16 * 1024 * 1024, env: { ...process.env, FORCE_COLOR: "0" } },
    (error, stdout, stderr) =>
      resume(Effect.succeed({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, output: `${stdout}${stderr}` }))
  )
  return Effect.sync(() => void child.kill("SIGKILL"))
})

describe("the public surface against its API report", () => {
  it.effect("[api] the built declarations match etc/codex-harness.api.md (npm run api:check)", () =>
    Effect.gen(function* () {
      const ran = yield* apiCheck
      expect(ran.code, ran.output).toBe(0)
      expect(ran.output).toContain("API Extractor completed successfully")
    }))
})
