// `codex-harness serve` on the real binary: the compiled CLI as a child process, the real app-server behind it, the
// scripted model in this process, and clients of the control API over real WebSockets and HTTP. Two clients share one
// serve (one starts a turn, the other answers its approval); a wrong or missing token, a foreign Host and a
// cross-origin WebSocket are refused; SIGTERM mid-turn ends the turn, removes the serve's files and leaves no process;
// a client that stops reading and goes away does not hold its session; one serve per state dir; a non-loopback address
// needs TLS or --insecure-remote; `run` goes through a found serve.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schedule, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
// @ts-expect-error `ws` ships no type declarations
import { WebSocket } from "ws"
import type { ControlEvent } from "../../schemas/control.js"
import * as ControlClient from "../../src/control/ControlClient.js"
import { parseLines } from "../../src/session/SessionStore.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind, tempDir } from "../support/harness.js"
import { client, request, startServe, upgradeHeaders } from "../support/serve.js"

/** the lines of a process's stderr */
const linesOf = (text: string) => text.split("\n").filter((l) => l !== "")

// Codex asks before running a command that is not known to be safe under `untrusted` (test/integration/approvals.test.ts)
const asking = ["--approval-policy", "untrusted", "--sandbox", "workspace-write"]

describe("codex-harness serve", () => {
  it.scopedLive("two clients on one serve: A starts a turn, B sees its approval, answers it, and A's turn runs the command and completes", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        replies: [
          reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "touch x.txt; echo made-x" } }),
          reply.text("made it")
        ]
      })
      const s = yield* startServe(f, asking)
      const a = yield* client(s.url, s.token)
      const b = yield* client(s.url, s.token)

      // B watches every session; it learns of the approval from the hub (or from Pending, were it late)
      const watched: Array<ControlEvent> = []
      const requested = yield* Deferred.make<Extract<ControlEvent, { type: "approval.requested" }>>()
      const watching = yield* b.Watch({}).pipe(
        Stream.runForEach((e) =>
          Effect.sync(() => watched.push(e)).pipe(Effect.zipRight(e.type === "approval.requested" ? Deferred.succeed(requested, e) : Effect.void))),
        Effect.fork
      )
      const turn = yield* a.StartTurn({ prompt: "make x.txt", approvals: "ask" }).pipe(Stream.runCollect, Effect.timeout("50 seconds"), Effect.fork)

      const asked = yield* Deferred.await(requested).pipe(Effect.timeout("120 seconds"))
      expect(asked).toMatchObject({ kind: "command", session_id: expect.any(String) })
      expect(asked.subject).toContain("touch x.txt")
      expect(asked.detail).toContain(f.workDir)
      // nothing ran yet: the command waits for the answer
      expect(fs.existsSync(path.join(f.workDir, "x.txt"))).toBe(false)
      const waiting = yield* b.Pending()
      expect(waiting.map((p) => p.id)).toEqual([asked.id])
      expect(yield* b.Health()).toMatchObject({ pending: 1, clients: 2, active_turns: [{ session_id: asked.session_id }] })

      yield* b.Answer({ id: asked.id, decision: "allow_once" })
      const events = [...(yield* Fiber.join(turn))]
      const types = events.map((e) => e.type)

      expect(events[0]).toMatchObject({ type: "session.selected", session_id: asked.session_id, created: true })
      // A's stream carries its session's approval as well, and says who answered it
      expect(events).toContainEqual(asked)
      const closed = events.find((e) => e.type === "interaction.closed")
      expect(closed).toMatchObject({ id: asked.id, outcome: "answered", by: expect.stringMatching(/^client \d+$/) })
      const decided = events.find((e) => e.type === "approval.decided")
      expect(decided).toMatchObject({ kind: "command", decision: "allow_once", by: "prompt" })
      const command = events.find((e) => e.type === "item.completed" && e.item.kind === "command")
      expect(command).toMatchObject({ item: { kind: "command", exit_code: 0, output: expect.stringContaining("made-x") } })
      expect(events.find((e) => e.type === "turn.completed")).toMatchObject({ session_id: asked.session_id, final_text: "made it" })
      expect(events).toContainEqual(expect.objectContaining({ type: "reply", session_id: asked.session_id, text: "made it" }))
      // in order: asked, answered, decided, run, completed
      const at = (type: string) => types.indexOf(type as ControlEvent["type"])
      expect(at("approval.requested")).toBeLessThan(at("interaction.closed"))
      expect(at("interaction.closed")).toBeLessThan(at("approval.decided"))
      expect(at("approval.decided")).toBeLessThan(events.indexOf(command!))
      expect(events.indexOf(command!)).toBeLessThan(at("turn.completed"))
      expect(fs.existsSync(path.join(f.workDir, "x.txt"))).toBe(true)

      // answered: nothing waits, and a second answer finds nothing
      expect(yield* b.Pending()).toEqual([])
      const again = yield* b.Answer({ id: asked.id, decision: "deny" }).pipe(Effect.flip)
      expect(again).toMatchObject({ _tag: "ControlFailure", code: "not_found" })
      // B watched the same turn: the approval, who answered it, and the turn's end
      expect(watched.map((e) => e.type)).toEqual(expect.arrayContaining(["approval.requested", "interaction.closed", "approval.decided", "turn.completed"]))
      yield* Fiber.interrupt(watching)
      expect((yield* f.model.requests)).toHaveLength(2)
      expect((yield* f.model.requests)[1]!.body).toContain("made-x")

      // stopped idle: at once, and nothing of it is left
      s.serve.child.kill("SIGTERM")
      expect(yield* s.serve.exited.pipe(Effect.timeout("120 seconds"))).toEqual({ code: 143, signal: null })
      expect(s.serve.stderr()).toContain("codex-harness serve: stopping\n")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a wrong or missing token is refused (HTTP 401, a WebSocket client's failure, `run --connect` in one line); a foreign Host gets 421, a cross-origin WebSocket 403", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const s = yield* startServe(f)
      const host = `127.0.0.1:${s.port}`
      const wrong = "0".repeat(64)
      const health = JSON.stringify({ _tag: "Request", id: "1", tag: "Health", payload: {}, headers: [] }) + "\n"
      const post = (headers: Record<string, string>) =>
        request(s.port, { method: "POST", headers: { host, "content-type": "application/x-ndjson", ...headers }, body: health })

      // the control: the right token over HTTP answers Health
      const ok = yield* post({ authorization: `Bearer ${s.token}` })
      expect(ok.status).toBe(200)
      expect(ok.body).toContain(`"pid":${s.serve.child.pid}`)
      expect((yield* post({ authorization: `Bearer ${wrong}` })).status).toBe(401)
      expect((yield* post({})).status).toBe(401)
      expect((yield* post({ authorization: `Bearer ${s.token.slice(0, 10)}` })).status).toBe(401)

      // over WebSocket: the right token works, a wrong one fails the call
      expect((yield* (yield* client(s.url, s.token)).Health()).pid).toBe(s.serve.child.pid)
      const refused = yield* (yield* client(s.url, wrong)).Health().pipe(Effect.flip, Effect.timeout("120 seconds"))
      expect(refused._tag).toBe("RpcClientError")
      const bare = yield* request(s.port, { method: "GET", headers: upgradeHeaders(s.port, { "sec-websocket-protocol": ControlClient.protocol }) })
      expect(bare.status).toBe(401)

      // the CLI with a wrong $CODEX_HARNESS_TOKEN: one line, exit 1, no stack trace, nothing reaches the model
      const other = yield* tempDir("codex-harness-state-")
      const ran = yield* runBin(["run", "--state-dir", other, "--connect", s.url, "hello"], { env: { CODEX_HARNESS_TOKEN: wrong } })
      expect(ran.code).toBe(1)
      expect(ran.stdout).toBe("")
      expect(linesOf(ran.stderr), ran.stderr).toHaveLength(1)
      expect(ran.stderr).toContain(s.url)
      expect(ran.stderr).toContain("refused the token")
      expect(ran.stderr).not.toMatch(/\n\s+at /)
      expect(ran.stderr).not.toContain(wrong)

      // a Host that is not the one served (DNS rebinding) is refused before the token is looked at
      const foreign = yield* post({ host: `evil.example:${s.port}`, authorization: `Bearer ${s.token}` })
      expect(foreign.status).toBe(421)
      // a WebSocket from another site's page is refused even with the right token; from the served origin it opens
      const protocols = `${ControlClient.protocol}, ${ControlClient.bearerProtocolPrefix}${s.token}`
      const crossOrigin = yield* request(s.port, {
        method: "GET",
        headers: upgradeHeaders(s.port, { origin: "http://evil.example", "sec-websocket-protocol": protocols })
      })
      expect(crossOrigin.status).toBe(403)
      const sameOrigin = yield* request(s.port, {
        method: "GET",
        headers: upgradeHeaders(s.port, { origin: `http://${host}`, "sec-websocket-protocol": protocols })
      })
      expect(sameOrigin.status).toBe(101)
      expect(yield* f.model.requests).toEqual([])
    }))

  it.scopedLive("SIGTERM mid-turn: after --shutdown-grace the turn is interrupted, its stream ends turn.failed interrupted, serve exits and leaves no file or process", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.steps({ type: "hang" })] })
      const s = yield* startServe(f, ["--shutdown-grace", "1"])
      const a = yield* client(s.url, s.token)
      const events: Array<ControlEvent> = []
      const turn = yield* a.StartTurn({ session: "stopped-1", prompt: "wait forever" }).pipe(
        Stream.runForEach((e) => Effect.sync(() => events.push(e))),
        Effect.exit,
        Effect.fork
      )
      // the receipt that the turn runs: the model has its request (and holds it)
      yield* f.model.waitForRequests(1).pipe(Effect.timeout("120 seconds"))
      expect((yield* a.Health()).active_turns).toEqual([{ session_id: "stopped-1", turn_id: expect.any(String) }])
      const t0 = Date.now()
      s.serve.child.kill("SIGTERM")
      const exit = yield* s.serve.exited.pipe(Effect.timeout("120 seconds"))
      const stoppedIn = Date.now() - t0
      expect(exit).toEqual({ code: 143, signal: null })
      // the grace was given, and the bound kept
      expect(stoppedIn).toBeGreaterThanOrEqual(1000)
      expect(stoppedIn).toBeLessThan(15_000)
      expect(s.serve.stderr()).toContain("codex-harness serve: stopping (1 running turn interrupted)")

      const ended = yield* Fiber.join(turn).pipe(Effect.timeout("60 seconds"))
      expect(ended._tag, JSON.stringify(ended)).toBe("Success")
      expect(events[0]).toMatchObject({ type: "session.selected", session_id: "stopped-1" })
      expect(events.at(-1)).toMatchObject({ type: "turn.failed", session_id: "stopped-1", status: "interrupted" })

      // the session says so too: its turn is recorded interrupted
      const records = parseLines(fs.readFileSync(path.join(f.stateDir, "sessions", "stopped-1.jsonl"), "utf8")).records
      expect(records.at(-1)).toMatchObject({ _tag: "turn", status: "interrupted" })

      expect(fs.existsSync(path.join(f.stateDir, "serve.json"))).toBe(false)
      expect(fs.existsSync(path.join(f.stateDir, "serve.lock"))).toBe(false)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
      console.log(`serve stopped ${stoppedIn} ms after SIGTERM (grace 1 s)`)
    }))

  it.scopedLive("a client that stops reading its turn's stream does not hold the session: once the turn ends the session is free and the next turn runs, the reader still connected", () =>
    Effect.gen(function* () {
      // 10,000 deltas: far more than a turn's stream holds (1024) for a client that reads nothing
      const f = yield* fixture({ replies: [reply.steps({ type: "message", text: "x".repeat(10_000), chunk: 1 }), reply.text("the next turn")] })
      const s = yield* startServe(f)
      const b = yield* client(s.url, s.token)
      const completed = yield* Deferred.make<void>()
      yield* b.Watch({}).pipe(
        Stream.runForEach((e) => (e.type === "turn.completed" ? Deferred.succeed(completed, undefined) : Effect.void)),
        Effect.forkScoped
      )
      // A speaks the protocol by hand and never acknowledges a chunk: the service sends one and then waits for A
      const a: {
        on(event: string, f: (...args: Array<any>) => void): void
        once(event: string, f: (...args: Array<any>) => void): void
        send(data: string): void
        terminate(): void
      } = new WebSocket(s.url, [ControlClient.protocol, `${ControlClient.bearerProtocolPrefix}${s.token}`])
      yield* Effect.addFinalizer(() => Effect.sync(() => a.terminate()))
      a.on("error", () => {})
      yield* Effect.async<void>((resume) => void a.once("open", () => resume(Effect.void))).pipe(Effect.timeout("60 seconds"))
      const firstChunk = Effect.async<string>((resume) => void a.once("message", (d: Buffer) => resume(Effect.succeed(d.toString()))))
      a.send(JSON.stringify({ _tag: "Request", id: "1", tag: "StartTurn", payload: { session: "slow-1", prompt: "talk a lot" }, headers: [] }) + "\n")
      expect(yield* firstChunk.pipe(Effect.timeout("60 seconds"))).toContain('"session.selected"')
      // the receipts that everything was published (B read it all) and that the turn itself is over (its end is in the
      // session's file, written last): A's stream is full, and the turn did not wait for it
      yield* Deferred.await(completed).pipe(Effect.timeout("120 seconds"))
      const turnEnded = Effect.sync(() => {
        const file = path.join(f.stateDir, "sessions", "slow-1.jsonl")
        return fs.existsSync(file) && parseLines(fs.readFileSync(file, "utf8")).records.some((r) => r._tag === "turn")
      })
      yield* turnEnded.pipe(Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (ended) => ended }), Effect.timeout("60 seconds"))
      // the run is the session work registry's, not A's stream's: the session is free once the turn's end is written
      // (Health, asked every 100 ms for at most 15 s), while A is still connected and reading nothing
      const released = yield* b.Health().pipe(
        Effect.repeat({ schedule: Schedule.spaced("100 millis"), until: (h) => h.active_turns.length === 0 }),
        Effect.timeout("60 seconds"),
        Effect.either
      )
      expect(released._tag, "the session stayed busy").toBe("Right")
      const next = yield* b.StartTurn({ session: "slow-1", prompt: "again" }).pipe(Stream.runCollect, Effect.timeout("120 seconds"))
      expect([...next]).toContainEqual(expect.objectContaining({ type: "message.accepted", disposition: "start" }))
      expect([...next]).toContainEqual(expect.objectContaining({ type: "turn.completed", final_text: "the next turn" }))
      a.terminate()
    }))

  it.scopedLive("[S35] a second client's message during a running turn is steered into it, as chat steers: `run` in another process prints the turn's reply", () =>
    Effect.gen(function* () {
      // the first request hangs until Codex abandons it: a steer makes Codex ask the model again, with both messages
      const f = yield* fixture({ replies: [reply.steps({ type: "hang" }), reply.text("answer with the steer")] })
      const s = yield* startServe(f)
      const a = yield* client(s.url, s.token)
      const events: Array<ControlEvent> = []
      const first = yield* a.StartTurn({ session: "steered-1", prompt: "write a long essay" }).pipe(
        Stream.runForEach((e) => Effect.sync(() => events.push(e))),
        Effect.fork
      )
      yield* f.model.waitForRequests(1).pipe(Effect.timeout("120 seconds"))
      // B: another process, the same session, through the serve
      const b = yield* runBin(["run", "--state-dir", f.stateDir, "--session", "steered-1", "actually, keep it short"])
      expect(b, b.stderr).toMatchObject({ code: 0, stdout: "answer with the steer\n" })
      expect(b.stderr).toContain("(a turn is running in this session: steering into it)")
      yield* Fiber.join(first).pipe(Effect.timeout("120 seconds"))
      expect(events.find((e) => e.type === "message.accepted")).toMatchObject({ disposition: "start" })
      expect(events.filter((e) => e.type === "turn.completed")).toEqual([expect.objectContaining({ final_text: "answer with the steer" })])
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests[1]!.body).toContain("write a long essay")
      expect(requests[1]!.body).toContain("actually, keep it short")
      // one turn carried both messages
      const file = path.join(f.stateDir, "sessions", "steered-1.jsonl")
      const records = parseLines(fs.readFileSync(file, "utf8")).records
      expect(records.filter((r) => r._tag === "turn")).toHaveLength(1)
      expect(records.filter((r) => r._tag === "user")).toHaveLength(2)
    }))

  it.scopedLive("[S18] chat --connect with the address serve prints for its Control UI (http://HOST:PORT/): piped lines are follow-ups through the serve, one session", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("first answer"), reply.text("second answer")] })
      const s = yield* startServe(f)
      const page = `http://127.0.0.1:${s.port}/`
      const chat = yield* runBin(["chat", "--state-dir", f.stateDir, "--connect", page], { input: "first line\n/queue followup\nsecond line\n" })
      expect(chat, chat.stderr).toMatchObject({ code: 0, stdout: "first answer\nsecond answer\n" })
      // a command that needs a local harness is refused in one line, and the chat goes on
      expect(chat.stderr).toContain("/queue is not available through a serve")
      const sessionId = /^session: (\S+)$/m.exec(chat.stderr)?.[1]
      expect(sessionId).toBeDefined()
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      // the second message continued the first one's thread: its request carries the first exchange
      expect(requests[1]!.body).toContain("first line")
      expect(requests[1]!.body).toContain("first answer")
      const records = parseLines(fs.readFileSync(path.join(f.stateDir, "sessions", `${sessionId}.jsonl`), "utf8")).records
      expect(records.filter((r) => r._tag === "turn")).toHaveLength(2)
    }))

  it.scopedLive("one serve per state dir (the second says the first's pid in one line); a non-loopback --listen needs TLS or --insecure-remote", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const s = yield* startServe(f)
      const address = JSON.parse(fs.readFileSync(path.join(f.stateDir, "serve.json"), "utf8")) as { pid: number; url: string }
      expect(address).toMatchObject({ pid: s.serve.child.pid, url: s.url })

      const second = yield* runBin(["serve", "--state-dir", f.stateDir, "--cwd", f.workDir, "--provider-url", f.model.url, "--listen", "127.0.0.1:0"])
      expect(second.code).toBe(1)
      expect(linesOf(second.stderr), second.stderr).toHaveLength(1)
      expect(second.stderr).toContain(`pid ${s.serve.child.pid}`)
      // the first one is untouched
      expect(JSON.parse(fs.readFileSync(path.join(f.stateDir, "serve.json"), "utf8"))).toEqual(address)
      expect((yield* (yield* client(s.url, s.token)).Health()).pid).toBe(s.serve.child.pid)

      const g = yield* fixture()
      const open = yield* runBin(["serve", "--state-dir", g.stateDir, "--cwd", g.workDir, "--provider-url", g.model.url, "--listen", "0.0.0.0:0"])
      expect(open.code).toBe(2)
      expect(linesOf(open.stderr), open.stderr).toHaveLength(1)
      expect(open.stderr).toContain("--insecure-remote")
      expect(fs.existsSync(path.join(g.stateDir, "serve.lock"))).toBe(false)

      const insecure = yield* startServe(g, ["--insecure-remote"], "0.0.0.0:0")
      expect(insecure.url).toMatch(/^ws:\/\/0\.0\.0\.0:\d+\/rpc$/)
      const reached = yield* (yield* client(`ws://127.0.0.1:${insecure.port}/rpc`, insecure.token)).Health()
      expect(reached.state_dir).toBe(g.stateDir)
    }))

  it.scopedLive("a single serve refuses a StartTurn with a message_id as usage (it keeps no record of message ids, so a key sent again would run again) and asks the model nothing", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("never")] })
      const s = yield* startServe(f)
      const c = yield* client(s.url, s.token)
      const refused = yield* Effect.flip(c.StartTurn({ session: "keyed-1", prompt: "once only", message_id: "m-1" }).pipe(
        Stream.runCollect,
        Effect.timeout("60 seconds")
      ))
      expect(refused).toMatchObject({ _tag: "ControlFailure", code: "usage" })
      expect((refused as { message: string }).message).toMatch(/^message_id needs a cluster serve/)
      expect(yield* f.model.requests).toHaveLength(0)
    }))

  it.scopedLive("run finds the serve through serve.json and prints its reply; --connect with runtime flags, and --approvals ask without a serve, are usage errors", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("through the serve")] })
      const s = yield* startServe(f)
      const ran = yield* runBin(["run", "--state-dir", f.stateDir, "hello serve"])
      expect(ran, ran.stderr).toMatchObject({ code: 0, stdout: "through the serve\n" })
      expect(ran.stderr).toMatch(/^session: \S+\n$/)
      const requests = yield* f.model.requests
      expect(requests).toHaveLength(1)
      expect(requests[0]!.body).toContain("hello serve")

      const flagged = yield* runBin(["run", "--connect", s.url, "--provider-url", f.model.url, "hello"])
      expect(flagged).toMatchObject({ code: 2, stdout: "" })
      expect(linesOf(flagged.stderr), flagged.stderr).toHaveLength(1)
      expect(flagged.stderr).toContain("--provider-url")

      const alone = yield* tempDir("codex-harness-state-")
      const ask = yield* runBin(["run", "--state-dir", alone, "--approvals", "ask", "hello"])
      expect(ask).toMatchObject({ code: 2, stdout: "" })
      expect(linesOf(ask.stderr), ask.stderr).toHaveLength(1)
      expect(ask.stderr).toContain("--approvals ask")
      expect(yield* f.model.requests).toHaveLength(1)
    }))
})
