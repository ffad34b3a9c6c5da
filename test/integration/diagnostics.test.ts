// Diagnostics on the real app-server (S36), offline: an approved upload asks Codex's `feedback/upload` for the
// session's thread and the sub-agent thread Codex spawned under it (or the bound thread alone with --thread-only),
// and Codex's refusal (OpenAI unreachable here) is printed as the app-server's error with exit 1; a denial sends no
// `feedback/upload` at all and prints one line; `--bundle` writes a 0600 local file with versions, the redacted config,
// `server/diagnostics` and the session's records, never with the provider key in it.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import * as Diagnostics from "../../src/diagnostics/Diagnostics.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { ApprovalPrompts, type ApprovalRequest } from "../../src/ports/ApprovalPrompts.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { onPty } from "../support/pty.js"
import { type Fixture, fixture, leftBehind } from "../support/harness.js"

/** The live harness with Diagnostics, approvals answered `allow` and every request recorded. */
const start = (settings: HarnessSettings) =>
  Effect.gen(function* () {
    const asked: Array<ApprovalRequest> = []
    const prompts = Layer.succeed(ApprovalPrompts, { ask: (request) => Effect.sync(() => (asked.push(request), "allowOnce" as const)) })
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      Diagnostics.layer.pipe(Layer.provideMerge(Live.layer(settings)), Layer.provideMerge(RecordingDelivery.layer), Layer.provide(prompts)),
      scope
    )
    return {
      harness: Context.get(context, CodexHarness),
      diagnostics: Context.get(context, Diagnostics.Diagnostics),
      asked,
      stop: Scope.close(scope, Exit.void)
    }
  })

/** a session whose one turn spawned a sub-agent that ran a turn of its own (both requests received by the model) */
const delegating = {
  rules: [{ whenRequestIncludes: "CHILD TASK", reply: reply.text("child done") }],
  replies: [reply.steps({ type: "function_call", name: "spawn_agent", namespace: "multi_agent_v1", arguments: { message: "CHILD TASK" } })],
  fallback: reply.text("parent done")
}

const common = (f: Fixture) => ["--provider-url", f.model.url, "--state-dir", f.stateDir, "-C", f.workDir]

/** the JSON-RPC lines the CLI sent the app-server (`--log-level debug`) */
const sent = (stderr: string) => stderr.split("\n").filter((l) => l.includes("app-server <- ")).map((l) => l.slice(l.indexOf("app-server <- ") + 14))
const uploads = (stderr: string) =>
  sent(stderr)
    .filter((l) => l.includes('"feedback/upload"'))
    .map((l) => (JSON.parse(l) as { params: { threadId?: string; reason?: string; includeLogs?: boolean } }).params)
/** what the CLI said itself (not a log line) */
const said = (stderr: string) => stderr.split("\n").filter((l) => l !== "" && !/^codex-harness: (debug|info|warning|trace):/.test(l))

describe("diagnostics on the real app-server", () => {
  it.scopedLive("[S36] approved: feedback/upload for the session's thread and its spawned sub-agent thread; offline, the app-server's error and exit 1", () =>
    Effect.gen(function* () {
      const f = yield* fixture(delegating)
      const h = yield* start(f.settings)
      const turn = yield* h.harness.runTurn({ sessionId: "diag", prompt: "please delegate" })
      expect(turn.status).toBe("completed")
      // the receipt that the sub-agent ran: its own request reached the model
      const requests = yield* f.model.waitForRequests(3)
      expect(requests.some((r) => r.body.includes("CHILD TASK"))).toBe(true)

      const plan = yield* h.diagnostics.plan({ sessionId: "diag", note: "library note" })
      expect(plan.threads[0]).toEqual({ threadId: turn.threadId, role: "bound" })
      expect(plan.threads.slice(1)).toEqual([expect.objectContaining({ role: "subAgent", parentThreadId: turn.threadId })])
      const child = plan.threads[1]!.threadId
      const failed = yield* h.diagnostics.upload({ sessionId: "diag", note: "library note" }).pipe(Effect.flip)
      // the person deciding is told what goes, counted, and no thread id (S36: a denial prints none)
      expect(h.asked.filter((r) => r.kind === "diagnostics")).toEqual([
        expect.objectContaining({ sessionId: "diag", sessionThread: true, subAgentThreads: 1, includeLogs: true, note: "library note" })
      ])
      for (const id of [turn.threadId, child]) expect(JSON.stringify(h.asked)).not.toContain(id)
      expect(failed._tag).toBe("DiagnosticsUploadFailed")
      expect(failed.message).toMatch(/failed to upload feedback/)
      yield* h.stop

      // the CLI, approved by --approvals allow: both threads asked of the app-server, the note as the reason, logs on
      const ran = yield* runBin(["diagnostics", "--log-level=debug", ...common(f), "--session", "diag", "--approvals", "allow", "cli note"])
      expect(ran.code, ran.stderr).toBe(1)
      expect(uploads(ran.stderr)).toEqual([
        expect.objectContaining({ threadId: turn.threadId, reason: "cli note", includeLogs: true }),
        expect.objectContaining({ threadId: child, reason: "cli note", includeLogs: true })
      ])
      expect(said(ran.stderr)).toHaveLength(1)
      expect(said(ran.stderr)[0]).toMatch(/feedback upload of thread .* failed: failed to upload feedback/)
      // nothing went, so no id is printed
      expect(ran.stdout).toBe("")

      // --thread-only: the bound thread alone
      const only = yield* runBin(["diagnostics", "--log-level=debug", ...common(f), "--session", "diag", "--thread-only", "--approvals", "allow"])
      expect(only.code, only.stderr).toBe(1)
      expect(uploads(only.stderr).map((p) => p.threadId)).toEqual([turn.threadId])
      expect(sent(only.stderr).some((l) => l.includes('"thread/list"'))).toBe(false)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S36] denied (no terminal, no --approvals): no feedback/upload at all, nothing on stdout, one line and exit 1", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ fallback: reply.text("hello") })
      const h = yield* start(f.settings)
      yield* h.harness.runTurn({ sessionId: "deny", prompt: "hi" })
      yield* h.stop
      const ran = yield* runBin(["diagnostics", "--log-level=debug", ...common(f), "--session", "deny", "please look"])
      expect(ran.code, ran.stderr).toBe(1)
      expect(said(ran.stderr)).toEqual(["codex-harness: diagnostics not sent: denied; nothing left this machine"])
      expect(sent(ran.stderr).length).toBeGreaterThan(0)
      expect(sent(ran.stderr).filter((l) => l.includes("feedback/upload"))).toEqual([])
      expect(ran.stdout).toBe("")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S36] at a terminal the question counts the threads but shows no thread id; answered no, nothing is sent and no id is printed", () =>
    Effect.gen(function* () {
      const f = yield* fixture(delegating)
      const h = yield* start(f.settings)
      const turn = yield* h.harness.runTurn({ sessionId: "asked", prompt: "please delegate" })
      yield* f.model.waitForRequests(3)
      const { threads } = yield* h.diagnostics.plan({ sessionId: "asked" })
      expect(threads).toHaveLength(2)
      yield* h.stop

      const pty = yield* onPty(["diagnostics", ...common(f), "--session", "asked", "is it broken?"])
      yield* pty.shows("Allow? [y]es once")
      const question = pty.screen()
      expect(question).toContain("threads: the session's thread and 1 sub-agent thread")
      expect(question).toContain("session: asked")
      yield* pty.type("n\r")
      expect(yield* pty.exited).toBe(1)
      expect(pty.screen()).toContain("diagnostics not sent: denied; nothing left this machine")
      // nowhere on the screen, before the answer or after it: neither thread's id
      expect(threads.map((t) => t.threadId)).toEqual([turn.threadId, expect.any(String)])
      for (const { threadId } of threads) expect(pty.screen()).not.toContain(threadId)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S36] --bundle: a 0600 local file with versions, the redacted config, server/diagnostics and the session's records; never over a file", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ fallback: reply.text("bundle reply") })
      const h = yield* start(f.settings)
      yield* h.harness.runTurn({ sessionId: "bundled", prompt: "remember the tangerine" })
      yield* h.stop
      const key = "sk-diag-provider-key-0123456789"
      const config = path.join(f.stateDir, "config.json")
      fs.writeFileSync(
        config,
        JSON.stringify({ mcpServers: { tools: { command: "tools-mcp", args: ["--token=mcp-arg-secret-1"], env: { TOOLS_TOKEN: "mcp-env-secret-2" } } } }),
        { mode: 0o600 }
      )
      const file = path.join(f.workDir, "bundle.json")
      const ran = yield* runBin(["diagnostics", ...common(f), "--session", "bundled", "--bundle", file], { env: { OPENAI_API_KEY: key } })
      expect(ran.code, ran.stderr).toBe(0)
      expect(ran.stdout).toContain(`bundle written: ${file}`)
      expect(ran.stderr).not.toContain("approval")
      expect(fs.statSync(file).mode & 0o777).toBe(0o600)
      const text = fs.readFileSync(file, "utf8")
      for (const secret of [key, "mcp-arg-secret-1", "mcp-env-secret-2"]) expect(text).not.toContain(secret)
      const bundle = JSON.parse(text)
      expect(bundle.versions.harness).toMatch(/^\d+\.\d+\.\d+/)
      expect(bundle.versions.codex).toContain("0.171.0")
      expect(bundle.config.mcpServers.tools).toEqual({ command: "tools-mcp", args: ["--token=***"], env: { TOOLS_TOKEN: "***" } })
      expect(bundle.config.providerUrl).toBe(f.model.url)
      expect(bundle.serverDiagnostics.process.id).toEqual(expect.any(Number))
      expect(bundle.serverDiagnostics.gauges).toEqual(expect.any(Array))
      expect(bundle.session.sessionId).toBe("bundled")
      expect(bundle.session.threadId).toEqual(expect.any(String))
      expect(bundle.session.records.last.some((r: { _tag: string; text?: string }) => r._tag === "user" && r.text === "remember the tangerine")).toBe(true)

      const again = yield* runBin(["diagnostics", ...common(f), "--session", "bundled", "--bundle", file])
      expect(again.code).toBe(1)
      expect(again.stderr.trim()).toBe(`codex-harness: ${file} already exists: a diagnostics bundle is never written over a file`)
      expect(fs.readFileSync(file, "utf8")).toBe(text)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)
})
