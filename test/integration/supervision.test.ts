// Supervision on the real app-server (S14-S17): threads made by another app-server client in a private CODEX_HOME are
// listed (archived ones hidden), continued as a model-locked branch without touching the source, and archived only
// when nothing known runs on them or their spawned descendants. The scripted model stands in for the provider.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Fiber, Layer, Schedule, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Live from "../../layers/internal/Live.js"
import * as Connection from "../../src/appserver/AppServerConnection.js"
import { ClientPool } from "../../src/appserver/ClientPool.js"
import * as CodexArgs from "../../src/appserver/CodexArgs.js"
import { NodeTransportLive, Transport } from "../../src/appserver/Transport.js"
import { Compaction } from "../../src/compaction/Compaction.js"
import { SessionWork } from "../../src/harness/SessionWork.js"
import { CodexHarness } from "../../src/harness/CodexHarness.js"
import { type HarnessSettings } from "../../src/config/Settings.js"
import { ApprovalPrompts, type ApprovalRequest } from "../../src/ports/ApprovalPrompts.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import { sessionState } from "../../src/session/SessionState.js"
import { ArchiveGuard } from "../../src/supervision/ArchiveGuard.js"
import { Branching } from "../../src/supervision/Branching.js"
import { Catalog } from "../../src/supervision/Catalog.js"
import { Discovery } from "../../src/supervision/Discovery.js"
import * as Supervision from "../../src/supervision/layer.js"
import { supervisedPoolKey, supervisionClientSpec } from "../../src/supervision/SupervisionSettings.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply, type ScriptedModelOptions } from "../../src/testing/ScriptedModel.js"
import * as TurnRunner from "../../src/turn/TurnRunner.js"
import { fixture, leftBehind, ordinaryRuntime, processesMentioning, tempDir } from "../support/harness.js"
import { runBin } from "../support/cli.js"

const cmdline = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
  } catch {
    return ""
  }
}
const appServersOf = (home: string) => processesMentioning(home).filter((pid) => cmdline(pid).includes("app-server"))

/** Polls until `check` holds (bounded); true when it did. */
/** a receipt awaited within a bound generous enough for a loaded machine (an app-server starting, a turn reaching it) */
const within = <E>(check: Effect.Effect<boolean, E>, duration: Duration.DurationInput = "60 seconds") =>
  check.pipe(
    Effect.repeat({ until: (ok) => ok, schedule: Schedule.spaced("100 millis") }),
    Effect.timeoutTo({ duration, onTimeout: () => false, onSuccess: () => true })
  )

/**
 * A fixture whose native CODEX_HOME (the supervision home) lives inside the state dir, so every process a test starts
 * is found by `leftBehind(stateDir)`. With `agentInNativeHome` the harness's own turns run in that home too.
 */
const setup = (model: ScriptedModelOptions, options: { readonly agentInNativeHome?: boolean } = {}) =>
  Effect.gen(function* () {
    const f = yield* fixture(model)
    const nativeHome = path.join(f.stateDir, "native-home")
    const settings: HarnessSettings = {
      ...f.settings,
      ...(options.agentInNativeHome === true ? { codexHome: nativeHome } : {}),
      supervision: { enabled: true, codexHome: nativeHome, providerUrl: f.model.url, model: "branch-model" }
    }
    return { ...f, nativeHome, settings }
  })

/** The harness with supervision, in a scope of its own that `stop` closes (app-servers and all). */
const start = (settings: HarnessSettings, ports: Layer.Layer<never> = Layer.empty) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      Supervision.layer.pipe(
        Layer.provideMerge(Live.layer(settings).pipe(Layer.provide(ports))),
        Layer.provideMerge(RecordingDelivery.layer)
      ),
      scope
    )
    return {
      harness: Context.get(context, CodexHarness),
      work: Context.get(context, SessionWork),
      store: Context.get(context, SessionStore),
      pool: Context.get(context, ClientPool),
      catalog: Context.get(context, Catalog),
      discovery: Context.get(context, Discovery),
      branching: Context.get(context, Branching),
      guard: Context.get(context, ArchiveGuard),
      compaction: Context.get(context, Compaction),
      stop: Scope.close(scope, Exit.void)
    }
  })

/** `-c` overrides for a Responses provider under another id than the harness's own */
const providerArgsAs = (id: string, url: string, model: string) => [
  "-c",
  `model_provider="${id}"`,
  "-c",
  `model_providers.${id}={name="${id}",base_url="${url}",wire_api="responses",env_key="${CodexArgs.providerKeyEnv}"}`,
  "-c",
  `model="${model}"`
]

/** Another app-server client (say, the Codex CLI) on the same native home, in its own scope. */
const otherClient = (home: string, url: string, model: string, providerId: string = CodexArgs.providerId) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const connection = yield* Effect.gen(function* () {
      const transport = yield* Transport
      const args = providerId === CodexArgs.providerId ? CodexArgs.providerArgs(url, model) : providerArgsAs(providerId, url, model)
      const handle = yield* transport.spawn({ codexHome: home, args, env: CodexArgs.providerEnv() })
      return yield* Connection.make(handle)
    }).pipe(Effect.provide(NodeTransportLive), Effect.provide(NodeFileSystem.layer), Scope.extend(scope), Effect.orDie)
    const settings: TurnRunner.ThreadSettings = { cwd: home, approvalPolicy: "never", sandbox: "read-only" }
    const newThread = connection
      .request("thread/start", { cwd: home, approvalPolicy: "never", sandbox: "read-only", personality: "none" })
      .pipe(Effect.map((r) => r.thread.id), Effect.orDie)
    const turn = (threadId: string, text: string) =>
      TurnRunner.runTurn(connection, threadId, [{ type: "text", text }], settings).pipe(Effect.orDie)
    return { connection, newThread, turn, stop: Scope.close(scope, Exit.void) }
  })

describe("supervision on the real app-server", () => {
  it.scopedLive("[S14] the catalog lists threads made by another app-server client and hides archived ones", () =>
    Effect.gen(function* () {
      const f = yield* setup({ fallback: reply.text("noted") })
      const other = yield* otherClient(f.nativeHome, f.model.url, "source-model")
      const kept = yield* other.newThread
      yield* other.turn(kept, "keep this thread")
      const gone = yield* other.newThread
      yield* other.turn(gone, "archive this thread")
      yield* other.connection.request("thread/archive", { threadId: gone }).pipe(Effect.orDie)

      const h = yield* start(f.settings)
      const listing = yield* h.catalog.list
      const ids = listing.rows.map((r) => r.threadId)
      expect(ids).toContain(kept)
      expect(ids).not.toContain(gone)
      expect(listing.truncated).toBe(false)
      const row = listing.rows.find((r) => r.threadId === kept)!
      expect(row).toMatchObject({ node: "local", remote: false, title: "keep this thread", model: "source-model" })
      // another process has it loaded: from here its activity is unknown, never idle
      expect(row.status).toBe("notLoaded")
      expect((yield* h.catalog.inspect(gone)).archived).toBe(true)

      yield* h.stop
      yield* other.stop
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S15][S13] a branch only records its intent; its first turn, with the real approval handlers, forks the snapshot, starts the canonical thread with the fork's pair, injects the bounded visible history and archives the fork; the source is never resumed", () =>
    Effect.gen(function* () {
      const f = yield* setup({
        replies: [
          reply.text("alpha answer"),
          reply.steps(
            { type: "reasoning", text: "SECRET_REASONING" },
            { type: "function_call", name: "exec_command", arguments: { cmd: "echo TOOL_MARKER" } }
          ),
          reply.text("beta answer"),
          reply.text("gamma answer"),
          // the chat's first turn runs a command that asks for approval
          reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch branch_marker.txt" } }),
          reply.text("branched answer"),
          reply.text("later answer")
        ]
      })
      const other = yield* otherClient(f.nativeHome, f.model.url, "source-model")
      const source = yield* other.newThread
      for (const q of ["alpha question", "beta question", "gamma question"]) yield* other.turn(source, q)
      const rollout = ((yield* other.connection.requestRaw("thread/read", { threadId: source }).pipe(Effect.orDie)) as {
        thread: { path: string }
      }).thread.path
      const before = fs.readFileSync(rollout, "utf8")
      yield* other.stop
      const requestsBefore = (yield* f.model.requests).length

      const asked: Array<ApprovalRequest> = []
      const prompts = Layer.succeed(ApprovalPrompts, { ask: (request) => Effect.sync(() => asked.push(request)).pipe(Effect.as("allowOnce" as const)) })
      const h = yield* start({ ...f.settings, approvalPolicy: "untrusted", sandbox: "workspace-write" }, prompts)
      const branched = yield* h.branching.branch(source, { sessionId: "branch-1" })
      expect(branched).toMatchObject({ sessionId: "branch-1", sourceThreadId: source })
      expect(branched.lastTurnId).toBeDefined()
      expect(branched.history.messages.map((m) => `${m.role}:${m.text}`)).toEqual([
        "user:alpha question",
        "assistant:alpha answer",
        "user:beta question",
        "assistant:beta answer",
        "user:gamma question",
        "assistant:gamma answer"
      ])
      // the intent only: no private app-server, no fork, no canonical thread, no binding, nothing asked of the model
      expect(yield* h.pool.keys).toEqual([])
      const threadsNow = [
        ...(yield* h.discovery.read("thread/list", { archived: false })).data,
        ...(yield* h.discovery.read("thread/list", { archived: true })).data
      ].map((t) => t.id)
      expect(threadsNow).toEqual([source])
      const decided = (yield* h.store.read("branch-1")).records
      expect(decided.map((r) => r._tag)).toEqual(["branch", "user", "assistant", "user", "assistant", "user", "assistant", "notice"])
      expect(decided[0]).toMatchObject({
        sourceThreadId: source,
        lastTurnId: branched.lastTurnId,
        messages: 6,
        runtime: { transport: "stdio", poolKey: supervisedPoolKey("branch-1"), codexHome: f.nativeHome, locked: true }
      })
      expect(sessionState(decided).binding).toBeUndefined()
      expect((yield* f.model.requests).length).toBe(requestsBefore)

      // the first turn: the canonical thread is made in it, on the private connection, locked to Codex's pair
      const first = yield* h.harness.runTurn({ sessionId: "branch-1", prompt: "what did we say?" })
      expect(first).toMatchObject({ status: "completed", finalText: "branched answer", model: "branch-model" })
      const canonical = first.threadId
      // the turn's real approval handlers answered for the canonical thread
      expect(asked).toHaveLength(1)
      expect(asked[0]).toMatchObject({ kind: "command", sessionId: "branch-1", threadId: canonical })
      expect(fs.existsSync(path.join(f.workDir, "branch_marker.txt"))).toBe(true)
      const firstRequest = (yield* f.model.requests)[requestsBefore]!
      expect((firstRequest.json as { model: string }).model).toBe("branch-model")
      for (const text of ["alpha question", "alpha answer", "beta answer", "gamma answer", "what did we say?"]) expect(firstRequest.body).toContain(text)
      expect(firstRequest.body).not.toContain("SECRET_REASONING")
      expect(firstRequest.body).not.toContain("TOOL_MARKER")

      const records = (yield* h.store.read("branch-1")).records
      const binding = sessionState(records).binding
      expect(binding).toMatchObject({
        threadId: canonical,
        model: "branch-model",
        modelProvider: CodexArgs.providerId,
        locked: true,
        runtime: { transport: "stdio", poolKey: supervisedPoolKey("branch-1"), codexHome: f.nativeHome, locked: true }
      })
      const probes = records.filter((r): r is Extract<typeof r, { _tag: "probe" }> => r._tag === "probe")
      expect(probes.map((p) => p.status)).toEqual(["open", "closed"])
      const probeId = probes[0]!.threadId
      // fork, binding and archive, all before the turn was recorded
      const at = (pick: (r: (typeof records)[number]) => boolean) => records.findIndex(pick)
      expect(at((r) => r._tag === "binding")).toBeGreaterThan(at((r) => r._tag === "probe"))
      expect(at((r) => r._tag === "probe" && r.status === "closed")).toBeLessThan(at((r) => r._tag === "turn"))

      // the fork was a fork of the source's snapshot, and it is archived, not merely unsubscribed
      const probeRead = (yield* h.discovery.read("thread/read", { threadId: probeId })).thread
      expect(probeRead.forkedFromId).toBe(source)
      expect((yield* h.discovery.read("thread/list", { archived: true })).data.map((t) => t.id)).toEqual([probeId])
      expect((yield* h.discovery.read("thread/list", { archived: false })).data.map((t) => t.id)).not.toContain(probeId)

      // a later turn stays on the private connection and the same thread; nothing is forked again
      const later = yield* h.harness.runTurn({ sessionId: "branch-1", prompt: "and then?" })
      expect(later).toMatchObject({ status: "completed", finalText: "later answer", threadId: canonical, model: "branch-model" })
      expect((yield* h.store.read("branch-1")).records.filter((r) => r._tag === "probe")).toHaveLength(2)
      expect(yield* h.pool.keys).toEqual([supervisedPoolKey("branch-1")])

      // the source was never resumed or written, and neither it nor the fork is loaded on the private connection
      expect(fs.readFileSync(rollout, "utf8")).toBe(before)
      const spec = yield* supervisionClientSpec(f.settings.supervision)
      const privateClient = yield* h.pool.lease(supervisedPoolKey("branch-1"), spec)
      const loaded = (yield* privateClient.requestRaw("thread/loaded/list", {})) as { data: Array<string> }
      expect(loaded.data).toContain(canonical)
      expect(loaded.data).not.toContain(source)
      expect(loaded.data).not.toContain(probeId)

      yield* h.stop
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S16] an active thread can neither be archived nor branched", () =>
    Effect.gen(function* () {
      const f = yield* setup({ rules: [{ whenRequestIncludes: "BUSY", reply: reply.steps({ type: "hang" }) }] }, { agentInNativeHome: true })
      const h = yield* start(f.settings)
      const running = yield* h.work.submit("busy", "BUSY work").pipe(Effect.flatMap((s) => s.reply), Effect.fork)
      yield* f.model.waitForRequests(1)
      const active = (yield* h.work.running).find((r) => r.sessionId === "busy")
      expect(active?.threadId).toBeDefined()
      const threadId = active!.threadId!

      const archive = yield* h.guard.archive(threadId, { confirmNoOtherRunner: true }).pipe(Effect.flip)
      expect(archive._tag).toBe("ArchiveBlocked")
      expect(archive.message).toContain("session busy is running a turn on it")
      const branch = yield* h.branching.branch(threadId).pipe(Effect.flip)
      expect(branch._tag).toBe("BranchRefused")
      expect(branch.message).toContain("session busy is running a turn on it")
      expect((yield* h.catalog.inspect(threadId)).archived).toBe(false)

      // the turn is the registry's: stopped there, and its waiter hears so
      yield* h.work.interrupt("busy")
      yield* Fiber.await(running)
      yield* h.stop
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S16] a known owner of a spawned descendant blocks the archive; without it, archive needs confirmation and then succeeds", () =>
    Effect.gen(function* () {
      const f = yield* setup(
        {
          rules: [
            { whenRequestIncludes: "CHILD BUSY", reply: reply.steps({ type: "hang" }) },
            { whenRequestIncludes: "CHILD TASK", reply: reply.text("child done") }
          ],
          replies: [reply.steps({ type: "function_call", name: "spawn_agent", namespace: "multi_agent_v1", arguments: { message: "CHILD TASK" } })],
          fallback: reply.text("parent done")
        },
        { agentInNativeHome: true }
      )
      const other = yield* otherClient(f.nativeHome, f.model.url, "source-model")
      const parent = yield* other.newThread
      yield* other.turn(parent, "please delegate")
      const h = yield* start(f.settings)
      // the spawned sub-agent shows up in the paginated descendant query
      expect(yield* within(Effect.map(h.catalog.descendants(parent), (d) => d.length === 1))).toBe(true)
      const child = (yield* h.catalog.descendants(parent))[0]!
      expect(child.parentThreadId).toBe(parent)
      yield* other.stop

      // a local chat bound to the child runs a turn on it
      yield* h.store.append("child-owner", { _tag: "binding", at: new Date().toISOString(), threadId: child.threadId })
      const running = yield* h.work.submit("child-owner", "CHILD BUSY").pipe(Effect.flatMap((s) => s.reply), Effect.fork)
      expect(yield* within(Effect.map(h.work.running, (runs) => runs.some((r) => r.sessionId === "child-owner" && r.threadId === child.threadId)))).toBe(true)
      const blocked = yield* h.guard.archive(parent, { confirmNoOtherRunner: true }).pipe(Effect.flip)
      expect(blocked._tag).toBe("ArchiveBlocked")
      expect(blocked.message).toContain(`session child-owner is running a turn on its descendant ${child.threadId}`)
      // the turn is the registry's: stopped there, and its waiter hears so
      yield* h.work.interrupt("child-owner")
      yield* Fiber.await(running)
      // the interrupted child stays loaded (a writer) in the harness's client until that client goes
      const writer = yield* h.guard.archive(parent, { confirmNoOtherRunner: true }).pipe(Effect.flip)
      expect(writer.message).toContain("another process is writing it")
      yield* h.pool.retire(ordinaryRuntime(f.settings).poolKey, "the test's runner is done")

      const unconfirmed = yield* h.guard.archive(parent).pipe(Effect.flip)
      expect(unconfirmed._tag).toBe("ArchiveBlocked")
      expect(unconfirmed.message).toContain("notLoaded (its activity is unknown)")
      expect(unconfirmed.message).toContain("--confirm-no-other-runner")
      const archived = yield* h.guard.archive(parent, { confirmNoOtherRunner: true })
      expect(archived).toMatchObject({ threadId: parent, descendantsChecked: 1 })
      expect((yield* h.catalog.list).rows.map((r) => r.threadId)).not.toContain(parent)
      expect((yield* h.catalog.inspect(parent)).archived).toBe(true)

      yield* h.stop
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S14] the catalog lists the threads of every model provider, not only the discovery connection's default", () =>
    Effect.gen(function* () {
      const f = yield* setup({ fallback: reply.text("noted") })
      const ours = yield* otherClient(f.nativeHome, f.model.url, "source-model")
      const mine = yield* ours.newThread
      yield* ours.turn(mine, "under the harness's provider id")
      yield* ours.stop
      const theirs = yield* otherClient(f.nativeHome, f.model.url, "source-model", "second_provider")
      const other = yield* theirs.newThread
      yield* theirs.turn(other, "under another provider")
      yield* theirs.stop

      const h = yield* start(f.settings)
      const rows = (yield* h.catalog.list).rows
      expect(rows.find((r) => r.threadId === mine)?.modelProvider).toBe(CodexArgs.providerId)
      expect(rows.find((r) => r.threadId === other)?.modelProvider).toBe("second_provider")
      yield* h.stop
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S37][S15] compact of a supervised chat runs on its private connection under the supervision home", () =>
    Effect.gen(function* () {
      const f = yield* setup({ fallback: reply.text("noted") })
      const other = yield* otherClient(f.nativeHome, f.model.url, "source-model")
      const source = yield* other.newThread
      yield* other.turn(source, "a source worth continuing")
      yield* other.stop
      const h = yield* start(f.settings)
      yield* h.branching.branch(source, { sessionId: "sup" })
      // a branch has a thread to compact once its first turn made it
      yield* h.harness.runTurn({ sessionId: "sup", prompt: "carry on" })
      const compacted = yield* h.compaction.compact("sup")
      expect(compacted).toMatchObject({ sessionId: "sup" })
      const requests = yield* f.model.requests
      expect(requests.at(-1)!.body).toContain("CONTEXT CHECKPOINT COMPACTION")
      // only the chat's private client was ever leased by the harness: never the ordinary one of these settings
      expect(yield* h.pool.keys).toEqual([supervisedPoolKey("sup")])
      const statuses = (yield* h.store.read("sup")).records.flatMap((r) => (r._tag === "compaction" ? [r.status] : []))
      expect(statuses).toEqual(["started", "completed"])
      yield* h.stop
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("[S14] 100 catalog polls reuse one pooled discovery app-server", () =>
    Effect.gen(function* () {
      const f = yield* setup({ fallback: reply.text("noted") })
      const other = yield* otherClient(f.nativeHome, f.model.url, "source-model")
      const thread = yield* other.newThread
      yield* other.turn(thread, "poll me")
      yield* other.stop
      expect(appServersOf(f.nativeHome)).toEqual([])

      const h = yield* start(f.settings)
      let most = 0
      const pids = new Set<number | undefined>()
      for (let i = 0; i < 100; i++) {
        const listing = yield* h.catalog.list
        expect(listing.rows.map((r) => r.threadId)).toEqual([thread])
        pids.add(yield* h.discovery.pid)
        // the process table every tenth poll: a scan of /proc costs more than a poll on a loaded machine
        if (i % 10 === 9) most = Math.max(most, appServersOf(f.nativeHome).length)
      }
      expect(most).toBe(1)
      const pid = yield* h.discovery.pid
      expect([...pids]).toEqual([pid])
      expect(appServersOf(f.nativeHome)).toEqual([pid])

      yield* h.stop
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})

/** The compiled CLI (`npm run build` first), with its exit code and both streams. */
const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => runBin(args, { env })

/** A refusal as the CLI must give it: exit 1, nothing on stdout, exactly one line on stderr. */
const expectRefusal = (ran: { readonly code: number; readonly stdout: string; readonly stderr: string }, line: string) => {
  expect(ran.code).toBe(1)
  expect(ran.stdout).toBe("")
  expect(ran.stderr).toBe(`codex-harness: ${line}\n`)
}

describe("threads and sessions CLI refusals", () => {
  it.scopedLive("[S14][S15][S16][cli] list, show, branch and archive refuse in one line on stderr with exit 1", () =>
    Effect.gen(function* () {
      const f = yield* setup({ fallback: reply.text("noted") })
      const other = yield* otherClient(f.nativeHome, f.model.url, "source-model")
      const open = yield* other.newThread
      yield* other.turn(open, "an open thread")
      const archived = yield* other.newThread
      yield* other.turn(archived, "an archived thread")
      yield* other.connection.request("thread/archive", { threadId: archived }).pipe(Effect.orDie)
      yield* other.stop
      const common = ["--state-dir", f.stateDir, "--supervision-home", f.nativeHome, "--provider-url", f.model.url]

      const listed = yield* cli(["threads", "list", ...common])
      expect(listed.code).toBe(0)
      expect(listed.stdout).toContain(open)
      expect(listed.stdout).not.toContain(archived)
      expectRefusal(
        yield* cli(["threads", "list", ...common], { CODEX_HARNESS_SUPERVISION: "off" }),
        "supervision is disabled: CODEX_HARNESS_SUPERVISION is off; unset it to supervise native threads"
      )
      const offConfig = path.join(f.stateDir, "supervision-off.json")
      fs.writeFileSync(offConfig, JSON.stringify({ supervision: { enabled: false } }))
      expectRefusal(
        yield* cli(["threads", "list", ...common, "--config", offConfig]),
        "supervision is disabled: supervision.enabled is false in the config file"
      )
      const missing = "01a22ade-0000-7000-8000-000000000000"
      expectRefusal(
        yield* cli(["threads", "show", ...common, missing]),
        `thread ${missing} is not in the catalog (thread not loaded: ${missing})`
      )
      expectRefusal(yield* cli(["threads", "branch", ...common, archived]), `cannot branch thread ${archived}: it is archived`)
      expectRefusal(
        yield* cli(["threads", "archive", ...common, open]),
        `cannot archive thread ${open}: it is notLoaded (its activity is unknown); confirm that no other runner uses it (--confirm-no-other-runner)`
      )
      const done = yield* cli(["threads", "archive", ...common, "--confirm-no-other-runner", open])
      expect(done).toMatchObject({ code: 0, stdout: `archived: ${open}\n` })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S15][cli] threads branch prints a continue-with command that works when pasted", () =>
    Effect.gen(function* () {
      const f = yield* setup({ fallback: reply.text("noted") })
      const other = yield* otherClient(f.nativeHome, f.model.url, "source-model")
      const source = yield* other.newThread
      yield* other.turn(source, "a thread to branch")
      yield* other.stop
      const common = ["--state-dir", f.stateDir, "--supervision-home", f.nativeHome, "--provider-url", f.model.url]
      const made = yield* cli(["threads", "branch", ...common, "--session", "pasted", source])
      expect(made.code).toBe(0)
      const hint = made.stdout.split("\n").find((l) => l.startsWith("continue with: "))
      expect(hint).toBeDefined()
      // the words as a shell reads them (the line quotes only what needs it; these paths and URL need nothing)
      const words = hint!.slice("continue with: ".length).split(" ")
      expect(words.slice(0, 2)).toEqual(["codex-harness", "run"])
      expect(words).toContain("--supervision-home")
      const pasted = yield* cli(words.slice(1))
      expect(pasted).toMatchObject({ code: 0, stdout: "noted\n" })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S16][cli] sessions delete refuses a supervised chat that protects its binding, and deletes a plain one", () =>
    Effect.gen(function* () {
      const state = yield* tempDir()
      const sessions = path.join(state, "sessions")
      fs.mkdirSync(sessions)
      const binding = { _tag: "binding", at: "t", threadId: "canon", locked: true, connection: "supervision:locked" }
      fs.writeFileSync(path.join(sessions, "locked.jsonl"), JSON.stringify(binding) + "\n")
      fs.writeFileSync(path.join(sessions, "plain.jsonl"), JSON.stringify({ _tag: "user", at: "t", text: "hi" }) + "\n")
      expectRefusal(
        yield* cli(["sessions", "delete", "--state-dir", state, "locked"]),
        "cannot delete session locked: it is a supervised chat protecting native thread canon; archive that thread first"
      )
      expect(fs.existsSync(path.join(sessions, "locked.jsonl"))).toBe(true)
      expect(yield* cli(["sessions", "delete", "--state-dir", state, "plain"])).toMatchObject({ code: 0, stdout: "deleted: plain\n" })
      expect(fs.existsSync(path.join(sessions, "plain.jsonl"))).toBe(false)
    }))
})
