// Remote exec on a paired node (S26), on real peers: a real `codex exec-server` as the node (in its own network and
// mount namespace where the machine allows, else on loopback), reached through a tunnel on host loopback (the stand-in
// for the operator's SSH forward), a real `codex app-server` per attempt, the ScriptedModel as its provider.
// Nothing is left running: the attempt's app-server, the node's processes, the node itself.
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option, Redacted, Schedule, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
// @ts-expect-error `ws` ships no type declarations
import { WebSocket } from "ws"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as CodexArgs from "../../src/appserver/CodexArgs.js"
import { NodeTransportLive } from "../../src/appserver/Transport.js"
import * as NodeAttempt from "../../src/nodes/NodeAttempt.js"
import * as NodeRelay from "../../src/nodes/NodeRelay.js"
import * as ScriptedModel from "../../src/testing/ScriptedModel.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { isAlive, leftBehind, tempDir } from "../support/harness.js"
import * as ExecNode from "../support/execNode.js"
import { runBin } from "../support/cli.js"

const execCommand = (cmd: string, extra: Record<string, unknown> = {}) =>
  reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd, ...extra } })

/** An attempt on `node` whose app-server uses `model`; the caller's scope owns it. */
const openAttempt = (node: ExecNode.ExecNode, model: ScriptedModel.ScriptedModel, home: string, extraArgs: ReadonlyArray<string> = []) =>
  NodeAttempt.open({
    node: "n1",
    url: node.tunnel.url,
    token: Option.some(Redacted.make(node.token)),
    appServer: {
      codexHome: home,
      args: [...CodexArgs.providerArgs(model.url, "mock-model"), ...CodexArgs.shellEnvironmentArgs(), ...extraArgs],
      env: CodexArgs.providerEnv(undefined)
    },
    relay: { pingInterval: Duration.seconds(1), cleanupTimeout: Duration.seconds(3) }
  }).pipe(Effect.provide(NodeTransportLive), Effect.provide(NodeFileSystem.layer))

/** Waits (on the real clock, polling) until `check` holds; a receipt the test cannot subscribe to. */
const eventually = (check: () => boolean, what: string) =>
  Effect.suspend(() => (check() ? Effect.void : Effect.fail(what))).pipe(
    Effect.retry({ schedule: Schedule.spaced(Duration.millis(50)), times: 200 })
  )

/** A raw WebSocket client: the upgrade's HTTP status, or the open socket's first answers. */
const upgrade = (url: string, headers: Record<string, string>) =>
  Effect.async<{ status: number; body: string } | { open: true; ws: any }>((resume) => {
    const ws = new WebSocket(url, { headers })
    ws.on("unexpected-response", (_req: unknown, res: any) => {
      let body = ""
      res.on("data", (d: Buffer) => (body += d.toString()))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode as number, body })))
    })
    ws.on("open", () => resume(Effect.succeed({ open: true as const, ws })))
    ws.on("error", () => {})
  })

const rpc = (ws: any, messages: ReadonlyArray<Record<string, unknown>>, untilId: number) =>
  Effect.async<ReadonlyArray<any>>((resume) => {
    const got: Array<any> = []
    ws.on("message", (d: Buffer) => {
      const m = JSON.parse(d.toString())
      got.push(m)
      if (m.id === untilId) resume(Effect.succeed(got))
    })
    for (const m of messages) ws.send(JSON.stringify(m))
  })

describe(`[S26] remote exec on a paired node (${ExecNode.netnsAllowed() ? "node in its own network namespace" : "loopback only: ip netns is not allowed here"})`, () => {
  it.scopedLive("a turn's command runs on the node: its environment, its private filesystem; nothing is left afterwards", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const node = yield* ExecNode.start(dir)
      const model = yield* ScriptedModel.make({
        replies: [execCommand("echo marker=$NODE_MARKER; touch made-on-node.txt; ls"), reply.text("done on the node")]
      })
      const scope = yield* Scope.make()
      const attempt = yield* openAttempt(node, model, path.join(dir, "harness-home")).pipe(Scope.extend(scope))
      const appServerPid = attempt.connection.pid!
      const turn = yield* attempt.runTurn({ prompt: "work on the node", cwd: node.nodeDir, sandbox: "danger-full-access" }).pipe(
        Scope.extend(scope)
      )
      expect(turn.finalText).toBe("done on the node")
      expect(turn.commands).toHaveLength(1)
      expect(turn.commands[0]!.output).toContain(`marker=${node.marker}`)
      expect(turn.commands[0]!.output).toContain("made-on-node.txt")
      expect(turn.commands[0]!.exitCode).toBe(0)
      if (node.mode === "netns") {
        // the file exists only in the node's mount namespace: the harness's machine does not see it
        expect(fs.existsSync(path.join(node.nodeDir, "made-on-node.txt"))).toBe(false)
      }
      // the app-server's upgrade reached the node through the tunnel with the node's token and nothing else of its own
      expect(node.tunnel.heads().length).toBeGreaterThan(0)
      for (const head of node.tunnel.heads()) {
        expect(head.toLowerCase()).not.toMatch(/^cookie:|^x-api-key:/m)
        expect(head).toContain(`Bearer ${node.token}`)
      }
      // the model's key never crossed: no request to the node mentions it
      expect(node.tunnel.heads().join("\n")).not.toContain(CodexArgs.placeholderProviderKey)
      // the exec-server protocol as the real node speaks it: every frame of the attempt decoded with schemas/execServer.ts
      // (the binary generates no schema for this wire; this is where those schemas are held to it)
      expect(yield* attempt.relay.undecoded).toEqual([])
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(appServerPid)).toBe(false)
      yield* eventually(() => node.descendants().length === 0, "the node still runs a process")
    }), 240_000)

  it.scopedLive("cookie, API-key and authorization headers are refused before the node: on the upgrade and in the node's HTTP requests", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const node = yield* ExecNode.start(dir)
      const sink = yield* ExecNode.httpSink(node.hostAddress)
      const relay = yield* NodeRelay.make({ node: "n1", url: node.tunnel.url, token: Option.some(Redacted.make(node.token)) })
      for (const headers of [{ Cookie: "session=abc" }, { "X-API-Key": "sk-provider" }, { Authorization: "Bearer sk-provider" }]) {
        const result = yield* upgrade(relay.url, headers)
        expect(result).toMatchObject({ status: 403 })
      }
      // nothing crossed the tunnel for them
      expect(node.tunnel.heads()).toEqual([])
      const opened = yield* upgrade(relay.url, {})
      expect("open" in opened).toBe(true)
      const ws = (opened as { ws: any }).ws
      yield* Effect.addFinalizer(() => Effect.sync(() => ws.terminate()))
      const secret = (name: string, value: string, id: number) => ({
        id,
        method: "http/request",
        params: { method: "GET", url: `${sink.url}/secret-${id}`, headers: [{ name, value }], requestId: `r${id}` }
      })
      const answers = yield* rpc(ws, [
        { id: 1, method: "initialize", params: { clientName: "test" } },
        { method: "initialized", params: {} },
        secret("Cookie", "session=abc", 2),
        secret("X-API-Key", "sk-provider", 3),
        secret("Authorization", "Bearer sk-provider", 4),
        { id: 5, method: "http/request", params: { method: "GET", url: `${sink.url}/clean`, headers: [{ name: "Accept", value: "text/plain" }], requestId: "r5" } }
      ], 5)
      for (const id of [2, 3, 4]) {
        expect(answers.find((m) => m.id === id)?.error?.message).toMatch(/refused by codex-harness: credential headers/)
      }
      expect(answers.find((m) => m.id === 5)?.result?.status).toBe(200)
      // the node's HTTP egress saw the clean request only
      expect(sink.log.map((r) => r.path)).toEqual(["/clean"])
      expect(sink.log[0]!.headers.cookie).toBeUndefined()
      // one link crossed the tunnel: the clean one, carrying the node's token only
      expect(node.tunnel.heads()).toHaveLength(1)
      expect(node.tunnel.heads()[0]!.toLowerCase()).not.toMatch(/cookie|x-api-key/)
      const refusals = yield* relay.refusals
      expect(refusals.map((r) => `${r.at}:${r.headers.join(",")}`)).toEqual([
        "upgrade:cookie",
        "upgrade:x-api-key",
        "upgrade:authorization",
        "message:cookie",
        "message:x-api-key",
        "message:authorization"
      ])
    }), 240_000)

  it.scopedLive("a cut link mid-command ends the attempt and its process on the node; a reconnect is refused; a fresh attempt works", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const node = yield* ExecNode.start(dir)
      const model = yield* ScriptedModel.make({
        replies: [execCommand("echo started; sleep 300", { yield_time_ms: 60_000 })]
      })
      const scope = yield* Scope.make()
      const attempt = yield* openAttempt(node, model, path.join(dir, "harness-home")).pipe(Scope.extend(scope))
      const running = yield* attempt.runTurn({ prompt: "long", cwd: node.nodeDir, sandbox: "danger-full-access" }).pipe(
        Scope.extend(scope),
        Effect.either,
        Effect.fork
      )
      // receipts: the relay saw the process start, and the node runs it
      yield* eventually(() => Effect.runSync(attempt.relay.running).length === 1, "the command did not start")
      yield* eventually(() => node.descendants().length > 0, "no process on the node")
      yield* node.tunnel.cut
      const outcome = yield* running.await.pipe(Effect.flatMap((exit) => exit))
      expect(outcome._tag).toBe("Left")
      expect(outcome._tag === "Left" && outcome.left._tag).toBe("NodeDisconnected")
      // the relay ended the process on the node (it resumed the node session only to terminate it)
      yield* eventually(() => Effect.runSync(attempt.relay.cleanups).length === 1, "no cleanup report")
      expect((yield* attempt.relay.cleanups)[0]!.outcome).toBe("terminated")
      // the cleanup's typed client read the real node's answers to a resume and to process/terminate
      expect((yield* attempt.relay.cleanups)[0]!.detail).toMatch(/: \{"running":(true|false)\}/)
      expect(yield* attempt.relay.undecoded).toEqual([])
      yield* eventually(() => node.descendants().length === 0, "the node still runs the command")
      // the attempt is over: a reconnect through its relay is refused, and its runTurn fails at once
      const reconnect = yield* upgrade(attempt.relay.url, {})
      expect(reconnect).toMatchObject({ status: 410 })
      const later = yield* attempt.runTurn({ prompt: "again", cwd: node.nodeDir }).pipe(Scope.extend(scope), Effect.either)
      expect(later._tag === "Left" && later.left._tag).toBe("NodeDisconnected")
      const appServerPid = attempt.connection.pid!
      yield* Scope.close(scope, Exit.void)
      expect(isAlive(appServerPid)).toBe(false)
      // a fresh attempt on the restored link works
      yield* model.enqueue(execCommand("echo fresh=$NODE_MARKER"), reply.text("fresh attempt"))
      const fresh = yield* Effect.scoped(
        Effect.flatMap(openAttempt(node, model, path.join(dir, "harness-home")), (a) =>
          a.runTurn({ prompt: "fresh", cwd: node.nodeDir, sandbox: "danger-full-access" }))
      )
      expect(fresh.finalText).toBe("fresh attempt")
      expect(fresh.commands[0]!.output).toContain(`fresh=${node.marker}`)
      yield* eventually(() => node.descendants().length === 0, "the node still runs a process")
    }), 240_000)

  it.scopedLive("a side question during a node attempt fails closed: the model gets no answer, nobody is asked", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const node = yield* ExecNode.start(dir)
      const question = {
        questions: [{ id: "db", header: "Database", question: "Which one?", options: [{ label: "Postgres", description: "a" }, { label: "SQLite", description: "b" }] }]
      }
      const model = yield* ScriptedModel.make({
        replies: [reply.steps({ type: "function_call", name: "request_user_input", arguments: question }), reply.text("asked nobody")]
      })
      const attempt = yield* openAttempt(node, model, path.join(dir, "harness-home"), ["--enable", "default_mode_request_user_input"])
      const turn = yield* attempt.runTurn({ prompt: "ask me", cwd: node.nodeDir, sandbox: "danger-full-access" })
      expect(turn.finalText).toBe("asked nobody")
      // the receipt: the model's second request carries the tool's output, which is no answer
      const requests = yield* model.waitForRequests(2)
      const outputs = ((requests[1]!.json as { input: ReadonlyArray<{ type: string; output?: string }> }).input)
        .filter((i) => i.type === "function_call_output")
      // 0.171.0 turns the declined request into an empty answer for the model
      expect(outputs.map((o) => o.output)).toEqual(['{"answers":{}}'])
    }), 240_000)

  it.scopedLive("[cli] nodes pair, then nodes run: the operator's turn runs its command on the node", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir()
      const node = yield* ExecNode.start(dir)
      const model = yield* ScriptedModel.make({ replies: [execCommand("echo via-cli=$NODE_MARKER"), reply.text("cli turn done")] })
      const stateDir = path.join(dir, "state")
      const paired = yield* runBin(["nodes", "pair", "--state-dir", stateDir, "n1", node.tunnel.url], { input: node.token })
      expect(paired.code).toBe(0)
      const ran = yield* runBin([
        "nodes", "run", "--state-dir", stateDir, "--provider-url", model.url, "--sandbox", "danger-full-access",
        "--node-cwd", node.nodeDir, "n1", "run it there"
      ])
      expect(ran.stderr).toContain(`via-cli=${node.marker}`)
      expect(ran.stdout).toBe("cli turn done\n")
      expect(ran.code).toBe(0)
      // the CLI's own app-server (CODEX_HOME under the state dir) is gone, and so is everything on the node
      expect(yield* leftBehind(stateDir)).toEqual([])
      yield* eventually(() => node.descendants().length === 0, "the node still runs a process")
    }), 240_000)
})
