// A session's recorded runtime against the in-memory app-server (S12, S13, S15, S37): a session continues in the
// runtime it was made on whatever settings a later call brings (with one notice when they were left unset), is never
// rebound to another provider or CODEX_HOME, and a supervised chat fails closed when its thread is gone or its home
// drifted. Refusals come before anything is recorded or sent.
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as Test from "../../layers/internal/Test.js"
import { Compaction } from "../../src/compaction/Compaction.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { RuntimeMismatch, SupervisedBindingDrift, SupervisedThreadGone } from "../../src/session/errors.js"
import * as Runtimes from "../../src/session/Runtimes.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { MockAppServer } from "../../src/testing/MockAppServer.js"
import { RecordingDelivery } from "../../src/testing/RecordingDelivery.js"

const recordsOf = (sessionId: string) =>
  Effect.flatMap(SessionStore, (store) => store.read(sessionId)).pipe(Effect.map((c) => c.records))

/** the test composition with these settings, and $CODEX_HOME (the user's own home) pinned through Config */
const harnessWith = (settings: Partial<HarnessSettings>) =>
  Test.layer({ settings: { codexHome: undefined, ...settings } }).pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["CODEX_HOME", "/mock/user-home"]]))))
  )

/** a session bound to a thread the mock server knows, made on `runtime` */
const boundOn = (sessionId: string, runtime: ReturnType<typeof Runtimes.runtimeFor>) =>
  Effect.gen(function* () {
    const harness = yield* CodexHarness
    const store = yield* SessionStore
    const seed = yield* harness.runTurn({ sessionId: `${sessionId}-seed`, prompt: "make a thread" })
    yield* store.append(sessionId, { _tag: "binding", at: "t", threadId: seed.threadId, model: "m", modelProvider: "p", runtime })
    return seed.threadId
  })

const recorded = {
  transport: "stdio" as const,
  codexHome: "/mock/state/codex-home",
  providerUrl: "http://127.0.0.1:8080/v1",
  poolKey: Runtimes.ordinaryPoolKey("/mock/state/codex-home", "http://127.0.0.1:8080/v1"),
  locked: false
}

describe("session runtimes", () => {
  it.scoped("[S12] settings that leave the provider and CODEX_HOME unset follow the recorded runtime, with one notice per session", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const delivery = yield* RecordingDelivery
      const threadId = yield* boundOn("kept", recorded)
      const first = yield* harness.runTurn({ sessionId: "kept", prompt: "again" })
      yield* harness.runTurn({ sessionId: "kept", prompt: "and again" })
      expect(first.threadId).toBe(threadId)
      // the recorded runtime's own client: its CODEX_HOME and provider, not the settings' (the agent's home, no provider)
      const resume = (yield* mock.requests("thread/resume"))[0]!
      const peer = (yield* mock.peers).find((p) => p.index === resume.peer)!
      expect(peer.options.codexHome).toBe("/mock/state/codex-home")
      expect(peer.options.args?.join(" ")).toContain("http://127.0.0.1:8080/v1")
      expect((yield* mock.peers)[0]!.options).toMatchObject({ codexHome: "/mock/state/codex-home" })
      expect((yield* mock.peers)[0]!.options.args?.join(" ")).not.toContain("http://127.0.0.1:8080/v1")
      const notices = (yield* delivery.replies).filter((r) => r.source === "notice")
      expect(notices).toEqual([
        {
          sessionId: "kept",
          text: "session kept continues where it was made: provider http://127.0.0.1:8080/v1, CODEX_HOME /mock/state/codex-home",
          media: [],
          source: "notice"
        }
      ])
      expect((yield* recordsOf("kept")).filter((r) => r._tag === "binding")).toHaveLength(1)
    }).pipe(Effect.provide(harnessWith({}))))

  it.scoped("[S12] another provider, or another explicit CODEX_HOME, is refused before anything is recorded or sent", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* boundOn("kept", recorded)
      const before = yield* recordsOf("kept")
      const sent = (yield* mock.requests()).length
      const refused = yield* harness.runTurn({ sessionId: "kept", prompt: "hello" }).pipe(Effect.flip)
      expect(refused).toBeInstanceOf(RuntimeMismatch)
      expect(refused.message).toBe(
        "session kept was made on provider http://127.0.0.1:8080/v1, not http://127.0.0.1:9999/v1; " +
          "a session never moves: leave the provider setting out to continue it there, or start a new session"
      )
      expect(yield* recordsOf("kept")).toEqual(before)
      expect(yield* mock.requests()).toHaveLength(sent)
    }).pipe(Effect.provide(harnessWith({ providerUrl: "http://127.0.0.1:9999/v1" }))))

  it.scoped("[S12] a CODEX_HOME set to another than the recorded one is refused, naming both", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      yield* boundOn("kept", { ...recorded, providerUrl: undefined, poolKey: Runtimes.ordinaryPoolKey("/mock/elsewhere", undefined), codexHome: "/mock/elsewhere" })
      const refused = yield* harness.runTurn({ sessionId: "kept", prompt: "hello" }).pipe(Effect.flip)
      expect(refused).toMatchObject({ _tag: "RuntimeMismatch", what: "CODEX_HOME", recorded: "/mock/elsewhere", requested: "/mock/explicit-home" })
    }).pipe(Effect.provide(harnessWith({ codexHome: "/mock/explicit-home" }))))

  it.scoped("[S14] a new session runs in the agent's own CODEX_HOME by default, though $CODEX_HOME names the user's", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      const outcome = yield* (yield* CodexHarness).runTurn({ sessionId: "agent", prompt: "hi" })
      expect((yield* mock.peers).map((p) => p.options.codexHome)).toEqual(["/mock/state/codex-home"])
      const binding = (yield* recordsOf("agent")).find((r) => r._tag === "binding")
      expect(binding).toMatchObject({ threadId: outcome.threadId, runtime: { codexHome: "/mock/state/codex-home" } })
    }).pipe(Effect.provide(harnessWith({}))))

  it.scoped("[S14] userCodexHome opts a new session into the user's own CODEX_HOME; a session made elsewhere is refused under it", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      yield* harness.runTurn({ sessionId: "mine", prompt: "hi" })
      expect((yield* mock.peers).map((p) => p.options.codexHome)).toEqual(["/mock/user-home"])
      expect((yield* recordsOf("mine")).find((r) => r._tag === "binding")).toMatchObject({ runtime: { codexHome: "/mock/user-home" } })
      // the opt-in is a request: it never moves a session made in the agent's home into the user's
      const agentHome = Runtimes.agentCodexHome("/mock/state")
      yield* boundOn("agent", { ...recorded, providerUrl: undefined, codexHome: agentHome, poolKey: Runtimes.ordinaryPoolKey(agentHome, undefined) })
      const refused = yield* harness.runTurn({ sessionId: "agent", prompt: "hello" }).pipe(Effect.flip)
      expect(refused).toMatchObject({ _tag: "RuntimeMismatch", what: "CODEX_HOME", recorded: agentHome, requested: "/mock/user-home" })
    }).pipe(Effect.provide(harnessWith({ userCodexHome: true }))))

  it.scoped("[S14] a session made in the user's home before keeps it under the agent-scoped default, with one notice", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const delivery = yield* RecordingDelivery
      const userHome = { ...recorded, providerUrl: undefined, codexHome: "/mock/user-home", poolKey: Runtimes.ordinaryPoolKey("/mock/user-home", undefined) }
      const threadId = yield* boundOn("old", userHome)
      const outcome = yield* harness.runTurn({ sessionId: "old", prompt: "again" })
      expect(outcome.threadId).toBe(threadId)
      const resume = (yield* mock.requests("thread/resume"))[0]!
      expect((yield* mock.peers).find((p) => p.index === resume.peer)!.options.codexHome).toBe("/mock/user-home")
      expect((yield* delivery.replies).filter((r) => r.source === "notice").map((r) => r.text)).toEqual([
        "session old continues where it was made: provider Codex's own provider configuration, CODEX_HOME /mock/user-home"
      ])
    }).pipe(Effect.provide(harnessWith({}))))

  it.scoped("[S15] a supervised chat whose binding was detached (its thread archived) fails closed: no fresh thread, nothing recorded", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const store = yield* SessionStore
      const mock = yield* MockAppServer
      const runtime = Runtimes.supervisedRuntime("sup", "/mock/supervision-home", undefined)
      const threadId = yield* boundOn("sup", runtime)
      yield* store.append("sup", { _tag: "detached", at: "t", threadId, reason: "archived" })
      const before = yield* recordsOf("sup")
      const starts = (yield* mock.requests("thread/start")).length
      const refused = yield* harness.runTurn({ sessionId: "sup", prompt: "still there?" }).pipe(Effect.flip)
      expect(refused).toBeInstanceOf(SupervisedThreadGone)
      expect(refused.message).toContain(`session sup is a supervised chat whose native thread ${threadId} is gone (detached: archived)`)
      expect(yield* recordsOf("sup")).toEqual(before)
      expect(yield* mock.requests("thread/start")).toHaveLength(starts)
    }).pipe(Effect.provide(harnessWith({ supervision: { enabled: true, codexHome: "/mock/supervision-home" } }))))

  it.scoped("[S15] a supervised chat whose thread is gone in its own home fails closed instead of starting a fresh one", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const threadId = yield* boundOn("sup", Runtimes.supervisedRuntime("sup", "/mock/supervision-home", undefined))
      yield* mock.forgetThread(threadId)
      const starts = (yield* mock.requests("thread/start")).length
      const refused = yield* harness.runTurn({ sessionId: "sup", prompt: "still there?" }).pipe(Effect.flip)
      expect(refused).toMatchObject({ _tag: "SupervisedThreadGone", threadId })
      expect(yield* mock.requests("thread/start")).toHaveLength(starts)
    }).pipe(Effect.provide(harnessWith({ supervision: { enabled: true, codexHome: "/mock/supervision-home" } }))))

  it.scoped("[S15] a supervised chat keeps the provider it was branched with: left unset it follows the record, another one is refused", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      const mock = yield* MockAppServer
      const runtime = Runtimes.supervisedRuntime("sup", "/mock/supervision-home", "http://127.0.0.1:8080/v1")
      yield* boundOn("sup", runtime)
      yield* harness.runTurn({ sessionId: "sup", prompt: "go on" })
      const resume = (yield* mock.requests("thread/resume"))[0]!
      const peer = (yield* mock.peers).find((p) => p.index === resume.peer)!
      expect(peer.options.codexHome).toBe("/mock/supervision-home")
      expect(peer.options.args?.join(" ")).toContain("http://127.0.0.1:8080/v1")
    }).pipe(Effect.provide(harnessWith({ supervision: { enabled: true, codexHome: "/mock/supervision-home" } }))))

  it.scoped("[S15] a supervised chat branched with one provider refuses settings that name another", () =>
    Effect.gen(function* () {
      const harness = yield* CodexHarness
      yield* boundOn("sup", Runtimes.supervisedRuntime("sup", "/mock/supervision-home", "http://127.0.0.1:8080/v1"))
      const refused = yield* harness.runTurn({ sessionId: "sup", prompt: "go on" }).pipe(Effect.flip)
      expect(refused).toMatchObject({ _tag: "RuntimeMismatch", what: "provider", requested: "http://127.0.0.1:9999/v1" })
    }).pipe(
      Effect.provide(
        harnessWith({ supervision: { enabled: true, codexHome: "/mock/supervision-home", providerUrl: "http://127.0.0.1:9999/v1" } })
      )
    ))

  it.scoped("[S37][S15] compaction of a supervised chat whose supervision home drifted is refused without leasing a client", () =>
    Effect.gen(function* () {
      const mock = yield* MockAppServer
      yield* boundOn("sup", Runtimes.supervisedRuntime("sup", "/mock/old-supervision-home", undefined))
      const spawned = yield* mock.spawnCount
      const refused = yield* Effect.flatMap(Compaction, (c) => c.compact("sup")).pipe(Effect.flip)
      expect(refused).toBeInstanceOf(SupervisedBindingDrift)
      expect(refused.message).toContain("made under CODEX_HOME /mock/old-supervision-home, supervision now uses /mock/supervision-home")
      expect(yield* mock.spawnCount).toBe(spawned)
    }).pipe(Effect.provide(harnessWith({ supervision: { enabled: true, codexHome: "/mock/supervision-home" } }))))
})
