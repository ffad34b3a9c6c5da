// The native hook relay's pure parts (S20, S22, S27): decision mapping per event, Stop never looping, which events are
// injected, and the thread config shape with its trust state.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import * as crypto from "node:crypto"
import * as HookRelay from "../../src/approvals/HookRelay.js"
import * as PermissionMemory from "../../src/approvals/PermissionMemory.js"
import { defaultNativeHookEvents } from "../../src/config/HarnessConfig.js"
import { type ApprovalDecision, declineAll } from "../../src/ports/ApprovalPrompts.js"
import { defaultTimeoutMs, failsClosed, markPayload, parseArgs, readOutput } from "../../src/cli/hookRelay.js"

const services = (
  policy: HookRelay.HookPolicyService,
  decision?: ApprovalDecision
): Effect.Effect<HookRelay.RelayServices> =>
  Effect.all([HookRelay.makeReports(), PermissionMemory.make({ stateDir: "/s", cwd: "/w", approvalPolicy: "never", sandbox: "read-only" })])
    .pipe(Effect.map(([reports, permissions]) => ({
      policy,
      prompts: decision === undefined ? declineAll : { ask: () => Effect.succeed(decision) },
      reports,
      promptTimeout: "1 second",
      permissions
    })))

const pre = (extra: Record<string, unknown> = {}) => ({
  session_id: "th1",
  turn_id: "t1",
  cwd: "/w",
  hook_event_name: "PreToolUse",
  tool_name: "Bash",
  tool_input: { command: "rm -rf x" },
  tool_use_id: "call_1",
  ...extra
})

describe("hook relay decisions", () => {
  it("[S20] PreToolUse maps allow and no decision to no output, a deny to exit 2 with the reason", () => {
    expect(HookRelay.preToolUseOutput("allow")).toEqual({ exitCode: 0 })
    expect(HookRelay.preToolUseOutput("noDecision")).toEqual({ exitCode: 0 })
    expect(HookRelay.preToolUseOutput({ deny: "nope" })).toEqual({ exitCode: 2, stderr: "nope" })
  })

  it("[S27] PermissionRequest answers only an explicit allow or deny; no decision is no output (never an allow)", () => {
    const allow = JSON.parse(HookRelay.permissionRequestOutput("allowOnce").stdout!)
    expect(allow).toEqual({ hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } } })
    expect(HookRelay.permissionRequestOutput("allowAlways").stdout).toBe(HookRelay.permissionRequestOutput("allowOnce").stdout)
    const deny = JSON.parse(HookRelay.permissionRequestOutput("deny", "no way").stdout!)
    expect(deny.hookSpecificOutput.decision).toEqual({ behavior: "deny", message: "no way" })
    expect(HookRelay.permissionRequestOutput("noDecision")).toEqual({ exitCode: 0 })
  })

  it("Stop blocks with the reason, never while stop_hook_active is set", () => {
    const go = { _tag: "Continue", reason: "run the tests" } as const
    expect(JSON.parse(HookRelay.stopOutput(go, false).stdout!)).toEqual({ decision: "block", reason: "run the tests" })
    expect(HookRelay.stopOutput(go, true)).toEqual({ exitCode: 0 })
    expect(HookRelay.stopOutput({ _tag: "Stop" }, false)).toEqual({ exitCode: 0 })
  })

  it.effect("the default policy makes no decision for any event", () =>
    Effect.gen(function* () {
      const h = HookRelay.handle(yield* services(HookRelay.allowAll))
      for (const event of ["PreToolUse", "PostToolUse", "Stop"] as const) {
        expect(yield* h({ sessionId: "s", event, payload: pre() })).toEqual({ exitCode: 0 })
      }
      // no prompts at all: PermissionRequest has no decision (Codex asks the usual way)
      expect(yield* h({ sessionId: "s", event: "PermissionRequest", payload: pre() })).toEqual({ exitCode: 0 })
    })
  )

  it.effect("a PreToolUse policy deny blocks; a policy that dies blocks too", () =>
    Effect.gen(function* () {
      const deny = HookRelay.handle(yield* services({ preToolUse: () => Effect.succeed({ _tag: "Deny", reason: "no rm" }) }))
      expect(yield* deny({ sessionId: "s", event: "PreToolUse", payload: pre() })).toEqual({ exitCode: 2, stderr: "no rm" })
      const dies = HookRelay.handle(yield* services({ preToolUse: () => Effect.die("boom") }))
      expect((yield* dies({ sessionId: "s", event: "PreToolUse", payload: pre() })).exitCode).toBe(2)
    })
  )

  it.effect("[S22] report mode records the requirement and returns no decision; the approval looks it up once", () =>
    Effect.gen(function* () {
      const s = yield* services({ preToolUse: () => Effect.succeed({ _tag: "RequireApproval", reason: "plugin says ask" }) })
      const h = HookRelay.handle(s)
      const out = yield* h({ sessionId: "s", event: "PreToolUse", payload: pre({ openclaw_approval_mode: "report" }) })
      expect(out).toEqual({ exitCode: 0 })
      expect(yield* s.reports.pending).toHaveLength(1)
      expect(Option.isNone(yield* s.reports.take({ sessionId: "other", itemId: "call_1" }))).toBe(true)
      const found = yield* s.reports.take({ sessionId: "s", command: "/bin/bash -lc 'rm -rf x'" })
      expect(Option.getOrThrow(found)).toMatchObject({ toolUseId: "call_1", command: "rm -rf x", reason: "plugin says ask" })
      expect(yield* s.reports.pending).toHaveLength(0)
    })
  )

  it.effect("a requirement outside report mode asks the prompts: allow proceeds, anything else blocks", () =>
    Effect.gen(function* () {
      const policy: HookRelay.HookPolicyService = { preToolUse: () => Effect.succeed({ _tag: "RequireApproval" }) }
      const yes = HookRelay.handle(yield* services(policy, "allowOnce"))
      expect(yield* yes({ sessionId: "s", event: "PreToolUse", payload: pre() })).toEqual({ exitCode: 0 })
      const none = HookRelay.handle(yield* services(policy, "noDecision"))
      expect((yield* none({ sessionId: "s", event: "PreToolUse", payload: pre() })).exitCode).toBe(2)
      const noPrompts = HookRelay.handle(yield* services(policy))
      expect((yield* noPrompts({ sessionId: "s", event: "PreToolUse", payload: pre() })).exitCode).toBe(2)
    })
  )

  it.effect("[S27] PermissionRequest goes through the prompts: allow, deny, no decision", () =>
    Effect.gen(function* () {
      const run = (d: ApprovalDecision) =>
        Effect.flatMap(services({}, d), (s) => HookRelay.handle(s)({ sessionId: "s", event: "PermissionRequest", payload: pre() }))
      expect(JSON.parse((yield* run("allowOnce")).stdout!).hookSpecificOutput.decision.behavior).toBe("allow")
      expect(JSON.parse((yield* run("deny")).stdout!).hookSpecificOutput.decision.behavior).toBe("deny")
      expect(yield* run("noDecision")).toEqual({ exitCode: 0 })
    })
  )

  it.effect("[S28] a PermissionRequest \"always\" answers only the exact (session, tool input, cwd), and only within its window", () =>
    Effect.gen(function* () {
      let asked = 0
      const base = yield* services({})
      const h = HookRelay.handle({ ...base, prompts: { ask: () => Effect.sync(() => (asked++, "allowAlways" as const)) } })
      const permission = (sessionId: string, extra: Record<string, unknown> = {}) =>
        Effect.map(h({ sessionId, event: "PermissionRequest", payload: pre(extra) }), (out) =>
          JSON.parse(out.stdout!).hookSpecificOutput.decision.behavior)
      expect(yield* permission("s")).toBe("allow")
      expect(yield* permission("s")).toBe("allow")
      expect(asked).toBe(1)
      yield* permission("s", { cwd: "/elsewhere" })
      yield* permission("s", { tool_input: { command: "rm -rf y" } })
      yield* permission("other")
      expect(asked).toBe(4)
      // past the window (30 minutes by default) the first one is asked again
      yield* TestClock.adjust("31 minutes")
      yield* permission("s")
      expect(asked).toBe(5)
    })
  )

  it.effect("Stop: the policy's continue is honoured once, never with stop_hook_active", () =>
    Effect.gen(function* () {
      const h = HookRelay.handle(yield* services({ stop: () => Effect.succeed({ _tag: "Continue", reason: "more" }) }))
      const first = yield* h({ sessionId: "s", event: "Stop", payload: { stop_hook_active: false } })
      expect(JSON.parse(first.stdout!)).toEqual({ decision: "block", reason: "more" })
      expect(yield* h({ sessionId: "s", event: "Stop", payload: { stop_hook_active: true } })).toEqual({ exitCode: 0 })
    })
  )
})

describe("hook relay thread config", () => {
  const hookFor = (event: string) => ({ command: `relay ${event}`, timeout: 10, statusMessage: "m" })

  it("[S20] PermissionRequest is left out unless the policy is never or it is named", () => {
    expect(defaultNativeHookEvents("untrusted")).not.toContain("permission_request")
    expect(defaultNativeHookEvents("on-request")).not.toContain("permission_request")
    expect(defaultNativeHookEvents("never")).toContain("permission_request")
    const untrusted = HookRelay.threadHookConfig(defaultNativeHookEvents("untrusted"), hookFor)
    expect(Object.keys(untrusted).sort()).toEqual(
      ["features.hooks", "hooks.PostToolUse", "hooks.PreToolUse", "hooks.Stop", "hooks.state"].sort()
    )
    const named = HookRelay.threadHookConfig(["pre_tool_use", "permission_request"], hookFor)
    expect(named["hooks.PermissionRequest"]).toBeDefined()
    expect(HookRelay.threadHookConfig([], hookFor)).toEqual({})
  })

  it("[S20] the config shape: features.hooks, one group per event (Stop without matcher) and the trust state", () => {
    const config = HookRelay.threadHookConfig(["pre_tool_use", "stop"], hookFor)
    expect(config["features.hooks"]).toBe(true)
    expect(config["hooks.PreToolUse"]).toEqual([
      { matcher: "*", hooks: [{ type: "command", command: "relay pre_tool_use", timeout: 10, statusMessage: "m" }] }
    ])
    expect(config["hooks.Stop"]).toEqual([{ hooks: [{ type: "command", command: "relay stop", timeout: 10, statusMessage: "m" }] }])
    const state = config["hooks.state"] as Record<string, { trusted_hash: string }>
    expect(Object.keys(state).sort()).toEqual([
      "/<session-flags>/config.toml:pre_tool_use:0:0",
      "/<session-flags>/config.toml:stop:0:0"
    ])
    expect(state["/<session-flags>/config.toml:stop:0:0"]!.trusted_hash).toBe(
      HookRelay.trustHash("stop", undefined, hookFor("stop"))
    )
  })

  it("the trust hash is Codex's currentHash (observed from hooks/list of codex 0.171.0)", () => {
    expect(HookRelay.trustHash("pre_tool_use", "*", { command: "echo a", timeout: 10, statusMessage: "m" })).toBe(
      "sha256:4b76061ba6c8c7cdf56a77596069eed6119a0276e1f897e95b3a37f117897da3"
    )
    const canonical =
      '{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"echo a","statusMessage":"m","timeout":10,"type":"command"}],"matcher":"*"}'
    expect(crypto.createHash("sha256").update(canonical).digest("hex")).toBe("4b76061ba6c8c7cdf56a77596069eed6119a0276e1f897e95b3a37f117897da3")
  })

  it("the hook command line is shell-quoted and names the token file and the relay's deadline", () => {
    const prefix = ["/usr/bin/node", "/a b/bin/codex-harness.js", "hook-relay"]
    expect(HookRelay.relayCommandLine(prefix, "/tmp/x/relay.sock", "/tmp/x/session-1.token", "Stop", 30))
      .toBe("/usr/bin/node '/a b/bin/codex-harness.js' hook-relay --socket /tmp/x/relay.sock --token-file /tmp/x/session-1.token --event Stop --timeout-ms 27000")
    expect(HookRelay.shellQuote("it's")).toBe(`'it'\\''s'`)
  })

  it("[S22] report mode: the command asks the relay to mark the payload, which it does unless the payload names a mode", () => {
    expect(HookRelay.relayCommandLine(["relay"], "/s", "/t", "PreToolUse", 30, "report")).toBe(
      "relay --socket /s --token-file /t --event PreToolUse --timeout-ms 27000 --approval-mode report"
    )
    expect(markPayload({ tool_use_id: "c1" }, "report")).toEqual({ tool_use_id: "c1", openclaw_approval_mode: "report" })
    expect(markPayload({ openclaw_approval_mode: "other" }, "report")).toEqual({ openclaw_approval_mode: "other" })
    expect(markPayload({ tool_use_id: "c1" }, undefined)).toEqual({ tool_use_id: "c1" })
    expect(markPayload(null, "report")).toBe(null)
  })

  it("the relay's deadline is Codex's hook timeout less 10%, at most 5 s less", () => {
    expect(HookRelay.relayTimeoutMs(600)).toBe(595_000)
    expect(HookRelay.relayTimeoutMs(30)).toBe(27_000)
    expect(HookRelay.relayTimeoutMs(1)).toBe(900)
    expect(HookRelay.relayTimeoutMs(0)).toBe(1)
  })

  it("the relay command's arguments and fail-closed events", () => {
    expect(parseArgs(["--socket", "S", "--token-file=F", "--event", "Stop", "--timeout-ms", "1500"])).toEqual({
      socket: "S",
      tokenFile: "F",
      event: "Stop",
      timeoutMs: 1500
    })
    expect(parseArgs(["--socket", "S", "--token-file", "F", "--event", "Stop"])?.timeoutMs).toBe(defaultTimeoutMs)
    expect(parseArgs(["--socket", "S", "--token-file", "F", "--event", "Stop", "--timeout-ms", "soon"])).toBeUndefined()
    expect(parseArgs(["--socket", "S", "--token-file", "F", "--event", "Stop", "--timeout-ms", "0"])).toBeUndefined()
    // the token itself is no longer accepted on the command line
    expect(parseArgs(["--socket", "S", "--token", "T", "--event", "Stop"])).toBeUndefined()
    expect(parseArgs(["--socket", "S"])).toBeUndefined()
    expect(parseArgs(["--socket", "S", "--token-file", "F", "--event", "PreToolUse", "--approval-mode", "report"])?.approvalMode).toBe("report")
    expect(parseArgs(["--socket", "S", "--token-file", "F", "--event", "PreToolUse", "--approval-mode", "ask"])).toBeUndefined()
    expect(failsClosed("PreToolUse")).toBe(true)
    expect(failsClosed("PermissionRequest")).toBe(true)
    expect(failsClosed("PostToolUse")).toBe(false)
    expect(failsClosed("Stop")).toBe(false)
  })

  it("only exit code 0 or 2 with string outputs is a decision the relay passes on", () => {
    expect(readOutput({ exitCode: 2, stderr: "no" })).toEqual({ exitCode: 2, stderr: "no" })
    expect(readOutput({ exitCode: 0, stdout: "{}" })).toEqual({ exitCode: 0, stdout: "{}" })
    expect(readOutput({ exitCode: 0 })).toEqual({ exitCode: 0 })
    for (const bad of [{ exitCode: 7 }, { exitCode: "2" }, { exitCode: 0, stdout: 1 }, { exitCode: 2, stderr: null }, {}, null, [0], "0"]) {
      expect(readOutput(bad)).toBeUndefined()
    }
  })
})
