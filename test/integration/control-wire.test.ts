// ControlWire (the control API's protocol without Effect, which the Control UI and the CLI's --connect client use)
// against a real `codex-harness serve` and the real app-server behind it: calls and their answers, a turn's stream
// taken chunk by chunk (each one acknowledged, or the serve would send no more), the API's refusals as ControlFailure,
// a refused token and a socket the serve closes as `Lost`, and the next call opening the connection again.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
// @ts-expect-error `ws` ships no type declarations
import { WebSocket } from "ws"
import type { ControlEvent } from "../../schemas/control.js"
import * as ControlWire from "../../src/control/ControlWire.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { fixture, leftBehind } from "../support/harness.js"
import { type Served, startServe } from "../support/serve.js"

const open: ControlWire.OpenSocket = (url, protocols) => new WebSocket(url, protocols) as ControlWire.SocketLike

/** a wire for the scope: closed when it ends */
const wireTo = (url: string, token: string) =>
  Effect.acquireRelease(Effect.sync(() => ControlWire.make({ url, token, open })), (w) => Effect.sync(() => w.close()))

const call = <A>(promise: () => Promise<A>) => Effect.promise(promise).pipe(Effect.timeout("60 seconds"))

/** a whole stream: its items and how it ended */
const collect = <T extends ControlWire.StreamTag>(wire: ControlWire.Wire, tag: T, payload: ControlWire.PayloadOf<T>) =>
  call(() =>
    new Promise<{ readonly items: ReadonlyArray<ControlWire.ItemOf<T>>; readonly failure: ControlWire.WireFailure | undefined }>((resolve) => {
      const items: Array<ControlWire.ItemOf<T>> = []
      wire.stream(tag, payload, { item: (item) => items.push(item), end: (failure) => resolve({ items, failure }) })
    })
  )

/** SIGTERM, and its exit (with its app-servers) awaited */
const stopped = (s: Served) =>
  Effect.gen(function* () {
    s.serve.child.kill("SIGTERM")
    expect(yield* s.serve.exited.pipe(Effect.timeout("120 seconds"))).toEqual({ code: 143, signal: null })
  })

describe("ControlWire on a real serve", () => {
  it.scopedLive("calls answer; a turn streams to its end chunk by chunk; refusals are ControlFailure with their code", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("first wired reply"), reply.text("second wired reply")] })
      const s = yield* startServe(f)
      const wire = yield* wireTo(s.url, s.token)

      const health = yield* call(() => wire.call("Health"))
      expect(health.ok && health.value.pid).toBe(s.serve.child.pid)

      const first = yield* collect(wire, "StartTurn", { session: "wired", prompt: "hello" })
      expect(first.failure).toBeUndefined()
      const types = first.items.map((e: ControlEvent) => e.type)
      expect(types[0]).toBe("session.selected")
      expect(types).toContain("turn.started")
      // more events than one chunk: the serve sent the next ones only because each chunk was acknowledged
      expect(types.length).toBeGreaterThan(3)
      expect(first.items.find((e: ControlEvent) => e.type === "turn.completed")).toMatchObject({ final_text: "first wired reply" })
      // a second turn on the same connection and session
      const second = yield* collect(wire, "StartTurn", { session: "wired", prompt: "again" })
      expect(second.items.find((e: ControlEvent) => e.type === "turn.completed")).toMatchObject({ final_text: "second wired reply" })

      const shown = yield* call(() => wire.call("ShowSession", { session: "wired" }))
      expect(shown.ok && shown.value.session_id).toBe("wired")
      const missing = yield* call(() => wire.call("ShowSession", { session: "no-such-session" }))
      expect(missing).toMatchObject({ ok: false, failure: { _tag: "ControlFailure", code: "not_found" } })
      // a payload the serve's schema refuses is the serve's defect for that call, not the connection's end
      const refused = yield* call(() => wire.call("Interrupt", { session: "" }))
      expect(refused.ok).toBe(false)
      expect((yield* call(() => wire.call("Health"))).ok).toBe(true)
      yield* stopped(s)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a wrong token: every call fails Lost, saying 401; a message past the serve's bound: Lost with 1009, and the next call connects again", () =>
    Effect.gen(function* () {
      const f = yield* fixture()
      const s = yield* startServe(f, ["--max-request-bytes", "65536"])
      const wrong = yield* wireTo(s.url, "not-the-token")
      const refused = yield* call(() => wrong.call("Health"))
      expect(refused.ok).toBe(false)
      expect(!refused.ok && refused.failure._tag).toBe("Lost")
      expect(!refused.ok && refused.failure.message).toMatch(/401/)

      const wire = yield* wireTo(s.url, s.token)
      expect((yield* call(() => wire.call("Health"))).ok).toBe(true)
      const tooBig = yield* collect(wire, "StartTurn", { session: "big", prompt: "x".repeat(70_000) })
      expect(tooBig.items).toEqual([])
      expect(tooBig.failure).toMatchObject({ _tag: "Lost", closeCode: 1009 })
      // the connection is gone; the next call opens a new one
      const again = yield* call(() => wire.call("Health"))
      expect(again.ok && again.value.pid).toBe(s.serve.child.pid)
      yield* stopped(s)
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))
})

describe("ControlWire's reading of an encoded failure", () => {
  it("the first Fail or Die of a cause, ControlFailure kept with its code", () => {
    const control = { _tag: "Fail", error: { _tag: "ControlFailure", code: "busy", message: "a turn runs" } }
    expect(ControlWire.failureOfCause(control)).toEqual({ _tag: "ControlFailure", code: "busy", message: "a turn runs" })
    expect(ControlWire.failureOfCause({ _tag: "Sequential", left: { _tag: "Empty" }, right: control })).toMatchObject({ code: "busy" })
    expect(ControlWire.failureOfCause({ _tag: "Die", defect: { name: "Error", message: "boom" } })).toEqual({ _tag: "Defect", message: "boom" })
    expect(ControlWire.failureOfCause({ _tag: "Die", defect: "plain" })).toEqual({ _tag: "Defect", message: "plain" })
    expect(ControlWire.failureOfCause({ _tag: "Interrupt", fiberId: {} })._tag).toBe("Interrupted")
    expect(ControlWire.failureText({ _tag: "ControlFailure", code: "not_found", message: "no session x" })).toBe("not_found: no session x")
  })
})
