// A message steered into a turn that is already ending, on the real app-server: after the model's last answer Codex runs
// the turn's Stop hook before it ends the turn, and turn/steer still finds the turn active there. Codex 0.171 takes the
// input and asks the model again in the same turn, so the message is answered, in that turn (a guard for the harness's
// reading of it: the steered message shares the turn's result, and nothing of it is lost). The Stop hook is held by the
// hook policy (a receipt, not a clock) while the message is steered.
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer } from "effect"
import * as Live from "../../layers/internal/Live.js"
import * as HookRelay from "../../src/approvals/HookRelay.js"
import { SessionWork, layer as workLayer } from "../../src/harness/SessionWork.js"
import type { StopVerdict } from "../../src/ports/HookPolicy.js"
import { SessionStore } from "../../src/session/SessionStore.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { lastUserText } from "../support/cluster.js"
import { fixture, leftBehind } from "../support/harness.js"

describe("a message steered while the turn's Stop hook runs (real app-server)", () => {
  it.scopedLive("is taken by that turn and answered by the model in it (Codex 0.171 asks the model again after the Stop hook)", () =>
    Effect.gen(function* () {
      const f = yield* fixture({
        replies: [reply.text("the first answer")],
        rules: [{ whenRequestIncludes: `steered at the end"}]}]`, reply: reply.text("the answer to the steer") }]
      })
      // the Stop hook of the first turn waits until the test lets it go; later ones do not
      const stopping = yield* Deferred.make<void>()
      const letGo = yield* Deferred.make<void>()
      let stops = 0
      const policy: HookRelay.HookPolicyService = {
        stop: () =>
          stops++ === 0
            ? Deferred.succeed(stopping, undefined).pipe(Effect.zipRight(Deferred.await(letGo)), Effect.as<StopVerdict>({ _tag: "Stop" }))
            : Effect.succeed<StopVerdict>({ _tag: "Stop" })
      }
      yield* Effect.scoped(Effect.gen(function* () {
        const live = Live.layer({ ...f.settings, nativeHookEvents: ["stop"] }).pipe(
          Layer.provide(Layer.succeed(HookRelay.HookPolicy, policy)),
          Layer.provideMerge(RecordingDelivery.layer)
        )
        const context = yield* Layer.build(live)
        const work = Context.get(yield* Layer.build(workLayer()).pipe(Effect.provide(context)), SessionWork)
        const store = Context.get(context, SessionStore)

        const first = yield* work.submit("end1", "first please answer")
        // the model has answered the first message and Codex runs the turn's Stop hook: the turn is ending
        yield* Deferred.await(stopping)
        const late = yield* work.submit("end1", "steered at the end")
        expect(late.disposition).toBe("steer")
        // turn/steer was accepted while the Stop hook still waits
        const carried = yield* late.carried
        expect(carried._tag).toBe("Steered")
        yield* Deferred.succeed(letGo, undefined)

        const one = yield* first.reply
        const two = yield* late.reply
        yield* work.idle("end1")
        expect(two.turnId).toBe(one.turnId)
        expect(two.finalText).toBe("the answer to the steer")
        // the model was asked again, with the steered message as its latest input
        const asked = (yield* f.model.requests).map((r) => lastUserText(r.json))
        expect(asked).toEqual(["first please answer", "steered at the end"])
        const records = (yield* store.read("end1")).records as ReadonlyArray<{ _tag: string; text?: string; status?: string }>
        expect(records.filter((r) => ["user", "assistant", "turn"].includes(r._tag)).map((r) => `${r._tag}: ${r.text ?? r.status}`)).toEqual([
          "user: first please answer",
          "user: steered at the end",
          "assistant: the answer to the steer",
          "turn: completed"
        ])
      }))
      // the layers' app-server and the hook relay went with their scope
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 120_000)
})
