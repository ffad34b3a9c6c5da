// A manual compaction that is the first thing to load a session's thread in an app-server process (issue 27 item 3), on
// the real binary through the compiled CLI. Codex fixes a loaded thread's developer instructions, hooks and tools from
// whatever loads it first, and rebuilds the compacted context from them; so the compaction must open the thread as a
// turn does (ThreadOpener), or the next turn's model request lacks the harness's developer instructions and no hook
// fires. Three flows, each against a control: the same turn on a session whose thread was first loaded by a turn (a
// normally resumed turn), compared on the same fields of the model request (the developer messages, the base
// instructions, the tools) and on the native hooks Codex ran for the turn (from the `--log-level debug` wire log):
//  (a) `/compact` as the first line of a `chat` on a session made by an earlier process, then a message;
//  (b) `compact --session S` in one process, then `run --session S` in a new one;
//  (c) a compaction through `serve` (`compact --connect`) before any turn in that serve, then a turn through it.
// Every value compared is present in the control (the harness's "## Replies" section, exec_command among the tools,
// the harness's PreToolUse, PostToolUse and Stop runs). The positive control, done once by putting back the bare
// `thread/resume` of Compaction.ts before ce5c657 on 0.171.0: all three fail on the developer messages (the harness's
// section is missing after the compaction), and (a) and (c) on the hooks too (none ran in that process); the tools
// were the same either way (the dynamic tools are the thread's from its start).
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type RecordedRequest, reply } from "../../src/testing/ScriptedModel.js"
import { type Ran, runBin } from "../support/cli.js"
import { type Fixture, fixture, leftBehind } from "../support/harness.js"
import { startBin } from "../support/process.js"

const COMPACTION = "CONTEXT CHECKPOINT COMPACTION"
const PROBE = "run the probe command"

const common = (f: Fixture) => ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir]

/** the compaction's own request, answered wherever it comes in the order */
const compactionRule = { whenRequestIncludes: COMPACTION, reply: reply.text("checkpoint summary") }

/** the replies of the turn that follows: one native tool call (so PreToolUse and PostToolUse run), then the answer */
const probeTurn = [
  reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "echo probe-ran" } }),
  reply.text("probe done")
]

interface InputItem {
  readonly type?: string
  readonly role?: string
  readonly content?: ReadonlyArray<{ readonly text?: string }>
}

/** What a model request carries that the thread's loading decides: the developer messages, base instructions, tools. */
const loadedFields = (request: RecordedRequest) => {
  const json = request.json as { instructions?: string; input?: ReadonlyArray<InputItem>; tools?: ReadonlyArray<Record<string, unknown>> }
  return {
    instructions: json.instructions ?? "",
    developer: (json.input ?? [])
      .filter((item) => item.type === "message" && item.role === "developer")
      .flatMap((item) => (item.content ?? []).map((c) => c.text ?? "")),
    tools: json.tools ?? []
  }
}

const toolNames = (fields: ReturnType<typeof loadedFields>) => fields.tools.map((t) => String(t.name ?? t.type))

/** the first request to the model at or after `from` that is not the compaction's: the next turn's first request */
const nextTurnRequest = (requests: ReadonlyArray<RecordedRequest>, from: number) => {
  const found = requests.slice(from).find((r) => !r.body.includes(COMPACTION))
  expect(found, "the turn after the compaction reached the model").toBeDefined()
  expect(found!.body).toContain(PROBE)
  return found!
}

/** the JSON-RPC messages in a `--log-level debug` stderr, in order: `<-` sent to the app-server, `->` received */
const wire = (stderr: string, direction: "<-" | "->") => {
  const marker = `app-server ${direction} `
  return stderr
    .split("\n")
    .filter((line) => line.includes(marker))
    .flatMap((line) => {
      try {
        return [JSON.parse(line.slice(line.indexOf(marker) + marker.length)) as { method?: string; params?: Record<string, unknown> }]
      } catch {
        return [] // shortened by the log (over 2,000 characters): never a hook notification
      }
    })
}

/** the native hooks Codex started for a thread, in order: each as "event (source)" ("sessionFlags": the harness's) */
const hooksStarted = (stderr: string, threadId: string) =>
  wire(stderr, "->")
    .filter((m) => m.method === "hook/started" && m.params?.threadId === threadId)
    .map((m) => (m.params as { run: { eventName: string; source: string } }).run)
    .map((run) => `${run.eventName} (${run.source})`)

/** the requests that load a thread or use it, in the order the process sent them (by method: a long line is shortened) */
const threadRequests = (stderr: string) =>
  stderr
    .split("\n")
    .flatMap((line) => /app-server <- \{"id":[^,]*,"method":"([^"]+)"/.exec(line)?.slice(1) ?? [])
    .filter((method) => ["thread/start", "thread/resume", "thread/compact/start", "turn/start"].includes(method))

/** the Codex thread a session is bound to, from its session file */
const threadOf = (f: Fixture, sessionId: string) => {
  const lines = fs.readFileSync(path.join(f.stateDir, "sessions", `${sessionId}.jsonl`), "utf8").split("\n").filter((l) => l !== "")
  const bindings = lines.map((l) => JSON.parse(l) as { _tag?: string; threadId?: string }).filter((r) => r._tag === "binding")
  expect(bindings.length).toBeGreaterThan(0)
  return bindings.at(-1)!.threadId!
}

const ok = (ran: Ran) => expect(ran.code, ran.stderr).toBe(0)

/** Two sessions made by earlier processes: S (compacted first) and C (the control), each with one completed turn. */
const twoSessions = (f: Fixture) =>
  Effect.gen(function* () {
    for (const session of ["s", "c"]) {
      yield* f.model.enqueue(reply.text(`hello from ${session}`))
      ok(yield* runBin(["run", ...common(f), "--session", session, `hello ${session}`]))
    }
  })

/**
 * The next turn after the compaction carries the control's developer messages, base instructions and tools, and Codex
 * ran the same hooks for it; the control's are present (the harness's own section, a tool, three hook runs).
 */
const expectSameAsControl = (
  compacted: { readonly request: RecordedRequest; readonly hooks: ReadonlyArray<string> },
  control: { readonly request: RecordedRequest; readonly hooks: ReadonlyArray<string> }
) => {
  const want = loadedFields(control.request)
  const got = loadedFields(compacted.request)
  // present in the control: the harness's developer instructions (S9: source-channel delivery), a native tool
  expect(want.developer.some((text) => text.startsWith("## Replies"))).toBe(true)
  expect(toolNames(want)).toContain("exec_command")
  // S20: the per-thread hooks the harness injects ran, not hooks.json
  expect(control.hooks).toEqual(["preToolUse (sessionFlags)", "postToolUse (sessionFlags)", "stop (sessionFlags)"])
  // and the same after the compaction (each one reported, should several differ)
  expect.soft(got.developer, "developer messages").toEqual(want.developer)
  expect.soft(got.instructions, "base instructions").toEqual(want.instructions)
  expect.soft(toolNames(got), "tool names").toEqual(toolNames(want))
  expect.soft(got.tools, "tools").toEqual(want.tools)
  expect.soft(compacted.hooks, "hooks started").toEqual(control.hooks)
}

describe("a compaction that is the first to load a thread, on the real app-server", () => {
  it.scopedLive("[S37][S9][S20] `/compact` as a chat's first line on an existing session: the next message's turn has the instructions, tools and hooks of a normally resumed turn", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ rules: [compactionRule] })
      yield* twoSessions(f)

      const from = (yield* f.model.requests).length
      yield* f.model.enqueue(...probeTurn)
      const chat = yield* runBin(["chat", "--log-level=debug", ...common(f), "--session", "s"], { input: `/compact\n${PROBE}\n` })
      ok(chat)
      expect(chat.stdout).toBe("probe done\n")
      expect(chat.stderr).toMatch(/compacted thread \S+ in \d+\.\d s/)
      // the compaction loaded the thread in this process: nothing else had
      expect(threadRequests(chat.stderr).slice(0, 2)).toEqual(["thread/resume", "thread/compact/start"])
      const requests = yield* f.model.requests
      expect(requests[from]!.body).toContain(COMPACTION)
      const compacted = { request: nextTurnRequest(requests, from + 1), hooks: hooksStarted(chat.stderr, threadOf(f, "s")) }

      const controlFrom = requests.length
      yield* f.model.enqueue(...probeTurn)
      const plain = yield* runBin(["chat", "--log-level=debug", ...common(f), "--session", "c"], { input: `${PROBE}\n` })
      ok(plain)
      expect(threadRequests(plain.stderr).slice(0, 2)).toEqual(["thread/resume", "turn/start"])
      const control = { request: nextTurnRequest(yield* f.model.requests, controlFrom), hooks: hooksStarted(plain.stderr, threadOf(f, "c")) }

      expectSameAsControl(compacted, control)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S37][S9][S20] `compact --session S` in one process, then `run --session S` in a new one: the turn has the instructions, tools and hooks of a normally resumed turn", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ rules: [compactionRule] })
      yield* twoSessions(f)

      const from = (yield* f.model.requests).length
      const compact = yield* runBin(["compact", "--log-level=debug", ...common(f), "--session", "s"])
      ok(compact)
      expect(compact.stdout).toMatch(/^compacted thread \S+ in \d+\.\d s\n$/)
      expect(threadRequests(compact.stderr)).toEqual(["thread/resume", "thread/compact/start"])
      expect((yield* f.model.requests).slice(from).map((r) => r.body.includes(COMPACTION))).toEqual([true])

      const runFrom = (yield* f.model.requests).length
      yield* f.model.enqueue(...probeTurn)
      const run = yield* runBin(["run", "--log-level=debug", ...common(f), "--session", "s", PROBE])
      ok(run)
      expect(run.stdout).toBe("probe done\n")
      const compacted = { request: nextTurnRequest(yield* f.model.requests, runFrom), hooks: hooksStarted(run.stderr, threadOf(f, "s")) }
      // the request is the compacted thread's: the summary replaced the first turn
      expect(compacted.request.body).toContain("checkpoint summary")

      const controlFrom = (yield* f.model.requests).length
      yield* f.model.enqueue(...probeTurn)
      const plain = yield* runBin(["run", "--log-level=debug", ...common(f), "--session", "c", PROBE])
      ok(plain)
      const control = { request: nextTurnRequest(yield* f.model.requests, controlFrom), hooks: hooksStarted(plain.stderr, threadOf(f, "c")) }

      expectSameAsControl(compacted, control)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)

  it.scopedLive("[S37][S9][S20] a compaction through serve before any turn in it, then a turn through the serve: the instructions, tools and hooks of a normally resumed turn", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ rules: [compactionRule] })
      yield* twoSessions(f)

      const serve = yield* startBin(["serve", "--log-level=debug", ...common(f), "--listen", "127.0.0.1:0"])
      yield* Effect.addFinalizer(() =>
        serve.child.exitCode !== null || serve.child.signalCode !== null
          ? Effect.void
          : Effect.sync(() => serve.child.kill("SIGTERM")).pipe(Effect.zipRight(serve.exited), Effect.timeout("120 seconds"), Effect.ignore)
      )
      const listening = /codex-harness serve: listening on (\S+) for /
      expect(yield* serve.waitFor(({ stderr }) => listening.test(stderr)), serve.stderr()).toBe(true)
      const url = listening.exec(serve.stderr())![1]!
      const [s, c] = [threadOf(f, "s"), threadOf(f, "c")]
      /** the receipt that the serve has seen a thread's turn end (the `run` that asked may exit before its log is read) */
      const turnCompleted = (threadId: string) =>
        serve.waitFor(({ stderr }) => wire(stderr, "->").some((m) => m.method === "turn/completed" && m.params?.threadId === threadId))

      const from = (yield* f.model.requests).length
      const compact = yield* runBin(["compact", "--state-dir", f.stateDir, "--connect", url, "--session", "s"])
      ok(compact)
      expect(compact.stdout).toMatch(/^compacted thread \S+ in \d+\.\d s\n$/)
      // the serve's first use of any thread was this compaction (its log read up to the compaction's request)
      expect(yield* serve.waitFor(({ stderr }) => threadRequests(stderr).includes("thread/compact/start"))).toBe(true)
      expect(threadRequests(serve.stderr())).toEqual(["thread/resume", "thread/compact/start"])
      expect((yield* f.model.requests).slice(from).map((r) => r.body.includes(COMPACTION))).toEqual([true])

      const runFrom = (yield* f.model.requests).length
      yield* f.model.enqueue(...probeTurn)
      const run = yield* runBin(["run", "--state-dir", f.stateDir, "--connect", url, "--session", "s", PROBE])
      ok(run)
      expect(run.stdout).toBe("probe done\n")
      expect(yield* turnCompleted(s)).toBe(true)
      const compacted = { request: nextTurnRequest(yield* f.model.requests, runFrom), hooks: hooksStarted(serve.stderr(), s) }

      // the control: the same serve, whose first use of C's thread is a turn
      const controlFrom = (yield* f.model.requests).length
      yield* f.model.enqueue(...probeTurn)
      const plain = yield* runBin(["run", "--state-dir", f.stateDir, "--connect", url, "--session", "c", PROBE])
      ok(plain)
      expect(yield* turnCompleted(c)).toBe(true)
      const control = { request: nextTurnRequest(yield* f.model.requests, controlFrom), hooks: hooksStarted(serve.stderr(), c) }

      expectSameAsControl(compacted, control)
      serve.child.kill("SIGTERM")
      expect(yield* serve.exited.pipe(Effect.timeout("120 seconds"))).toEqual({ code: 143, signal: null })
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 240_000)
})
