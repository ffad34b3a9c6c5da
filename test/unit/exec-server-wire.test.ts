// The exec-server wire (S26) decoded once, in src/appserver: every frame of a node link becomes a tagged value or a
// typed ExecWireError, never a throw. The frames are shaped as a real 0.171.0 exec-server and app-server exchange them
// (captured through the relay); the malformed ones are the ways a peer could break the protocol.
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { ExecWireError } from "../../src/appserver/errors.js"
import * as Wire from "../../src/appserver/ExecServerWire.js"

const fromAppServer = (m: unknown) => Wire.decodeFromAppServer(typeof m === "string" ? m : JSON.stringify(m))
const fromNode = (m: unknown) => Wire.decodeFromNode(typeof m === "string" ? m : JSON.stringify(m))
const left = <A>(e: Either.Either<A, ExecWireError>): ExecWireError => {
  if (Either.isRight(e)) throw new Error(`expected a decode error, got ${JSON.stringify(e.right)}`)
  return e.left
}
const right = <A>(e: Either.Either<A, ExecWireError>): A => {
  if (Either.isLeft(e)) throw new Error(`expected a frame, got ${e.left.message}`)
  return e.right
}

describe("[S26] exec-server wire: frames from the app-server", () => {
  it("the requests the relay polices are decoded by tag, unknown fields kept", () => {
    const init = right(fromAppServer({ id: 1, method: "initialize", params: { clientName: "codex-environment", resumeSessionId: null } }))
    expect(init).toMatchObject({ _tag: "Initialize", id: 1, params: { clientName: "codex-environment", resumeSessionId: null } })
    const start = right(fromAppServer({
      id: 16,
      method: "process/start",
      params: { processId: "p-1", argv: ["/bin/bash", "-lc", "ls"], cwd: "file:///tmp", envPolicy: { inherit: "all" } }
    }))
    expect(start._tag).toBe("ProcessStart")
    expect(start._tag === "ProcessStart" && (start.params as Record<string, unknown>).envPolicy).toEqual({ inherit: "all" })
    const http = right(fromAppServer({
      id: 5,
      method: "http/request",
      params: { method: "GET", url: "http://x/", headers: [{ name: "Accept", value: "text/plain" }], requestId: "r5" }
    }))
    expect(http).toMatchObject({ _tag: "HttpRequest", params: { headers: [{ name: "Accept", value: "text/plain" }] } })
  })

  it("what the relay only passes on stays untyped: other requests, notifications, responses", () => {
    expect(right(fromAppServer({ id: 3, method: "fs/getMetadata", params: { path: "file:///x" } }))).toMatchObject({
      _tag: "OtherRequest",
      method: "fs/getMetadata"
    })
    expect(right(fromAppServer({ method: "initialized", params: {} }))._tag).toBe("Notification")
    expect(right(fromAppServer({ id: 0, result: {} }))._tag).toBe("Response")
  })

  it("a malformed frame is a typed error that says what and, for a request, which id", () => {
    expect(left(fromAppServer("{not json"))).toMatchObject({ _tag: "ExecWireError", from: "app-server", kind: "notJson" })
    expect(left(fromAppServer([1, 2, 3])).kind).toBe("notJson")
    expect(left(fromAppServer({ foo: 1 })).kind).toBe("notMessage")
    expect(left(fromAppServer({ id: 1.5, method: "process/start", params: { processId: "p" } })).kind).toBe("notMessage")
    const badStart = left(fromAppServer({ id: 7, method: "process/start", params: { processId: 42 } }))
    expect(badStart).toMatchObject({ kind: "params", method: "process/start", id: 7 })
    expect(badStart.message).toMatch(/^unexpected process\/start from the app-server: /)
    expect(left(fromAppServer({ id: 8, method: "initialize", params: { resumeSessionId: "s" } }))).toMatchObject({ kind: "params", id: 8 })
    expect(left(fromAppServer({ id: 9, method: "http/request", params: { method: "GET", url: "u", requestId: "r", headers: { Cookie: "a" } } })))
      .toMatchObject({ kind: "params", method: "http/request", id: 9 })
  })
})

describe("[S26] exec-server wire: frames from the node", () => {
  it("answers, and the notifications that end a process, as a real exec-server sends them", () => {
    const ok = right(fromNode({ id: 1, result: { sessionId: "s-1", environmentInfo: { shell: { name: "bash" } } } }))
    expect(ok).toMatchObject({ _tag: "Response", id: 1, error: undefined })
    expect(right(fromNode({ error: { code: -32004, message: "No such file or directory (os error 2)" }, id: 3 }))).toMatchObject({
      _tag: "Response",
      id: 3,
      error: { code: -32004 }
    })
    expect(right(fromNode({ method: "process/exited", params: { processId: "p", seq: 2, exitCode: 0, sandboxDenied: false } })))
      .toMatchObject({ _tag: "ProcessExited", params: { processId: "p", exitCode: 0, seq: 2 } })
    expect(right(fromNode({ method: "process/closed", params: { processId: "p", seq: 3 } }))._tag).toBe("ProcessClosed")
    expect(right(fromNode({ method: "process/output", params: { processId: "p", chunk: "aGkK" } }))._tag).toBe("OtherNotification")
  })

  it("a malformed frame from the node is a typed error, not a throw", () => {
    expect(left(fromNode("\u0000garbage"))).toMatchObject({ from: "node", kind: "notJson" })
    expect(left(fromNode({ method: "process/exited", params: { seq: 2 } }))).toMatchObject({ kind: "params", method: "process/exited" })
    expect(left(fromNode({ id: 2, error: "boom" })).kind).toBe("notMessage")
    expect(left(fromNode({ id: 2 })).kind).toBe("notMessage")
  })

  it("results are decoded by the method that asked", () => {
    expect(Either.getOrThrow(Wire.decodeResult("initialize", { sessionId: "s", extra: 1 }))).toEqual({ sessionId: "s", extra: 1 })
    expect(Either.getOrThrow(Wire.decodeResult("process/terminate", { running: false }))).toEqual({ running: false })
    expect(left(Wire.decodeResult("initialize", {}))).toMatchObject({ kind: "result", method: "initialize", from: "node" })
    expect(left(Wire.decodeResult("process/terminate", { running: "no" })).kind).toBe("result")
  })

  it("the encoders write what the decoders read", () => {
    const request = Wire.encodeRequest(4, "process/terminate", { processId: "p" })
    expect(right(fromAppServer(request))).toMatchObject({ _tag: "ProcessTerminate", id: 4, params: { processId: "p" } })
    expect(right(fromNode(Wire.encodeError(4, -32600, "refused")))).toMatchObject({ _tag: "Response", id: 4, error: { message: "refused" } })
  })
})
