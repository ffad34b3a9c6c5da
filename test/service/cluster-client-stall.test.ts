// ClusterClient's send again beside a silent Turn stream (src/cluster/ClusterClient.ts, `stallResend`), on
// @effect/cluster's in-memory cluster with a Session entity that plays two runners' parts:
// - a stream that stalls after `session.selected` (a reply dropped because the shard left its runner, as the chaos
//   test saw) still ends: the message is sent again, the entity's second delivery replays the outcome, and the client
//   gets it once;
// - a stream that is only quiet keeps its own events: when the turn then ends on it and the send again replays the
//   same outcome, each reply and the end still pass once, whichever of the two comes first.
import type { Sharding } from "@effect/cluster/Sharding"
import * as TestRunner from "@effect/cluster/TestRunner"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Layer, Ref, Stream } from "effect"
import type { ControlEvent } from "../../schemas/control.js"
import { eventsVersion } from "../../schemas/events.js"
import * as ClusterClient from "../../src/cluster/ClusterClient.js"
import { Session } from "../../src/cluster/SessionEntity.js"

const selected: ControlEvent = { type: "session.selected", version: eventsVersion, session_id: "s1", created: false }
const reply: ControlEvent = { type: "reply", version: eventsVersion, session_id: "s1", source: "final", text: "done", media: [] }
const completed: ControlEvent = {
  type: "turn.completed", version: eventsVersion, session_id: "s1", thread_id: "t1", turn_id: "u1", final_text: "done", usage: null
}

/** the entity: its Turn handler gets the delivery's number (1, 2, ...) */
const entity = (turn: (delivery: number) => Stream.Stream<ControlEvent>) =>
  Layer.unwrapEffect(Effect.map(Ref.make(0), (count) =>
    Session.toLayer(Effect.succeed(Session.of({
      Turn: () => Stream.unwrap(Effect.map(Ref.updateAndGet(count, (n) => n + 1), turn)),
      Steer: () => Effect.die("not used"),
      Interrupt: () => Effect.die("not used"),
      Answer: () => Effect.die("not used"),
      Compact: () => Effect.die("not used"),
      Watch: () => Effect.die("not used")
    })), { concurrency: "unbounded" })
  ))

const turnThrough = (layer: Layer.Layer<Sharding>) =>
  Effect.gen(function* () {
    const client = yield* ClusterClient.make({ stallResend: "300 millis" })
    const events = yield* Stream.runCollect(client.startTurn({ sessionId: "s1", prompt: "hi", messageId: "m1" })).pipe(
      Effect.timeout("20 seconds")
    )
    return Chunk.toReadonlyArray(events).map((e) => e.type === "reply" ? `reply:${e.text}` : e.type)
  }).pipe(Effect.provide(layer))

describe("a cluster client's silent Turn stream", () => {
  it.live("a stream that stalls after session.selected gets its outcome from the message sent again, once", () =>
    Effect.gen(function* () {
      const deliveries = yield* Ref.make<Array<number>>([])
      const layer = entity((n) => {
        const note = Stream.drain(Stream.fromEffect(Ref.update(deliveries, (xs) => [...xs, n])))
        // the first delivery's reply never arrives; the second replays the recorded outcome
        return Stream.concat(note, n === 1 ? Stream.concat(Stream.make(selected), Stream.never) : Stream.make(selected, reply, completed))
      }).pipe(Layer.provideMerge(TestRunner.layer))
      expect(yield* turnThrough(layer)).toEqual(["session.selected", "reply:done", "turn.completed"])
      expect(yield* Ref.get(deliveries)).toEqual([1, 2])
    }))

  it.live("a stream that is only quiet keeps its own end, and the replayed outcome beside it passes nothing twice", () =>
    Effect.gen(function* () {
      const resent = yield* Deferred.make<void>()
      const layer = entity((n) =>
        n === 1
          // quiet until the message was sent again, then the turn's own end
          ? Stream.concat(Stream.make(selected), Stream.concat(Stream.drain(Stream.fromEffect(Deferred.await(resent))), Stream.make(reply, completed)))
          // the owner that runs the turn: it replays the outcome once the turn has ended (here: at once)
          : Stream.concat(Stream.drain(Stream.fromEffect(Deferred.succeed(resent, undefined))), Stream.make(selected, reply, completed))
      ).pipe(Layer.provideMerge(TestRunner.layer))
      expect(yield* turnThrough(layer)).toEqual(["session.selected", "reply:done", "turn.completed"])
    }))
})
