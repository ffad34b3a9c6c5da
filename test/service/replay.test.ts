// The MockAppServer's replay mode, driven line by line through its Transport with small hand-written recordings: how
// answers find the harness's request ids, which orders of the harness's own messages are accepted, and how a replay
// says that the harness sent more, less or something else than the recording has.
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Effect, Layer, Option, Stream } from "effect"
import { Transport, type TransportHandle } from "../../src/appserver/Transport.js"
import type * as WireRecording from "../../src/appserver/WireRecording.js"
import { layer as mockAppServer, MockAppServer, type Recording } from "../../src/testing/MockAppServer.js"

const header: WireRecording.Header = { format: "codex-harness wire recording", version: 1, recordedAt: "2026-01-01T00:00:00.000Z" }

let t = 0
const harness = (message: Record<string, unknown>, conn = 1): WireRecording.Entry => ({ t: t++, conn, from: "harness", message })
const server = (message: Record<string, unknown>, conn = 1): WireRecording.Entry => ({ t: t++, conn, from: "app-server", message })

/** the mock in replay mode, and a transport spawned from it */
const replaying = (entries: ReadonlyArray<WireRecording.Entry>) =>
  Effect.gen(function* () {
    const recording: Recording = { header, entries }
    const context = yield* Layer.build(mockAppServer({ replay: { recording, roots: { cwd: "/work" } } }))
    const transport = Context.get(context, Transport)
    return { mock: Context.get(context, MockAppServer), spawn: transport.spawn({ codexHome: "/homes/codex" }) }
  })

/** the next `n` JSON lines the app-server writes */
const read = (handle: TransportHandle, n: number) =>
  Stream.take(handle.incoming, n).pipe(
    Stream.runCollect,
    Effect.map((lines) => Chunk.toArray(lines).map((l) => (l._tag === "Line" ? JSON.parse(l.text) : l)))
  )

const send = (handle: TransportHandle, message: unknown) => handle.send(JSON.stringify(message))

describe("MockAppServer replay mode", () => {
  it.scoped("answers the harness's own request ids, fills in its directories, and lets its messages between two answers come in any order", () =>
    Effect.gen(function* () {
      const { mock, spawn } = yield* replaying([
        harness({ id: 7, method: "thread/start", params: { cwd: "{{cwd}}" } }),
        server({ id: 7, result: { thread: { id: "th-1", cwd: "{{cwd}}", home: "{{codexHome}}/sessions" } } }),
        harness({ method: "note/a", params: { n: 1 } }),
        harness({ method: "note/b", params: { n: 2 } }),
        server({ method: "done", params: { at: "{{cwd}}/x" } })
      ])
      const handle = yield* spawn
      yield* send(handle, { id: 0, method: "thread/start", params: { cwd: "/work" } })
      expect(yield* read(handle, 1)).toEqual([{ id: 0, result: { thread: { id: "th-1", cwd: "/work", home: "/homes/codex/sessions" } } }])
      yield* send(handle, { method: "note/b", params: { n: 2 } })
      yield* send(handle, { method: "note/a", params: { n: 1 } })
      expect(yield* read(handle, 1)).toEqual([{ method: "done", params: { at: "/work/x" } }])
      yield* mock.verifyReplay
    }))

  it.scoped("a message where the recording has another one, or after its end, stops the replay naming both", () =>
    Effect.gen(function* () {
      const entries = [harness({ id: 0, method: "thread/start", params: {} }), server({ id: 0, result: {} })]
      const other = yield* replaying(entries)
      const first = yield* other.spawn
      yield* send(first, { id: 0, method: "thread/resume", params: {} })
      // the app-server exits with the difference on stderr, so nothing waits on an answer
      expect((yield* first.exited).exitCode).toBe(1)
      expect(yield* first.stderrTail).toBe('thread/start: method: recorded "thread/start" got "thread/resume"')
      expect(yield* Effect.flip(other.mock.verifyReplay)).toMatchObject({ method: "thread/start", path: "method" })
      // a second app-server is refused with the same words
      expect((yield* Effect.flip(other.spawn)).message).toContain('recorded "thread/start" got "thread/resume"')

      const extra = yield* replaying(entries)
      const second = yield* extra.spawn
      yield* send(second, { id: 0, method: "thread/start", params: {} })
      yield* read(second, 1)
      yield* send(second, { id: 1, method: "turn/start", params: {} })
      expect(yield* second.exited).toMatchObject({ exitCode: 1 })
      expect((yield* Effect.flip(extra.mock.verifyReplay)).message).toBe("turn/start: recorded nothing got a request")
    }))

  it.scoped("verify names what the harness never sent, and a start the recording does not have", () =>
    Effect.gen(function* () {
      const { mock, spawn } = yield* replaying([
        harness({ id: 0, method: "thread/start", params: {} }),
        server({ id: 0, result: {} }),
        harness({ id: 1, method: "turn/start", params: {} })
      ])
      const handle = yield* spawn
      yield* send(handle, { id: 0, method: "thread/start", params: {} })
      yield* read(handle, 1)
      expect((yield* Effect.flip(mock.verifyReplay)).message).toBe("turn/start: recorded a request got nothing")
      const refused = yield* Effect.flip(spawn)
      expect(refused.message).toContain("app-server #2: recorded nothing got a start")
      expect(Option.isNone(yield* Effect.option(mock.verifyReplay))).toBe(true)
    }))
})
