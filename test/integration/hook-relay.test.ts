// The native hook relay on the real app-server (S20, S27): per-thread hooks, trusted by the hash the relay computes,
// run `codex-harness hook-relay`, which asks this process over the relay socket. A PreToolUse deny blocks the command,
// a PermissionRequest allow runs it without the client approval request, a Stop continue happens once, and a relay
// that is gone blocks PreToolUse with a clear line.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import type { NativeHookEvent } from "../../schemas/config.js"
import * as Live from "../../layers/internal/Live.js"
import * as HookRelay from "../../src/approvals/HookRelay.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import * as CodexHarness from "../../src/harness/CodexHarness.js"
import { type ApprovalDecision, ApprovalPrompts, type ApprovalRequest } from "../../src/ports/ApprovalPrompts.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, tempDir } from "../support/harness.js"

const untrusted = { approvalPolicy: "untrusted", sandbox: "workspace-write" } as const
const repo = path.resolve(import.meta.dirname, "../..")

/** the package command once `bin/codex-harness.js` routes `hook-relay`; the compiled relay script until then */
const relayCommand = fs.readFileSync(path.join(repo, "bin/codex-harness.js"), "utf8").includes("hook-relay")
  ? undefined
  : [process.execPath, path.join(repo, "dist/src/cli/hookRelay.js")]

interface Start {
  readonly policy?: HookRelay.HookPolicyService
  readonly decision?: ApprovalDecision
  readonly events?: ReadonlyArray<NativeHookEvent>
  readonly socketParentDir?: string
  readonly preToolUseApprovalMode?: "report"
}

/** the live composition, with these approval decisions, hook policy and relay options */
const start = (settings: HarnessSettings, options: Start = {}) =>
  Effect.gen(function* () {
    const asked: Array<ApprovalRequest> = []
    let decision: ApprovalDecision = options.decision ?? "deny"
    const remembered: Array<ApprovalRequest> = []
    const prompts = Layer.succeed(ApprovalPrompts, {
      ask: (request) => Effect.sync(() => (asked.push(request), decision)),
      remembered: (request) => Effect.sync(() => void remembered.push(request))
    })
    const live = Live.layer({ ...settings, ...(options.events !== undefined ? { nativeHookEvents: options.events } : {}) }).pipe(
      Layer.provide(prompts),
      Layer.provide(Layer.succeed(HookRelay.HookPolicy, options.policy ?? HookRelay.allowAll)),
      Layer.provide(Layer.succeed(HookRelay.HookRelayConfig, {
        relayCommand,
        socketParentDir: options.socketParentDir,
        preToolUseApprovalMode: options.preToolUseApprovalMode
      })),
      Layer.provideMerge(RecordingDelivery.layer)
    )
    const context = yield* Layer.build(live)
    return {
      harness: Context.get(context, CodexHarness.CodexHarness),
      reports: Context.get(context, HookRelay.HookReports),
      asked,
      /** requests an earlier "always" allowed without asking */
      remembered,
      /** what the prompts answer from now on */
      decide: (next: ApprovalDecision) => void (decision = next)
    }
  })

const touch = (file: string) => reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: `touch ${file}` } })

describe("native hook relay on the real app-server", () => {
  it.scopedLive("[S20] a PreToolUse deny blocks the command before any approval; the model is told why", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [touch("hooked.txt"), reply.text("blocked then")] }, untrusted)
      const h = yield* start(f.settings, {
        decision: "allowOnce",
        policy: {
          preToolUse: ({ payload }) =>
            Effect.succeed(
              payload.command?.includes("touch") === true ? { _tag: "Deny", reason: "no touching today" } : { _tag: "NoDecision" }
            )
        }
      })
      const result = yield* h.harness.runTurn({ sessionId: "pre-deny", prompt: "make hooked.txt" })
      expect(result.finalText).toBe("blocked then")
      expect(fs.existsSync(path.join(f.workDir, "hooked.txt"))).toBe(false)
      expect(h.asked).toHaveLength(0)
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests[1]!.body).toContain("Command blocked by PreToolUse hook")
      expect(requests[1]!.body).toContain("no touching today")
    })
  )

  it.scopedLive("[S27] a PermissionRequest allow (named in the events) runs the command with no client approval request", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [touch("allowed.txt"), reply.text("done")] }, untrusted)
      const h = yield* start(f.settings, { decision: "allowOnce", events: ["pre_tool_use", "permission_request", "stop"] })
      const result = yield* h.harness.runTurn({ sessionId: "perm-allow", prompt: "make allowed.txt" })
      expect(result.finalText).toBe("done")
      expect(fs.existsSync(path.join(f.workDir, "allowed.txt"))).toBe(true)
      // one prompt, from the hook; the app-server's own approval request never came
      expect(h.asked).toHaveLength(1)
      expect(h.asked[0]).toMatchObject({ kind: "command", reason: "PermissionRequest hook", sessionId: "perm-allow" })
      expect((h.asked[0] as { command: string }).command).toContain("touch allowed.txt")
    })
  )

  it.scopedLive("a Stop continue happens once: the model sees the reason, then the turn ends (stop_hook_active)", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("first"), reply.text("second"), reply.text("third")] }, untrusted)
      let stops = 0
      const h = yield* start(f.settings, {
        policy: { stop: () => Effect.sync(() => stops++).pipe(Effect.as({ _tag: "Continue", reason: "please also run tests" } as const)) }
      })
      const result = yield* h.harness.runTurn({ sessionId: "stop-once", prompt: "say something" })
      expect(result.finalText).toBe("second")
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests[1]!.body).toContain("please also run tests")
      expect(stops).toBe(1)
    })
  )

  it.scopedLive("[S20] without a policy the tool and Stop hooks still run, trusted, as a no-op command: no decision, no relay process", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [touch("plain.txt"), reply.text("just once")] }, untrusted)
      const h = yield* start(f.settings, { decision: "allowOnce" })
      const hooks: Array<{ readonly method: string; readonly params?: unknown }> = []
      const result = yield* h.harness.runTurn({
        sessionId: "stop-noop",
        prompt: "say something",
        onEvent: (event) =>
          Effect.sync(() => {
            if (event._tag === "Notification" && event.notification.method.startsWith("hook/")) hooks.push(event.notification)
          })
      })
      expect(result.finalText).toBe("just once")
      expect((yield* f.model.requests)).toHaveLength(2)
      expect(fs.existsSync(path.join(f.workDir, "plain.txt"))).toBe(true)
      // the harness's own (session-flags) hooks ran and completed: Codex trusted them, and they decided nothing
      const runs = hooks.map((n) => ({ method: n.method, run: (n.params as { run: { eventName: string; status: string; source: string } }).run }))
      for (const event of ["preToolUse", "postToolUse", "stop"]) {
        const ofEvent = runs.filter((r) => r.run.eventName === event)
        expect(ofEvent.map((r) => [r.method, r.run.status, r.run.source])).toEqual([
          ["hook/started", "running", "sessionFlags"],
          ["hook/completed", "completed", "sessionFlags"]
        ])
      }
    })
  )

  it.scopedLive("a relay that is gone (socket removed) blocks PreToolUse with a clear refusal", () =>
    Effect.gen(function* () {
      const parent = yield* tempDir("codex-hr-parent-")
      const f = yield* fixture({ replies: [touch("nope.txt"), reply.text("refused")] }, untrusted)
      // a policy that decides PreToolUse: only then is the event relayed
      const policy = { preToolUse: () => Effect.succeed({ _tag: "NoDecision" } as const) }
      const h = yield* start(f.settings, { decision: "allowOnce", socketParentDir: parent, policy })
      for (const dir of fs.readdirSync(parent)) fs.rmSync(path.join(parent, dir, "relay.sock"), { force: true })
      const result = yield* h.harness.runTurn({ sessionId: "relay-down", prompt: "make nope.txt" })
      expect(result.finalText).toBe("refused")
      expect(fs.existsSync(path.join(f.workDir, "nope.txt"))).toBe(false)
      const requests = yield* f.model.requests
      expect(requests[1]!.body).toContain("Command blocked by PreToolUse hook")
      expect(requests[1]!.body).toContain("codex-harness hook relay unreachable")
    })
  )

  it.scopedLive("[S20] a resumed thread gets the new process's relay (hooks and trust are sent again on resume)", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("one"), touch("later.txt"), reply.text("two")] }, untrusted)
      const first = yield* Scope.make()
      const a = yield* start(f.settings).pipe(Scope.extend(first))
      yield* a.harness.runTurn({ sessionId: "resumed", prompt: "hello" })
      yield* Scope.close(first, Exit.void)
      const b = yield* start(f.settings, {
        decision: "allowOnce",
        policy: { preToolUse: () => Effect.succeed({ _tag: "Deny", reason: "second process says no" }) }
      })
      const opened: Array<unknown> = []
      const result = yield* b.harness.runTurn({
        sessionId: "resumed",
        prompt: "make later.txt",
        onEvent: (e) => Effect.sync(() => e._tag === "ThreadOpened" && opened.push(e.thread))
      })
      expect(opened).toEqual([expect.objectContaining({ resumed: true })])
      expect(result.finalText).toBe("two")
      expect(fs.existsSync(path.join(f.workDir, "later.txt"))).toBe(false)
      const requests = yield* f.model.requests
      expect(requests[2]!.body).toContain("second process says no")
      expect(requests[2]!.body).not.toContain("unreachable")
    })
  )

  it.scopedLive("[S22] report mode: a PreToolUse requirement is recorded with no native decision, then shown once with the app-server's approval for that tool use; its decision maps back", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [touch("reported.txt"), reply.text("approved then"), touch("refused.txt"), reply.text("declined then")] }, untrusted)
      const modes: Array<string | undefined> = []
      const reason = "the deploy plugin reviews shell commands"
      const h = yield* start(f.settings, {
        preToolUseApprovalMode: "report",
        policy: {
          preToolUse: ({ payload }) =>
            Effect.sync(() => modes.push(payload.approvalMode)).pipe(Effect.as({ _tag: "RequireApproval", reason } as const))
        }
      })
      h.decide("allowOnce")
      const allowed = yield* h.harness.runTurn({ sessionId: "report", prompt: "make reported.txt" })
      expect(allowed.finalText).toBe("approved then")
      // the relay marked Codex's payload; the hook decided nothing, and the one prompt is the app-server's approval
      // (its command is Codex's shell invocation) carrying the policy's reason
      expect(h.asked).toEqual([expect.objectContaining({ kind: "command", reason, command: expect.stringContaining("touch reported.txt") })])
      expect(modes).toEqual(["report"])
      expect((h.asked[0] as { command: string }).command).not.toBe("touch reported.txt")
      expect(fs.existsSync(path.join(f.workDir, "reported.txt"))).toBe(true)
      expect(yield* h.reports.pending).toEqual([])
      // a deny maps back as the app-server's decline
      h.decide("deny")
      const denied = yield* h.harness.runTurn({ sessionId: "report", prompt: "make refused.txt" })
      expect(denied.finalText).toBe("declined then")
      expect(h.asked).toHaveLength(2)
      expect(h.asked[1]).toMatchObject({ kind: "command", reason })
      expect(fs.existsSync(path.join(f.workDir, "refused.txt"))).toBe(false)
      expect(yield* h.reports.pending).toEqual([])
    })
  )

  it.scopedLive("[S28] an \"always\" on the PermissionRequest hook is remembered for the exact input in the session: the same request is not asked again; another command or session is", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        replies: [
          touch("always.txt"),
          reply.text("one"),
          touch("always.txt"),
          reply.text("two"),
          touch("other.txt"),
          reply.text("three"),
          touch("always.txt"),
          reply.text("four")
        ]
      }, untrusted)
      const h = yield* start(f.settings, { decision: "allowAlways", events: ["pre_tool_use", "permission_request", "stop"] })
      expect((yield* h.harness.runTurn({ sessionId: "always", prompt: "make always.txt" })).finalText).toBe("one")
      expect(h.asked).toEqual([expect.objectContaining({ kind: "command", reason: "PermissionRequest hook", command: "touch always.txt" })])
      // the answer from now on would be a deny: only the remembered "always" can let the same command through
      h.decide("deny")
      fs.rmSync(path.join(f.workDir, "always.txt"))
      expect((yield* h.harness.runTurn({ sessionId: "always", prompt: "make always.txt again" })).finalText).toBe("two")
      expect(h.asked).toHaveLength(1)
      expect(h.remembered).toEqual([expect.objectContaining({ command: "touch always.txt", sessionId: "always" })])
      expect(fs.existsSync(path.join(f.workDir, "always.txt"))).toBe(true)
      // a different command is a different fingerprint: asked, and denied
      expect((yield* h.harness.runTurn({ sessionId: "always", prompt: "make other.txt" })).finalText).toBe("three")
      expect(h.asked).toHaveLength(2)
      expect(h.asked[1]).toMatchObject({ command: "touch other.txt" })
      expect(fs.existsSync(path.join(f.workDir, "other.txt"))).toBe(false)
      // another session is another scope: the same command is asked there
      expect((yield* h.harness.runTurn({ sessionId: "elsewhere", prompt: "make always.txt" })).finalText).toBe("four")
      expect(h.asked).toHaveLength(3)
      expect(h.asked[2]).toMatchObject({ command: "touch always.txt", sessionId: "elsewhere" })
    })
  )
})
