// The per-turn question queue (S33) on its own: one request at a time in arrival order, one owner per prompt, answers
// by the port, by plain text or by key; serverRequest/resolved by exact id; timeouts on the TestClock; the turn's end.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, FastCheck as fc, Fiber, Option, Scope, TestClock, TestContext } from "effect"
import * as QuestionQueue from "../../src/interaction/QuestionQueue.js"
import {
  answered,
  type Question,
  type QuestionPrompt,
  type QuestionReply,
  type QuestionsService
} from "../../src/ports/Questions.js"

const question = (id: string, extra: Partial<Question> = {}): Question => ({
  id,
  text: `question ${id}?`,
  kind: "text",
  options: [],
  allowOther: false,
  isSecret: false,
  required: true,
  ...extra
})

const prompt = (...questions: ReadonlyArray<Question>): Omit<QuestionPrompt, "key"> => ({
  sessionId: "s1",
  threadId: "t1",
  turnId: "u1",
  source: "requestUserInput",
  questions,
  group: { index: 0, count: 1 }
})

/** A port that records what it shows and whether the showing was withdrawn; answers only when told to. */
const recordingPort = () => {
  const shown: Array<QuestionPrompt> = []
  const withdrawn: Array<string> = []
  const pending = new Map<string, Deferred.Deferred<QuestionReply>>()
  const port: QuestionsService = {
    ask: (p) =>
      Effect.gen(function* () {
        const reply = yield* Deferred.make<QuestionReply>()
        pending.set(p.key, reply)
        shown.push(p)
        return yield* Deferred.await(reply)
      }).pipe(Effect.onInterrupt(() => Effect.sync(() => void withdrawn.push(p.key)))),
    notify: () => Effect.void
  }
  const press = (key: string, reply: QuestionReply) => Deferred.succeed(pending.get(key)!, reply)
  return { port, shown, withdrawn, press }
}

/** waits (yielding) until the queue shows a prompt whose key differs from `not` */
const frontOtherThan = (queue: QuestionQueue.QuestionQueue, not?: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 1_000; i++) {
      const current = yield* queue.current
      if (current !== undefined && current.key !== not) return current
      yield* Effect.yieldNow()
    }
    return yield* Effect.dieMessage("no prompt came to the front")
  })

describe("QuestionQueue", () => {
  it.scoped("[S33] a button on the port answers the exact prompt; the next request waits its turn", () =>
    Effect.gen(function* () {
      const { port, press, shown } = recordingPort()
      const queue = yield* QuestionQueue.make(port)
      const first = yield* queue.serve(0, (ask) => ask(prompt(question("a")))).pipe(Effect.fork)
      const second = yield* queue.serve(1, (ask) => ask(prompt(question("b")))).pipe(Effect.fork)
      const front = yield* frontOtherThan(queue)
      expect(front.questions[0]!.id).toBe("a")
      for (let i = 0; i < 100 && shown.length === 0; i++) yield* Effect.yieldNow()
      expect(shown.map((p) => p.key)).toEqual([front.key]) // the second request is not shown while the first is in front
      yield* press(front.key, answered({ a: ["yes"] }))
      expect(yield* Fiber.join(first)).toEqual(
        Option.some({ _tag: "Reply", reply: answered({ a: ["yes"] }), via: "port" })
      )
      const next = yield* frontOtherThan(queue, front.key)
      expect(next.questions[0]!.id).toBe("b")
      expect(yield* queue.offerText("typed")).toBe(true)
      expect(yield* Fiber.join(second)).toEqual(
        Option.some({ _tag: "Reply", reply: answered({ b: ["typed"] }), via: "text" })
      )
    }))

  it.scoped("[S33] the next plain-text reply answers the prompt in front (one line per question) and withdraws the shown prompt", () =>
    Effect.gen(function* () {
      const { port, withdrawn } = recordingPort()
      const queue = yield* QuestionQueue.make(port)
      const served = yield* queue
        .serve("r1", (ask) => ask(prompt(question("a"), question("b", { kind: "multi" }), question("c", { required: false }))))
        .pipe(Effect.fork)
      const front = yield* frontOtherThan(queue)
      expect(yield* queue.offerText("Ada\nred, blue\n")).toBe(true)
      expect(yield* Fiber.join(served)).toEqual(
        Option.some({ _tag: "Reply", reply: answered({ a: ["Ada"], b: ["red", "blue"], c: [] }), via: "text" })
      )
      expect(withdrawn).toEqual([front.key])
      // nothing is asked any more: a plain-text reply is not taken (the caller sends it on as a message)
      expect(yield* queue.offerText("hello")).toBe(false)
    }))

  it.scoped("[S33] serverRequest/resolved matches the JSON-RPC id exactly: integer 7 and string \"7\" are different requests", () =>
    Effect.gen(function* () {
      const { port, withdrawn } = recordingPort()
      const queue = yield* QuestionQueue.make(port)
      const stringSeven = yield* queue.serve("7", (ask) => ask(prompt(question("s")))).pipe(Effect.fork)
      const numberSeven = yield* queue.serve(7, (ask) => ask(prompt(question("n")))).pipe(Effect.fork)
      const front = yield* frontOtherThan(queue)
      expect(front.questions[0]!.id).toBe("s")
      // resolving the integer id withdraws the queued integer request, never the string one in front
      yield* queue.resolved(7)
      expect(yield* Fiber.join(numberSeven)).toEqual(Option.none())
      yield* Effect.repeatN(Effect.yieldNow(), 50)
      expect(yield* Fiber.poll(stringSeven)).toEqual(Option.none())
      expect((yield* queue.current)?.key).toBe(front.key)
      expect(withdrawn).toEqual([])
      yield* queue.resolved("7")
      expect(yield* Fiber.join(stringSeven)).toEqual(Option.none())
      expect(yield* queue.current).toBeUndefined()
    }))

  it.scoped("[S33] a timeout cancels the owner (TestClock); a late answer with its key never resolves the replacement", () =>
    Effect.gen(function* () {
      const { port, press, shown, withdrawn } = recordingPort()
      const queue = yield* QuestionQueue.make(port, { promptTimeout: "1 minute" })
      const first = yield* queue.serve(1, (ask) => ask(prompt(question("a")))).pipe(Effect.fork)
      const second = yield* queue.serve(2, (ask) => ask(prompt(question("b")))).pipe(Effect.fork)
      const old = yield* frontOtherThan(queue)
      yield* TestClock.adjust("59 seconds")
      expect((yield* queue.current)?.key).toBe(old.key)
      yield* TestClock.adjust("1 second")
      expect(yield* Fiber.join(first)).toEqual(Option.some({ _tag: "TimedOut" }))
      expect(withdrawn).toContain(old.key)
      const replacement = yield* frontOtherThan(queue, old.key)
      for (let i = 0; i < 100 && shown.length < 2; i++) yield* Effect.yieldNow()
      // the late answer to the timed-out prompt, by key and by the port's stale button: neither lands
      expect(yield* queue.answer(old.key, answered({ a: ["late"] }))).toBe(false)
      yield* press(old.key, answered({ a: ["late"] }))
      expect((yield* queue.current)?.key).toBe(replacement.key)
      expect(yield* queue.answer(replacement.key, answered({ b: ["on time"] }))).toBe(true)
      expect(yield* Fiber.join(second)).toEqual(
        Option.some({ _tag: "Reply", reply: answered({ b: ["on time"] }), via: "answer" })
      )
    }))

  it.effect("[S33] the turn's end cancels the owner in front and every waiting request, and withdraws the prompt", () =>
    Effect.gen(function* () {
      const { port, withdrawn } = recordingPort()
      const scope = yield* Scope.make()
      const queue = yield* QuestionQueue.make(port).pipe(Scope.extend(scope))
      const first = yield* queue.serve(1, (ask) => ask(prompt(question("a")))).pipe(Effect.fork)
      const second = yield* queue.serve(2, (ask) => ask(prompt(question("b")))).pipe(Effect.fork)
      const front = yield* frontOtherThan(queue)
      yield* Scope.close(scope, Exit.void)
      expect(yield* Fiber.join(first)).toEqual(Option.none())
      expect(yield* Fiber.join(second)).toEqual(Option.none())
      expect(withdrawn).toEqual([front.key])
      expect(yield* queue.offerText("too late")).toBe(false)
    }))

  it.scoped("[S33] a message is never lost to a race with serverRequest/resolved: resolved first, the text is not taken", () =>
    Effect.gen(function* () {
      const { port } = recordingPort()
      const queue = yield* QuestionQueue.make(port)
      // a request whose work does not return at once: the owner is still in front when resolved arrives
      const served = yield* queue.serve(3, (ask) => ask(prompt(question("a")))).pipe(Effect.fork)
      yield* frontOtherThan(queue)
      yield* queue.resolved(3)
      expect(yield* Fiber.join(served)).toEqual(Option.none())
      expect(yield* queue.offerText("my answer")).toBe(false)
    }))

  it("[S33] textAnswers: one question takes the whole text; several take a line each; multi splits on commas", () => {
    const p = { ...prompt(question("a")), key: "k" }
    expect(QuestionQueue.textAnswers(p, "  two\nlines  ")).toEqual({ a: ["two\nlines"] })
    const many = { ...prompt(question("a"), question("b", { kind: "multi" })), key: "k" }
    expect(QuestionQueue.textAnswers(many, "x\ny, z")).toEqual({ a: ["x"], b: ["y", "z"] })
    expect(QuestionQueue.textAnswers(many, "only one")).toEqual({ a: ["only one"], b: [] })
  })

  it("[S33] property: over random interleavings, one prompt in front at a time, in arrival order, each at most once; stale answers never land; nothing hangs", async () => {
    type Op =
      | { readonly t: "serve"; readonly id: string | number }
      | { readonly t: "answerFront" }
      | { readonly t: "answerStale" }
      | { readonly t: "text" }
      | { readonly t: "resolve"; readonly id: string | number }
      | { readonly t: "tick" }
    // few ids, as strings and integers with the same digits, so exact-id matching is exercised
    const id = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 }).map(String))
    const op: fc.Arbitrary<Op> = fc.oneof(
      id.map((i) => ({ t: "serve" as const, id: i })),
      fc.constant({ t: "answerFront" as const }),
      fc.constant({ t: "answerStale" as const }),
      fc.constant({ t: "text" as const }),
      id.map((i) => ({ t: "resolve" as const, id: i })),
      fc.constant({ t: "tick" as const })
    )
    const settle = Effect.repeatN(Effect.yieldNow(), 20)
    const run = (ops: ReadonlyArray<Op>) =>
      Effect.gen(function* () {
        const { port, shown, withdrawn } = recordingPort()
        let active = 0
        let maxActive = 0
        const counting: QuestionsService = {
          ask: (p) =>
            Effect.acquireUseRelease(
              Effect.sync(() => void (maxActive = Math.max(maxActive, ++active))),
              () => port.ask(p),
              () => Effect.sync(() => void active--)
            ),
          notify: port.notify
        }
        const scope = yield* Scope.make()
        const queue = yield* QuestionQueue.make(counting, { promptTimeout: "1 minute" }).pipe(Scope.extend(scope))
        const inFlight = new Set<string>()
        const served: Array<{ readonly name: string; readonly fiber: Fiber.RuntimeFiber<Option.Option<QuestionQueue.PromptOutcome>> }> = []
        const staleKeys: Array<string> = []
        // the raw JSON-RPC id each request was served with, by its question's name (the test's own notion of "same id")
        const idOf = new Map<string, string | number>()
        for (const o of ops) {
          switch (o.t) {
            case "serve": {
              const key = QuestionQueue.requestKey(o.id)
              if (inFlight.has(key)) break // one request per id at a time, as on the wire
              inFlight.add(key)
              // each request asks one question named after its arrival number
              const name = `q${served.length}`
              idOf.set(name, o.id)
              const fiber = yield* queue
                .serve(o.id, (ask) => ask(prompt(question(name))))
                .pipe(Effect.ensuring(Effect.sync(() => inFlight.delete(key))), Effect.fork)
              served.push({ name, fiber })
              break
            }
            case "answerFront": {
              const front = yield* queue.current
              const landed = yield* queue.answer(front?.key ?? "none", answered({}))
              expect(landed).toBe(front !== undefined)
              if (front !== undefined) staleKeys.push(front.key)
              break
            }
            case "answerStale":
              for (const key of staleKeys) expect(yield* queue.answer(key, answered({}))).toBe(false)
              break
            case "text": {
              const front = yield* queue.current
              const taken = yield* queue.offerText("typed")
              if (front === undefined) expect(taken).toBe(false)
              if (front !== undefined) staleKeys.push(front.key)
              break
            }
            case "resolve": {
              const before = yield* queue.current
              yield* queue.resolved(o.id)
              yield* settle
              // only the exact id is withdrawn: a prompt of any other request stays in front
              if (before !== undefined && idOf.get(before.questions[0]!.id) !== o.id) {
                expect((yield* queue.current)?.key).toBe(before.key)
              }
              break
            }
            case "tick":
              yield* TestClock.adjust("1 minute")
              break
          }
          yield* settle
        }
        yield* Scope.close(scope, Exit.void)
        // every request ends (none hangs), at most one prompt was ever in front, prompts came in arrival order, once each
        for (const { fiber } of served) yield* Fiber.join(fiber)
        expect(maxActive).toBeLessThanOrEqual(1)
        const shownRequests = shown.map((p) => p.questions[0]!.id)
        expect(new Set(shownRequests).size).toBe(shownRequests.length)
        const order = served.map((s) => s.name)
        let at = 0
        for (const name of shownRequests) {
          at = order.indexOf(name, at)
          expect(at).toBeGreaterThanOrEqual(0)
          at++
        }
        // whatever was shown was withdrawn by the end: nothing is left on screen
        expect(new Set(withdrawn)).toEqual(new Set(shown.map((p) => p.key)))
      })
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), (ops) =>
        Effect.runPromise(Effect.scoped(run(ops)).pipe(Effect.provide(TestContext.TestContext)))),
      { numRuns: 150 }
    )
  })
})
