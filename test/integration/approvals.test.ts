// Approvals on the real app-server (S27, S28): under "untrusted" a command and a patch ask for approval; an allow
// runs them, a deny reaches the model as a rejection and leaves the workspace untouched.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../../src/config/Settings.js"
import { type ApprovalDecision, ApprovalPrompts, type ApprovalRequest } from "../../src/ports/ApprovalPrompts.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture } from "../support/harness.js"

const untrusted = { approvalPolicy: "untrusted", sandbox: "workspace-write" } as const

/** the live harness with an ApprovalPrompts port answering every prompt with `decision` */
const start = (settings: HarnessSettings, decision: ApprovalDecision) =>
  Effect.gen(function* () {
    const asked: Array<ApprovalRequest> = []
    const prompts = Layer.succeed(ApprovalPrompts, {
      ask: (request) => Effect.sync(() => asked.push(request)).pipe(Effect.as(decision))
    })
    // the production path: the embedder provides the ApprovalPrompts port, the live layer installs the approvals room
    const context = yield* Layer.build(
      Live.layer(settings).pipe(Layer.provideMerge(RecordingDelivery.layer), Layer.provide(prompts))
    )
    return { harness: Context.get(context, CodexHarness), asked }
  })

describe("approvals on the real app-server", () => {
  it.scopedLive("[S27] an accepted command approval runs the command and its output reaches the model", () =>
    Effect.gen(function* () {
      const f = yield* fixture(
        { replies: [reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch x.txt" } }), reply.text("made it")] },
        untrusted
      )
      const h = yield* start(f.settings, "allowOnce")
      const result = yield* h.harness.runTurn({ sessionId: "cmd-ok", prompt: "make x.txt" })
      expect(result.finalText).toBe("made it")
      expect(h.asked).toHaveLength(1)
      expect(h.asked[0]).toMatchObject({ kind: "command", sessionId: "cmd-ok", cwd: f.workDir })
      expect((h.asked[0] as { command: string }).command).toContain("touch x.txt")
      expect(fs.existsSync(path.join(f.workDir, "x.txt"))).toBe(true)
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests[1]!.body).toContain("function_call_output")
      expect(requests[1]!.body).toContain("Process exited with code 0")
    })
  )

  it.scopedLive("[S27] a declined command approval leaves the workspace untouched and the model is told it was rejected", () =>
    Effect.gen(function* () {
      const f = yield* fixture(
        { replies: [reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch x.txt" } }), reply.text("ok, not")] },
        untrusted
      )
      const h = yield* start(f.settings, "deny")
      const result = yield* h.harness.runTurn({ sessionId: "cmd-no", prompt: "make x.txt" })
      expect(result.status).toBe("completed")
      expect(h.asked).toHaveLength(1)
      expect(fs.existsSync(path.join(f.workDir, "x.txt"))).toBe(false)
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests[1]!.body).toContain("rejected")
    })
  )

  it.scopedLive("[S27] an accepted file-change approval (with the patch's changes shown) writes the file", () =>
    Effect.gen(function* () {
      const patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\nEOF\n"
      const f = yield* fixture(
        { replies: [reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: patch } }), reply.text("patched")] },
        untrusted
      )
      const h = yield* start(f.settings, "allowOnce")
      const result = yield* h.harness.runTurn({ sessionId: "patch-ok", prompt: "add hello.txt" })
      expect(result.finalText).toBe("patched")
      const fileChanges = h.asked.filter((r) => r.kind === "fileChange")
      expect(fileChanges).toHaveLength(1)
      expect(fileChanges[0]).toMatchObject({ kind: "fileChange", changes: [{ kind: "add", diff: "hello\n" }] })
      expect(fs.readFileSync(path.join(f.workDir, "hello.txt"), "utf8")).toBe("hello\n")
      const requests = yield* f.model.requests
      expect(requests[1]!.body).toContain("Success. Updated the following files")
    })
  )
  it.scopedLive("[S28] allow-always: Codex asks again on the next turn (plain accept) and the remembered fingerprint answers it", () =>
    Effect.gen(function* () {
      const step = reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "echo hi >> log.txt" } })
      const f = yield* fixture({ replies: [step, reply.text("one"), step, reply.text("two")] }, untrusted)
      const h = yield* start(f.settings, "allowAlways")
      yield* h.harness.runTurn({ sessionId: "always", prompt: "log once" })
      yield* h.harness.runTurn({ sessionId: "always", prompt: "log again" })
      expect(h.asked).toHaveLength(1)
      expect(fs.readFileSync(path.join(f.workDir, "log.txt"), "utf8")).toBe("hi\nhi\n")
    })
  )
})
