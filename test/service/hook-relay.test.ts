// The relay socket (S20): one JSON line in, one out; an unknown token or a used nonce is refused; the token lives in a
// private file the command line names; the socket (and its private directory) are gone once the scope closes.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Layer, Scope } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import * as HookRelay from "../../src/approvals/HookRelay.js"
import * as HookRelayServer from "../../src/approvals/HookRelayServer.js"
import { Settings } from "../../src/config/Settings.js"

const roundTrip = (socketPath: string, line: string) =>
  Effect.async<unknown, Error>((resume) => {
    const socket = net.createConnection(socketPath)
    let reply = ""
    socket.setEncoding("utf8")
    socket.on("connect", () => socket.write(line + "\n"))
    socket.on("data", (c: string) => (reply += c))
    socket.on("error", (e) => resume(Effect.fail(e)))
    socket.on("close", () => resume(Effect.try(() => JSON.parse(reply.split("\n")[0]!))))
  })

const nonce = () => crypto.randomBytes(16).toString("hex")
const tokenOf = (file: string) => fs.readFileSync(file, "utf8").trim()

describe("hook relay server", () => {
  it.live("a request with the session's token is answered; a bad token is refused; closing removes the socket", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const calls: Array<HookRelayServer.HookCall> = []
      const server = yield* HookRelayServer.make({
        handle: (call) => Effect.sync(() => calls.push(call)).pipe(Effect.as({ exitCode: 2 as const, stderr: "blocked" }))
      }).pipe(Scope.extend(scope))
      expect((fs.statSync(path.dirname(server.socketPath)).mode & 0o777).toString(8)).toBe("700")
      const file = yield* server.tokenFileFor("session-a")
      expect(yield* server.tokenFileFor("session-a")).toBe(file)
      const token = tokenOf(file)
      expect(tokenOf(yield* server.tokenFileFor("session-b"))).not.toBe(token)

      const ok = yield* roundTrip(
        server.socketPath,
        JSON.stringify({ token, nonce: nonce(), event: "PreToolUse", payload: { tool_use_id: "c1" } })
      )
      expect(ok).toEqual({ ok: true, output: { exitCode: 2, stderr: "blocked" } })
      expect(calls).toEqual([{ sessionId: "session-a", event: "PreToolUse", payload: { tool_use_id: "c1" } }])

      const bad = yield* roundTrip(server.socketPath, JSON.stringify({ token: "nope", nonce: nonce(), event: "PreToolUse", payload: {} }))
      expect(bad).toMatchObject({ ok: false, error: expect.stringContaining("refused") })
      const junk = yield* roundTrip(server.socketPath, "not json")
      expect(junk).toMatchObject({ ok: false })
      const unknownEvent = yield* roundTrip(server.socketPath, JSON.stringify({ token, nonce: nonce(), event: "SessionStart", payload: {} }))
      expect(unknownEvent).toMatchObject({ ok: false })
      expect(calls).toHaveLength(1)

      yield* Scope.close(scope, Exit.void)
      expect(fs.existsSync(server.socketPath)).toBe(false)
      expect(fs.existsSync(path.dirname(server.socketPath))).toBe(false)
      const after = yield* Effect.either(roundTrip(server.socketPath, JSON.stringify({ token, nonce: nonce(), event: "Stop", payload: {} })))
      expect(after._tag).toBe("Left")
    }).pipe(Effect.provide(NodeFileSystem.layer))
  )

  it.live("closing the scope does not wait for a hook still waiting on a decision", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      // the receipt that the hook is waiting on its decision: the server has called the handler
      const waiting = yield* Deferred.make<void>()
      const server = yield* HookRelayServer.make({ handle: () => Effect.zipRight(Deferred.succeed(waiting, undefined), Effect.never) }).pipe(
        Scope.extend(scope)
      )
      const token = tokenOf(yield* server.tokenFileFor("s"))
      const request = JSON.stringify({ token, nonce: nonce(), event: "Stop", payload: {} })
      const pending = yield* Effect.fork(Effect.either(roundTrip(server.socketPath, request)))
      yield* Deferred.await(waiting)
      // a close that waited for the decision would never end (the handler never answers): the bound tells that apart
      const closed = yield* Scope.close(scope, Exit.void).pipe(Effect.timeoutOption("20 seconds"))
      expect(closed._tag).toBe("Some")
      yield* pending.await
      expect(fs.existsSync(server.socketPath)).toBe(false)
    }).pipe(Effect.provide(NodeFileSystem.layer))
  )

  it.scoped("[S20] every event gets its hook; one no policy decides is the no-op command (no process), one a policy decides is relayed", () =>
    Effect.gen(function* () {
      const settings = Layer.mergeAll(
        Layer.succeed(Settings, { stateDir: "/tmp", cwd: "/tmp", approvalPolicy: "never", sandbox: "read-only" }),
        HookRelay.reportsLayer,
        NodeFileSystem.layer
      )
      const commandOf = (config: Readonly<Record<string, unknown>>, event: string) =>
        ((config[`hooks.${event}`] as ReadonlyArray<{ hooks: ReadonlyArray<{ command: string }> }>)[0]!.hooks[0]!.command)
      const plain = yield* HookRelay.makeExtension().pipe(Effect.provide(settings))
      const plainConfig = yield* plain.threadConfig!("s1")
      expect(commandOf(plainConfig, "Stop")).toBe(HookRelay.noDecisionCommand)
      expect(commandOf(plainConfig, "PreToolUse")).toBe(HookRelay.noDecisionCommand)
      expect(commandOf(plainConfig, "PostToolUse")).toBe(HookRelay.noDecisionCommand)
      // PermissionRequest asks the ApprovalPrompts port: always relayed
      expect(commandOf(plainConfig, "PermissionRequest")).toContain("--event PermissionRequest")
      const decided = yield* HookRelay.makeExtension().pipe(
        Effect.provide(settings),
        Effect.provideService(HookRelay.HookPolicy, {
          stop: () => Effect.succeed({ _tag: "Stop" } as const),
          preToolUse: () => Effect.succeed({ _tag: "NoDecision" } as const),
          postToolUse: () => Effect.void
        })
      )
      const decidedConfig = yield* decided.threadConfig!("s1")
      for (const event of ["Stop", "PreToolUse", "PostToolUse", "PermissionRequest"]) {
        expect(commandOf(decidedConfig, event)).toContain(`--event ${event}`)
      }
    }))
})
