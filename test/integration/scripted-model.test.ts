import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, FiberId, Option, Scope } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Readline from "node:readline"
import { make, reply } from "../../src/testing/ScriptedModel.js"
import type { ReplyStep } from "../../src/testing/ScriptedModel.js"

interface SseEvent {
  readonly event: string
  readonly data: any
}

const parseSse = (text: string): Array<SseEvent> =>
  text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split("\n")
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? ""
      const data = lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "null"
      return { event, data: JSON.parse(data) }
    })

const post = (url: string, body: unknown) =>
  Effect.promise(async () => {
    const res = await fetch(`${url}/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
    return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() }
  })

// The text of every output_text delta in a streamed reply, in order.
const texts = (sse: string): Array<string> =>
  parseSse(sse)
    .filter((e) => e.event === "response.output_text.delta")
    .map((e) => e.data.delta as string)

const postText = (url: string, body: unknown) =>
  post(url, body).pipe(Effect.map((r) => texts(r.text).join("|")))

// fetch() refuses Upgrade/Connection headers, so the WebSocket probe goes through node:http.
const rawGet = (port: number, path: string, headers: Record<string, string>) =>
  Effect.async<{ status: number; body: string }, Error>((resume) => {
    const req = Http.request({ host: "127.0.0.1", port, path, method: "GET", headers }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (c: string) => (body += c))
      res.on("end", () => resume(Effect.succeed({ status: res.statusCode ?? 0, body })))
    })
    req.on("upgrade", () => resume(Effect.fail(new Error("unexpected upgrade"))))
    req.on("error", (e) => resume(Effect.fail(e)))
    req.end()
  })

describe("ScriptedModel", () => {
  it.scopedLive("serves queued replies in order, then the fallback", () =>
    Effect.gen(function*() {
      const model = yield* make({ replies: [reply.text("one"), reply.text("two")] })
      expect(model.url).toBe(`http://127.0.0.1:${model.port}/v1`)
      expect(yield* postText(model.url, { input: "a" })).toBe("one")
      yield* model.enqueue(reply.text("three"), reply.text("four"))
      expect(yield* postText(model.url, { input: "b" })).toBe("two")
      expect(yield* postText(model.url, { input: "c" })).toBe("three")
      expect(yield* postText(model.url, { input: "d" })).toBe("four")
      expect(yield* postText(model.url, { input: "e" })).toBe("ok")
    }))

  it.scopedLive("uses a custom fallback when nothing else applies", () =>
    Effect.gen(function*() {
      const model = yield* make({ fallback: reply.text("default answer") })
      expect(yield* postText(model.url, {})).toBe("default answer")
      expect(yield* postText(model.url, {})).toBe("default answer")
    }))

  it.scopedLive("rules match by substring before the queue; once rules are used up", () =>
    Effect.gen(function*() {
      const model = yield* make({
        replies: [reply.text("Q1"), reply.text("Q2")],
        rules: [
          { whenRequestIncludes: "alpha", reply: reply.text("A") },
          { whenRequestIncludes: "beta", reply: reply.text("B"), once: true },
          { whenRequestIncludes: "beta", reply: reply.text("B2") }
        ]
      })
      expect(yield* postText(model.url, { input: "say beta" })).toBe("B")
      expect(yield* postText(model.url, { input: "say beta" })).toBe("B2")
      expect(yield* postText(model.url, { input: "say alpha" })).toBe("A")
      expect(yield* postText(model.url, { input: "say alpha again" })).toBe("A")
      expect(yield* postText(model.url, { input: "neither" })).toBe("Q1")
      yield* model.addRule({ whenRequestIncludes: "CONTEXT CHECKPOINT", reply: reply.text("summary"), once: true })
      expect(yield* postText(model.url, { input: "CONTEXT CHECKPOINT COMPACTION" })).toBe("summary")
      expect(yield* postText(model.url, { input: "CONTEXT CHECKPOINT COMPACTION" })).toBe("Q2")
    }))

  it.scopedLive("streams the Responses wire format with unique ids", () =>
    Effect.gen(function*() {
      const model = yield* make({
        replies: [
          reply.steps(
            { type: "reasoning", text: "thinking" },
            { type: "message", text: "hello" },
            { type: "function_call", name: "exec_command", arguments: { cmd: "ls" } },
            { type: "function_call", name: "get_ticket", arguments: "{bad", callId: "c9", namespace: "jira" },
            { type: "custom_tool_call", name: "apply_patch", input: "*** Begin Patch" }
          ),
          reply.text("second")
        ]
      })
      const first = yield* post(model.url, {})
      expect(first.status).toBe(200)
      expect(first.contentType).toBe("text/event-stream")
      expect(first.text).toMatch(/^event: response\.created\ndata: \{/)
      const events = parseSse(first.text)
      expect(events.map((e) => e.event)).toEqual([
        "response.created",
        "response.output_item.added",
        "response.reasoning_summary_text.delta",
        "response.output_item.done",
        "response.output_item.added",
        "response.output_text.delta",
        "response.output_item.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed"
      ])
      for (const e of events) expect(e.data.type).toBe(e.event)
      const done = events.filter((e) => e.event === "response.output_item.done").map((e) => e.data.item)
      expect(done[0]).toMatchObject({ type: "reasoning", summary: [{ type: "summary_text", text: "thinking" }] })
      expect(done[1]).toMatchObject({
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "hello" }]
      })
      expect(done[2]).toMatchObject({ type: "function_call", name: "exec_command", arguments: "{\"cmd\":\"ls\"}" })
      expect(done[2]).not.toHaveProperty("namespace")
      expect(done[3]).toMatchObject({ type: "function_call", arguments: "{bad", call_id: "c9", namespace: "jira" })
      expect(done[4]).toMatchObject({ type: "custom_tool_call", name: "apply_patch", input: "*** Begin Patch" })
      const autoCallIds = [done[2].call_id, done[4].call_id]
      expect(autoCallIds.every((id) => typeof id === "string" && id.length > 0)).toBe(true)
      expect(new Set(autoCallIds).size).toBe(2)
      expect(new Set(done.map((i) => i.id)).size).toBe(5)
      const completed = events.at(-1)!.data
      expect(completed.response.usage).toEqual({
        input_tokens: 10,
        input_tokens_details: null,
        output_tokens: 5,
        output_tokens_details: null,
        total_tokens: 15
      })
      expect(completed.response.id).toBe(events[0]!.data.response.id)

      const second = parseSse((yield* post(model.url, {})).text)
      expect(second[0]!.data.response.id).not.toBe(events[0]!.data.response.id)
      const secondItem = second.find((e) => e.event === "response.output_item.done")!.data.item
      expect(done.map((i) => i.id)).not.toContain(secondItem.id)
    }))

  it.scopedLive("fail emits response.failed and ends the stream", () =>
    Effect.gen(function*() {
      const model = yield* make({
        replies: [reply.steps({ type: "message", text: "partial" }, { type: "fail", message: "boom" }, {
          type: "message",
          text: "never"
        })]
      })
      const events = parseSse((yield* post(model.url, {})).text)
      expect(events.map((e) => e.event)).toEqual([
        "response.created",
        "response.output_item.added",
        "response.output_text.delta",
        "response.output_item.done",
        "response.failed"
      ])
      expect(events.at(-1)!.data.response.error.message).toBe("boom")
    }))

  it.scopedLive("answers HTTP errors as scripted", () =>
    Effect.gen(function*() {
      const model = yield* make({ replies: [reply.httpError(500), reply.httpError(429, "slow down")] })
      const first = yield* post(model.url, {})
      expect(first.status).toBe(500)
      expect(first.contentType).toBe("application/json")
      expect(JSON.parse(first.text).error.message).toContain("500")
      const second = yield* post(model.url, {})
      expect(second.status).toBe(429)
      expect(second.text).toBe("slow down")
      // Both still count as model requests.
      expect((yield* model.requests).length).toBe(2)
    }))

  it.scopedLive("answers 426 to WebSocket upgrades and 404 JSON elsewhere, without recording them", () =>
    Effect.gen(function*() {
      const model = yield* make()
      // answered, not left open: an upgrade the server held would end the wait with a timeout (a bound for a hang, not
      // a speed margin: the suite runs on loaded machines, where a wall-clock margin of 1 s once failed at 1,010 ms)
      const answered = <A, E>(request: Effect.Effect<A, E>) =>
        request.pipe(Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => new Error("the upgrade was left unanswered") }))
      const upgrade = yield* answered(rawGet(model.port, "/v1/responses", { connection: "Upgrade", upgrade: "websocket" }))
      expect(upgrade.status).toBe(426)
      // Without `Connection: Upgrade` node routes it as a plain request; still 426.
      const bare = yield* answered(rawGet(model.port, "/v1/responses", { upgrade: "websocket" }))
      expect(bare.status).toBe(426)

      const notFound = yield* Effect.promise(() => fetch(`${model.url}/models`))
      expect(notFound.status).toBe(404)
      expect(notFound.headers.get("content-type")).toBe("application/json")
      expect((yield* Effect.promise(() => notFound.json())) as any).toHaveProperty("error.message")
      const getResponses = yield* rawGet(model.port, "/v1/responses", {})
      expect(getResponses.status).toBe(404)
      expect(yield* model.requests).toEqual([])
    }))

  it.scopedLive("records every POST body and its headers in order", () =>
    Effect.gen(function*() {
      const model = yield* make()
      yield* post(model.url, { model: "m", input: "first" })
      yield* post(model.url, "not json at all")
      const log = yield* model.requests
      expect(log).toEqual([
        {
          method: "POST",
          url: "/v1/responses",
          body: "{\"model\":\"m\",\"input\":\"first\"}",
          json: { model: "m", input: "first" },
          headers: expect.objectContaining({ "content-type": "application/json" })
        },
        { method: "POST", url: "/v1/responses", body: "not json at all", json: undefined, headers: expect.any(Object) }
      ])
    }))

  it.scopedLive("waitForRequests resolves once enough requests arrived", () =>
    Effect.gen(function*() {
      const model = yield* make()
      const waiter = yield* Effect.fork(model.waitForRequests(2))
      yield* post(model.url, { n: 1 })
      yield* Effect.sleep(Duration.millis(30))
      expect(Option.isNone(yield* Fiber.poll(waiter))).toBe(true)
      yield* post(model.url, { n: 2 })
      const log = yield* Fiber.join(waiter).pipe(Effect.timeout(Duration.seconds(2)))
      expect(log.map((r) => r.json)).toEqual([{ n: 1 }, { n: 2 }])
      // Already satisfied: returns at once.
      expect((yield* model.waitForRequests(1)).length).toBe(2)
      expect((yield* model.waitForRequests(0)).length).toBe(2)
    }))

  it.live("pause delays the rest of the stream", () =>
    Effect.scoped(Effect.gen(function*() {
      const model = yield* make({
        replies: [reply.steps({ type: "message", text: "before" }, { type: "pause", ms: 300 }, {
          type: "message",
          text: "after"
        })]
      })
      const { afterFirst, atEnd, sentAt, text } = yield* Effect.promise(async () => {
        const sentAt = Date.now()
        const res = await fetch(`${model.url}/responses`, { method: "POST", body: "{}" })
        const reader = res.body!.getReader()
        const decoder = new TextDecoder()
        let text = ""
        let afterFirst = 0
        for (;;) {
          const chunk = await reader.read()
          if (chunk.done) break
          text += decoder.decode(chunk.value, { stream: true })
          if (afterFirst === 0 && text.includes("\"delta\":\"before\"")) afterFirst = Date.now()
        }
        return { afterFirst, atEnd: Date.now(), sentAt, text }
      })
      expect(afterFirst).toBeGreaterThan(0)
      // a lower bound only (load can only lengthen it): the stream cannot end before the pause has passed; measured from
      // the request, since a busy client may read "before" late
      expect(atEnd - sentAt).toBeGreaterThanOrEqual(300)
      expect(texts(text)).toEqual(["before", "after"])
      expect(parseSse(text).at(-1)!.event).toBe("response.completed")
    })))

  // Reads until `marker` is seen, closes the model's scope, then reports how the rest of the body read went.
  const cutOffBy = (steps: ReadonlyArray<ReplyStep>, marker: string) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const model = yield* make({ replies: [reply.steps(...steps)] }).pipe(Scope.extend(scope))
      const reader = yield* Effect.promise(async () => {
        const res = await fetch(`${model.url}/responses`, { method: "POST", body: "{}" })
        const reader = res.body!.getReader()
        const decoder = new TextDecoder()
        let text = ""
        while (!text.includes(marker)) {
          const chunk = await reader.read()
          if (chunk.done) throw new Error("stream ended early")
          text += decoder.decode(chunk.value, { stream: true })
        }
        return reader
      })
      const started = Date.now()
      yield* Scope.close(scope, Exit.void).pipe(Effect.timeout(Duration.seconds(3)))
      const closeMs = Date.now() - started
      const rest = yield* Effect.promise(async () => {
        const decoder = new TextDecoder()
        let text = ""
        try {
          for (;;) {
            const chunk = await reader.read()
            if (chunk.done) return { outcome: "ended", text }
            text += decoder.decode(chunk.value, { stream: true })
          }
        } catch {
          return { outcome: "rejected", text }
        }
      })
      return { closeMs, ...rest }
    })

  it.live("a hanging stream is cut off when the scope closes, and the close does not hang", () =>
    Effect.gen(function*() {
      const result = yield* cutOffBy([{ type: "message", text: "partial" }, { type: "hang" }], "\"delta\":\"partial\"")
      // a close that waited for the stream would never end: the bound tells that from a slow machine
      expect(result.closeMs).toBeLessThan(20_000)
      expect(["ended", "rejected"]).toContain(result.outcome)
      expect(result.text).not.toContain("response.completed")
    }))

  it.live("a pending pause does not hold up the scope close", () =>
    Effect.gen(function*() {
      const result = yield* cutOffBy(
        [{ type: "message", text: "first" }, { type: "pause", ms: 60_000 }, { type: "message", text: "late" }],
        "\"delta\":\"first\""
      )
      // a close that waited for the pause would take its 60 s
      expect(result.closeMs).toBeLessThan(20_000)
      expect(result.text).not.toContain("late")
    }))
})

// ---------------------------------------------------------------------------
// End to end against the real codex app-server.

const CODEX_BIN = Path.resolve("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")

interface AppServer {
  readonly send: (message: unknown) => Effect.Effect<void>
  /** The first message (from the start of the session) matching the predicate. */
  readonly waitFor: (label: string, predicate: (message: any) => boolean) => Effect.Effect<any>
  readonly messages: () => ReadonlyArray<any>
  readonly exited: () => boolean
  readonly cwd: string
}

// A custom provider: Codex goes straight to HTTP POST.
const mockProvider = (modelUrl: string): ReadonlyArray<string> => [
  "-c",
  "model_provider=\"mock\"",
  "-c",
  `model_providers.mock={name="mock",base_url="${modelUrl}",wire_api="responses",env_key="MOCK_KEY"}`,
  "-c",
  "model=\"mock-model\""
]

const appServer = (configArgs: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "scripted-model-home-"))
      const cwd = Fs.mkdtempSync(Path.join(Os.tmpdir(), "scripted-model-cwd-"))
      const child = spawn(CODEX_BIN, ["app-server", ...configArgs], { env: { ...process.env, MOCK_KEY: "x", CODEX_HOME: home }, stdio: ["pipe", "pipe", "pipe"] })
      const messages: Array<any> = []
      let stderr = ""
      let exited = false
      let changed = Deferred.unsafeMake<void>(FiberId.none)
      const signal = () => {
        const d = changed
        changed = Deferred.unsafeMake<void>(FiberId.none)
        Deferred.unsafeDone(d, Effect.void)
      }
      Readline.createInterface({ input: child.stdout }).on("line", (line) => {
        try {
          messages.push(JSON.parse(line))
        } catch {
          return
        }
        signal()
      })
      child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr = (stderr + c).slice(-20_000)))
      child.stdin.on("error", () => {})
      child.once("exit", () => {
        exited = true
        signal()
      })
      const waitFor = (label: string, predicate: (m: any) => boolean): Effect.Effect<any> => {
        const loop: Effect.Effect<any> = Effect.suspend(() => {
          const found = messages.find(predicate)
          if (found !== undefined) return Effect.succeed(found)
          if (exited) return Effect.dieMessage(`app-server exited while waiting for ${label}; stderr:\n${stderr}`)
          return Deferred.await(changed).pipe(Effect.zipRight(loop))
        })
        return loop.pipe(
          Effect.timeoutFail({
            duration: Duration.seconds(15),
            onTimeout: () => new Error(`timed out waiting for ${label}; stderr:\n${stderr}`)
          }),
          Effect.orDie
        )
      }
      const server: AppServer = {
        send: (message) => Effect.sync(() => void child.stdin.write(`${JSON.stringify(message)}\n`)),
        waitFor,
        messages: () => messages,
        exited: () => exited,
        cwd
      }
      return { server, child, home, cwd }
    }),
    ({ child, cwd, home }) =>
      Effect.async<void>((resume) => {
        // Closing stdin is the app-server's shutdown signal; SIGKILL only as a backstop.
        const done = () => {
          clearTimeout(backstop)
          resume(Effect.void)
        }
        const backstop = setTimeout(() => child.kill("SIGKILL"), 5_000)
        if (child.exitCode !== null || child.signalCode !== null) done()
        else {
          child.once("exit", done)
          child.stdin.end()
        }
      }).pipe(
        Effect.ensuring(Effect.sync(() => {
          Fs.rmSync(home, { recursive: true, force: true })
          Fs.rmSync(cwd, { recursive: true, force: true })
        }))
      )
  ).pipe(Effect.map(({ server }) => server))

// Initializes, starts a thread and runs one turn saying "hi"; returns every message up to turn/completed.
const runTurn = (server: AppServer) =>
  Effect.gen(function*() {
    yield* server.send({
      id: 1,
      method: "initialize",
      params: { clientInfo: { name: "t", version: "0" }, capabilities: { experimentalApi: true } }
    })
    yield* server.waitFor("initialize", (m) => m.id === 1)
    yield* server.send({ method: "initialized" })
    yield* server.send({
      id: 2,
      method: "thread/start",
      params: { cwd: server.cwd, approvalPolicy: "never", sandbox: "read-only", personality: "none" }
    })
    const started = yield* server.waitFor("thread/start", (m) => m.id === 2)
    expect(started.error).toBeUndefined()
    const threadId: string = started.result.thread.id
    yield* server.send({ id: 3, method: "turn/start", params: { threadId, input: [{ type: "text", text: "hi" }] } })
    const completed = yield* server.waitFor("turn/completed", (m) => m.method === "turn/completed")
    return { completed, messages: server.messages() }
  })

const completedItems = (messages: ReadonlyArray<any>, type: string) =>
  messages.filter((m) => m.method === "item/completed" && m.params.item.type === type).map((m) => m.params.item)

describe("ScriptedModel with the real codex app-server", () => {
  it.live("a scripted message reaches the client as an agentMessage", () =>
    Effect.gen(function*() {
      const { exited, requests, result } = yield* Effect.scoped(Effect.gen(function*() {
        const model = yield* make({
          replies: [reply.steps({ type: "reasoning", text: "pondering" }, {
            type: "message",
            text: "Hello from the script"
          })]
        })
        const result = yield* Effect.scoped(Effect.gen(function*() {
          const server = yield* appServer(mockProvider(model.url))
          const result = yield* runTurn(server)
          return { ...result, exited: server.exited }
        }))
        return { result, exited: result.exited, requests: yield* model.requests }
      }))
      expect(exited()).toBe(true)
      expect(result.completed.params.turn.status).toBe("completed")
      expect(completedItems(result.messages, "agentMessage").map((i) => i.text)).toEqual(["Hello from the script"])
      expect(completedItems(result.messages, "reasoning").map((i) => i.summary)).toEqual([["pondering"]])
      expect(requests.length).toBe(1)
      expect(requests[0]!.url).toBe("/v1/responses")
      expect(requests[0]!.json).toMatchObject({ model: "mock-model" })
      expect(requests[0]!.body).toContain("hi")
    }))

  it.live("a function_call makes the next POST carry its function_call_output", () =>
    Effect.gen(function*() {
      const { exited, requests, result } = yield* Effect.scoped(Effect.gen(function*() {
        const model = yield* make({
          replies: [
            reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "echo hi" }, callId: "call_echo" }),
            reply.text("ran it")
          ]
        })
        const result = yield* Effect.scoped(Effect.gen(function*() {
          const server = yield* appServer(mockProvider(model.url))
          const result = yield* runTurn(server)
          return { ...result, exited: server.exited }
        }))
        return { result, exited: result.exited, requests: yield* model.requests }
      }))
      expect(exited()).toBe(true)
      expect(result.completed.params.turn.status).toBe("completed")
      expect(requests.length).toBe(2)
      const input = (requests[1]!.json as any).input as Array<any>
      const output = input.find((i) => i.type === "function_call_output")
      expect(output).toMatchObject({ call_id: "call_echo" })
      expect(completedItems(result.messages, "commandExecution").length).toBe(1)
      expect(completedItems(result.messages, "agentMessage").map((i) => i.text)).toEqual(["ran it"])
    }))

  it.live("the built-in openai provider falls back from WebSocket to HTTP at once (426)", () =>
    Effect.gen(function*() {
      const { requests, result } = yield* Effect.scoped(Effect.gen(function*() {
        const model = yield* make({ replies: [reply.text("via openai provider")] })
        const result = yield* Effect.scoped(Effect.gen(function*() {
          const server = yield* appServer(["-c", `openai_base_url="${model.url}"`, "-c", "model=\"mock-model\""])
          return yield* runTurn(server)
        }))
        return { result, requests: yield* model.requests }
      }))
      expect(completedItems(result.messages, "agentMessage").map((i) => i.text)).toEqual(["via openai provider"])
      expect(requests.length).toBe(1)
      // A 404 to the upgrade would cost reconnect back-off (Codex's retry notices, `error` with willRetry) before the
      // HTTP fallback; a 426 falls back with none
      expect(result.messages.filter((m: { method?: string }) => m.method === "error")).toEqual([])
    }))
})
