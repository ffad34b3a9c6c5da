// `codex-harness nodes pair|list|unpair` (S26) and paired-node catalogs in `threads list|show|branch|archive` (S17),
// through the compiled CLI. The node's app-server is a real second `codex app-server --listen ws://127.0.0.1:PORT
// --ws-auth capability-token` with its own CODEX_HOME and a thread made on it by a real turn.
import { describe, expect, it } from "@effect/vitest"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { ConfigProvider, Effect, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Connection from "../../src/appserver/AppServerConnection.js"
import * as WebSocketTransport from "../../src/appserver/WebSocketTransport.js"
import * as ScriptedModel from "../../src/testing/ScriptedModel.js"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { isAlive, processesMentioning, tempDir } from "../support/harness.js"
import * as Remote from "../support/remoteAppServer.js"

const mode = (file: string) => fs.statSync(file).mode & 0o777

describe("[S26] nodes pair|list|unpair", () => {
  it.scopedLive("pairs with the token from stdin (0600, never printed), lists, refuses plain ws:// off loopback, unpairs", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir()
      const token = "tok-0123456789-secret"
      const paired = yield* runBin(["nodes", "pair", "--state-dir", stateDir, "build1", "ws://127.0.0.1:8765"], { input: `${token}\n` })
      expect(paired.code).toBe(0)
      expect(paired.stdout + paired.stderr).not.toContain(token)
      const dir = path.join(stateDir, "nodes")
      expect(mode(dir)).toBe(0o700)
      expect(mode(path.join(dir, "build1.token"))).toBe(0o600)
      expect(mode(path.join(dir, "build1.json"))).toBe(0o600)
      expect(fs.readFileSync(path.join(dir, "build1.token"), "utf8").trim()).toBe(token)
      expect(fs.readFileSync(path.join(dir, "build1.json"), "utf8")).not.toContain(token)

      const viaEnv = yield* runBin(["nodes", "pair", "--state-dir", stateDir, "--token-env", "NODE_TOK", "gpu2", "wss://gpu2.example:443"], {
        env: { NODE_TOK: "other-token" }
      })
      expect(viaEnv.code).toBe(0)
      const listed = yield* runBin(["nodes", "list", "--state-dir", stateDir, "--json"])
      expect(listed.code).toBe(0)
      const rows = listed.stdout.trim().split("\n").map((l) => JSON.parse(l))
      expect(rows.map((r) => [r.name, r.url])).toEqual([["build1", "ws://127.0.0.1:8765"], ["gpu2", "wss://gpu2.example:443"]])
      expect(listed.stdout).not.toContain(token)
      expect(listed.stdout).not.toContain("other-token")

      const plain = yield* runBin(["nodes", "pair", "--state-dir", stateDir, "far", "ws://10.0.0.5:8765"], { input: "t\n" })
      expect(plain.code).toBe(1)
      expect(plain.stderr).toContain("ws:// is accepted only to a loopback address")
      expect(fs.existsSync(path.join(dir, "far.token"))).toBe(false)
      const empty = yield* runBin(["nodes", "pair", "--state-dir", stateDir, "none", "ws://127.0.0.1:1"], { input: "" })
      expect(empty.code).not.toBe(0)
      expect(fs.existsSync(path.join(dir, "none.json"))).toBe(false)

      const gone = yield* runBin(["nodes", "unpair", "--state-dir", stateDir, "build1"])
      expect(gone.code).toBe(0)
      expect(fs.existsSync(path.join(dir, "build1.token"))).toBe(false)
      expect((yield* runBin(["nodes", "unpair", "--state-dir", stateDir, "build1"])).code).toBe(2)
    }), 240_000)
})

describe("[S17] paired-node catalogs (a real second app-server over WebSocket)", () => {
  it.scopedLive("threads list shows the node's threads as metadata-only rows; branch and archive are refused for them even when idle", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir()
      const model = yield* ScriptedModel.make({ fallback: reply.text("node reply text") })
      const token = "node-app-server-token-42"
      const tokenFile = path.join(stateDir, "node-app.token")
      fs.writeFileSync(tokenFile, token, { mode: 0o600 })
      const port = yield* Remote.freePort
      const remote = yield* Remote.start({
        codexHome: path.join(stateDir, "node-codex-home"),
        modelUrl: model.url,
        port,
        listenArgs: ["--ws-auth", "capability-token", "--ws-token-file", tokenFile]
      })
      // a thread on the node, made by a real turn there
      const threadId = yield* Effect.scoped(
        Effect.gen(function* () {
          const handle = yield* WebSocketTransport.connect({ url: remote.url, tokenEnv: "T" }).pipe(
            Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["T", token]])))
          )
          const connection = yield* Connection.make(handle)
          const events = yield* connection.subscribe()
          const started = (yield* connection.requestRaw("thread/start", { cwd: stateDir })) as { thread: { id: string } }
          yield* connection.requestRaw("turn/start", {
            threadId: started.thread.id,
            input: [{ type: "text", text: "a private prompt on the node", text_elements: [] }]
          })
          yield* events.pipe(Stream.filter((n) => n._tag === "TurnCompleted"), Stream.runHead)
          return started.thread.id
        })
      ).pipe(Effect.orDie)

      const common = ["--state-dir", stateDir, "--supervision-home", path.join(stateDir, "local-home"), "--provider-url", model.url]
      fs.mkdirSync(path.join(stateDir, "local-home"), { recursive: true })
      expect((yield* runBin(["nodes", "pair", "--state-dir", stateDir, "--node-app-server", remote.url, "box", "ws://127.0.0.1:1"], {
        input: token
      })).code).toBe(0)

      const listed = yield* runBin(["threads", "list", ...common, "--json"])
      expect(listed.code).toBe(0)
      const rows = listed.stdout.trim().split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
      const row = rows.flatMap((r) => r.rows ?? [r]).find((r: any) => r.threadId === threadId)
      expect(row).toMatchObject({ threadId, node: "box", remote: true, status: "notLoaded" })
      // metadata only: neither the prompt nor the reply crosses into the listing
      expect(listed.stdout).not.toContain("a private prompt")
      expect(listed.stdout).not.toContain("node reply text")

      const plainList = yield* runBin(["threads", "list", ...common])
      expect(plainList.stdout).toContain("box (remote, metadata only)")

      const branch = yield* runBin(["threads", "branch", ...common, threadId])
      expect(branch.code).toBe(1)
      expect(branch.stderr).toContain("it belongs to paired node box, whose catalog is metadata-only")
      const archive = yield* runBin(["threads", "archive", ...common, "--confirm-no-other-runner", threadId])
      expect(archive.code).toBe(1)
      expect(archive.stderr).toContain("paired node box")

      // a wrong token: the node's rows are left out with a warning, the local listing still works
      fs.writeFileSync(path.join(stateDir, "nodes", "box.token"), "wrong\n", { mode: 0o600 })
      const denied = yield* runBin(["threads", "list", ...common, "--json"])
      expect(denied.code).toBe(0)
      expect(denied.stdout).not.toContain(threadId)

      const pid = remote.pid
      yield* remote.kill
      expect(isAlive(pid)).toBe(false)
      // no app-server is left: the CLI's own (supervision) and the node's. (The node's app-server starts a shell snapshot
      // in a session of its own; on this machine its login profile can wait on another user's pyenv lock, so only
      // app-servers are counted here.)
      const cmdline = (pid: number) => {
        try {
          return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8")
        } catch {
          return ""
        }
      }
      expect(processesMentioning(stateDir).filter((pid) => cmdline(pid).includes("app-server"))).toEqual([])
    }).pipe(Effect.provide(NodeFileSystem.layer)), 90_000)
})
