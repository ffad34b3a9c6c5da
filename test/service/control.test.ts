// The pieces of `serve`'s control API that hold state, on their own and on the TestClock (no process, no socket):
// Interactions (an approval or question waits for any client's Answer, bounded by answerTimeout; a fixed policy decides
// without asking), and how Handlers reports a failure (failureOf: a tag becomes a code, a defect never a stack trace).
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Duration, Effect, Fiber, Layer, Option, Queue, TestClock, TestServices } from "effect"
import { ControlFailure, type ControlEvent } from "../../schemas/control.js"
import * as EventHub from "../../src/control/EventHub.js"
import { failureOf } from "../../src/control/Handlers.js"
import * as Interactions from "../../src/control/Interactions.js"
import type { CommandApproval, DiagnosticsApproval } from "../../src/ports/ApprovalPrompts.js"
import type { QuestionPrompt } from "../../src/ports/Questions.js"
import { AmbiguousSessionRef, NoSessions, SessionNotFound } from "../../src/session/SessionRef.js"
import { InvalidSessionId } from "../../src/session/SessionStore.js"
import { ArchiveBlocked } from "../../src/supervision/errors.js"

const command = (sessionId = "s1"): CommandApproval => ({
  kind: "command",
  sessionId,
  threadId: "t1",
  turnId: "u1",
  itemId: "i1",
  command: "touch x.txt",
  cwd: "/work"
})

const diagnostics: DiagnosticsApproval = {
  kind: "diagnostics",
  sessionId: "s1",
  destination: "OpenAI",
  sessionThread: true,
  subAgentThreads: 0,
  includeLogs: false,
  note: undefined
}

const question = (sessionId = "s1"): QuestionPrompt => ({
  key: "k1",
  sessionId,
  threadId: "t1",
  turnId: "u1",
  source: "requestUserInput",
  questions: [{ id: "q1", text: "which one?", kind: "choice", options: [{ label: "a" }, { label: "b", description: "the other" }], allowOther: false, isSecret: false, required: true }],
  group: { index: 0, count: 1 }
})

/** Interactions over a real EventHub, and a subscription that sees everything published (subscribed before anything is). */
const interactions = (answerTimeout: Duration.DurationInput = "10 seconds") =>
  Effect.gen(function* () {
    const context = yield* Layer.build(Interactions.layer({ answerTimeout }).pipe(Layer.provideMerge(EventHub.layer)))
    const subscription = yield* Context.get(context, EventHub.EventHub).subscribe
    /** the next event published: the receipt that the waiting side got this far (bounded on the real clock) */
    const next = TestServices.provideLive(Queue.take(subscription).pipe(Effect.timeout("60 seconds"))).pipe(
      Effect.map((p): ControlEvent => {
        if (p._tag !== "Event") throw new Error(`expected an event, got ${p._tag}`)
        return p.event
      })
    )
    /** what was published and not yet taken */
    const rest = Effect.map(Queue.takeAll(subscription), (ps) => [...ps].map((p) => (p._tag === "Event" ? p.event : p)))
    return { service: Context.get(context, Interactions.Interactions), next, rest }
  })

const isPending = (fiber: Fiber.Fiber<unknown, unknown>) => Effect.map(Fiber.poll(fiber), Option.isNone)

describe("Interactions", () => {
  it.scoped("an approval nobody answers is declined (noDecision) exactly when answerTimeout passes, and interaction.closed says timed_out", () =>
    Effect.gen(function* () {
      const { next, rest, service } = yield* interactions("10 seconds")
      yield* service.setPolicy("s1", "ask")
      const asking = yield* Effect.fork(service.approvals.ask(command()))
      const requested = yield* next
      expect(requested).toMatchObject({
        type: "approval.requested",
        session_id: "s1",
        kind: "command",
        subject: 'command "touch x.txt"',
        detail: expect.stringContaining("touch x.txt"),
        expires_at: 10_000
      })
      const id = (requested as { id: string }).id
      expect((yield* service.pending).map((p) => p.id)).toEqual([id])

      yield* TestClock.adjust("9999 millis")
      expect(yield* isPending(asking)).toBe(true)
      expect(yield* rest).toEqual([])
      yield* TestClock.adjust("1 millis")
      expect(yield* Fiber.join(asking)).toBe("noDecision")
      expect(yield* next).toEqual({ type: "interaction.closed", version: 1, id, session_id: "s1", outcome: "timed_out" })
      expect(yield* next).toMatchObject({ type: "approval.decided", kind: "command", decision: "no_decision", by: "prompt" })
      expect(yield* service.pending).toEqual([])
      // too late to answer
      expect(yield* Effect.flip(service.answer(id, { decision: "allow_once" }, "client 1"))).toMatchObject({ code: "not_found" })
    }))

  it.scoped("an answer before the timeout wins: the decision is the client's, it no longer waits, a second answer is not_found, no timeout follows", () =>
    Effect.gen(function* () {
      const { next, rest, service } = yield* interactions("10 seconds")
      const asking = yield* Effect.fork(service.approvals.ask(command()))
      const { id } = (yield* next) as { id: string }
      yield* TestClock.adjust("5 seconds")
      // an approval wants a decision
      expect(yield* Effect.flip(service.answer(id, { answers: { q: ["x"] } }, "client 1"))).toMatchObject({ code: "usage" })
      yield* service.answer(id, { decision: "allow_always" }, "client 7")
      // answered: Pending no longer lists it, at once (a client that reads Pending right after its Answer must not see it)
      expect(yield* service.pending).toEqual([])
      expect(yield* Effect.flip(service.answer(id, { decision: "deny" }, "client 8"))).toMatchObject({ _tag: "ControlFailure", code: "not_found" })
      expect(yield* Fiber.join(asking)).toBe("allowAlways")
      expect(yield* next).toEqual({ type: "interaction.closed", version: 1, id, session_id: "s1", outcome: "answered", by: "client 7" })
      expect(yield* next).toMatchObject({ type: "approval.decided", decision: "allow_always", by: "prompt" })
      yield* TestClock.adjust("1 minute")
      expect(yield* rest).toEqual([])
      expect(yield* Effect.flip(service.answer("approval-nothing", { decision: "deny" }, "client 1"))).toMatchObject({ code: "not_found" })
    }))

  it.scoped("a turn that stops waiting (interrupted) withdraws its approval", () =>
    Effect.gen(function* () {
      const { next, service } = yield* interactions()
      const asking = yield* Effect.fork(service.approvals.ask(command()))
      const { id } = (yield* next) as { id: string }
      yield* Fiber.interrupt(asking)
      expect(yield* next).toEqual({ type: "interaction.closed", version: 1, id, session_id: "s1", outcome: "withdrawn" })
      expect(yield* service.pending).toEqual([])
    }))

  it.scoped("a question: answered with answers, declined by a client, declined when nobody answers; a decision does not answer it", () =>
    Effect.gen(function* () {
      const { next, service } = yield* interactions("30 seconds")
      const first = yield* Effect.fork(service.questions.ask(question()))
      const asked = (yield* next) as Extract<ControlEvent, { type: "question.asked" }>
      expect(asked).toEqual({
        type: "question.asked",
        version: 1,
        id: asked.id,
        session_id: "s1",
        source: "request_user_input",
        questions: [{
          id: "q1",
          text: "which one?",
          kind: "choice",
          options: [{ label: "a" }, { label: "b", description: "the other" }],
          allow_other: false,
          is_secret: false,
          required: true
        }],
        expires_at: 30_000
      })
      expect(yield* Effect.flip(service.answer(asked.id, { decision: "allow_once" }, "client 1"))).toMatchObject({ code: "usage" })
      expect(yield* Effect.flip(service.answer(asked.id, {}, "client 1"))).toMatchObject({ code: "usage" })
      yield* service.answer(asked.id, { answers: { q1: ["b"] } }, "client 2")
      expect(yield* Fiber.join(first)).toEqual({ _tag: "Answered", answers: { q1: ["b"] } })
      expect(yield* next).toMatchObject({ type: "interaction.closed", id: asked.id, outcome: "answered", by: "client 2" })

      const second = yield* Effect.fork(service.questions.ask(question()))
      const { id } = (yield* next) as { id: string }
      yield* service.answer(id, { decline: true }, "client 3")
      expect(yield* Fiber.join(second)).toEqual({ _tag: "Declined" })
      expect(yield* next).toMatchObject({ type: "interaction.closed", id, outcome: "answered", by: "client 3" })

      const third = yield* Effect.fork(service.questions.ask(question()))
      const unanswered = (yield* next) as { id: string; expires_at: number }
      expect(unanswered.expires_at).toBe(30_000)
      yield* TestClock.adjust("30 seconds")
      expect(yield* Fiber.join(third)).toEqual({ _tag: "Declined" })
      expect(yield* next).toMatchObject({ type: "interaction.closed", id: unanswered.id, outcome: "timed_out" })
      expect(yield* service.pending).toEqual([])
    }))

  it.scoped("a fixed policy decides without asking: allow, deny; a diagnostics upload is never a client's to allow; released, the default asks", () =>
    Effect.gen(function* () {
      const { next, rest, service } = yield* interactions()
      yield* service.setPolicy("s1", "allow")
      yield* service.setPolicy("s2", "deny")
      expect(yield* service.approvals.ask(command("s1"))).toBe("allowOnce")
      expect(yield* next).toMatchObject({ type: "approval.decided", kind: "command", decision: "allow_once", by: "policy" })
      expect(yield* service.approvals.ask(command("s2"))).toBe("deny")
      expect(yield* next).toMatchObject({ type: "approval.decided", kind: "command", decision: "deny", by: "policy" })
      expect(yield* service.approvals.ask(diagnostics)).toBe("deny")
      expect(yield* next).toMatchObject({ type: "approval.decided", kind: "diagnostics", decision: "deny", by: "policy" })
      // nothing was published for a client to answer, nothing waits
      expect(yield* rest).toEqual([])
      expect(yield* service.pending).toEqual([])

      yield* service.releasePolicy("s1")
      const asking = yield* Effect.fork(service.approvals.ask(command("s1")))
      expect(yield* next).toMatchObject({ type: "approval.requested", session_id: "s1" })
      yield* Fiber.interrupt(asking)
    }))
})

describe("Handlers.failureOf", () => {
  it("maps each failure to a code and one line; an interruption and a defect are failed, never a stack", () => {
    const of = (error: unknown) => failureOf(Cause.fail(error))
    const given = new ControlFailure({ code: "busy", message: "a turn is running" })
    expect(of(given)).toBe(given)
    expect(of(new InvalidSessionId({ sessionId: "a b" }))).toMatchObject({ code: "usage" })
    expect(of(new AmbiguousSessionRef({ ref: "abcd", candidates: ["abcd1", "abcd2"], matches: 2 }))).toMatchObject({ code: "usage" })
    expect(of(new SessionNotFound({ ref: "nope", stateDir: "/state" }))).toMatchObject({ code: "not_found", message: "no session nope in /state" })
    expect(of(new NoSessions({ stateDir: "/state" }))).toMatchObject({ code: "not_found" })
    expect(of(new ArchiveBlocked({ threadId: "t1", reason: "it is active" }))).toMatchObject({ code: "refused", message: "cannot archive thread t1: it is active" })
    expect(of({ _tag: "SessionLocked", message: "held" })).toMatchObject({ code: "refused" })
    expect(of({ _tag: "ThreadNotFound", message: "gone" })).toMatchObject({ code: "not_found" })
    expect(of(new Error("first line\n  second line"))).toMatchObject({ code: "failed", message: "first line second line" })
    expect(of("plain text")).toMatchObject({ code: "failed", message: "plain text" })
    expect(failureOf(Cause.interrupt(Effect.runSync(Effect.fiberId)))).toMatchObject({ code: "failed", message: "interrupted" })
    const defect = failureOf(Cause.die(new Error("boom\n    at somewhere (file.ts:1:1)")))
    expect(defect).toMatchObject({ code: "failed" })
    expect(defect.message).toMatch(/^internal error: boom/)
    expect(defect.message).not.toContain("\n")
    expect(failureOf(Cause.fail(new Error("x".repeat(5000)))).message).toHaveLength(2000)
  })
})
