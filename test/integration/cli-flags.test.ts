// Each command accepts only the flags its implementation reads: one that would be silently ignored there is a usage
// error (exit 2, one line naming it) through the compiled bin, said before anything starts.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as net from "node:net"
import { reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { fixture, leftBehind } from "../support/harness.js"

const refused = (args: ReadonlyArray<string>, flag: string) =>
  Effect.gen(function* () {
    const ran = yield* runBin(args)
    expect(ran.code).toBe(2)
    expect(ran.stdout).toBe("")
    const lines = ran.stderr.trim().split("\n")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(flag)
  })

describe("flags valid only where they apply", () => {
  it.live("demo --json is refused", () => refused(["demo", "--json"], "--json"))
  it.live("demo --provider-url is refused", () => refused(["demo", "--provider-url", "http://127.0.0.1:1/v1"], "--provider-url"))
  it.live("threads list --sandbox is refused", () => refused(["threads", "list", "--sandbox", "read-only"], "--sandbox"))
  it.live("threads show --approvals is refused", () => refused(["threads", "show", "--approvals", "allow", "x"], "--approvals"))
  it.live("compact --model is refused", () => refused(["compact", "--model", "m", "--session", "s"], "--model"))
  it.live("doctor --sandbox is refused", () => refused(["doctor", "--sandbox", "read-only"], "--sandbox"))
  it.live("serve --database-connections without --cluster is refused", () => refused(["serve", "--database-connections", "8"], "--database-connections"))
  // checked before the database is asked for anything (nothing listens at port 1)
  it.live("serve --cluster --database-connections below a runner's 4 is refused", () =>
    refused(["serve", "--cluster", "postgres://u@127.0.0.1:1/db", "--runner-listen", "127.0.0.1:1", "--database-connections", "3"], "--database-connections"))
})

describe("a cluster database nobody answers at", () => {
  // a port that was free a moment ago: nothing listens there
  const closedPort = Effect.async<number>((resume) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resume(Effect.succeed(port)))
    })
  })

  it.live("serve --cluster and cluster status say in one line where and why, exit 1, and never the password", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const listen = `127.0.0.1:${yield* closedPort}`
      const url = `postgres://harness@127.0.0.1:${port}/cluster`
      const env = { PGPASSWORD: "pw-not-to-be-shown" }
      for (const args of [["serve", "--cluster", url, "--runner-listen", listen], ["cluster", "status", "--cluster", url]]) {
        const ran = yield* runBin(args, { env })
        expect(ran.code, ran.stderr).toBe(1)
        const lines = ran.stderr.trim().split("\n")
        expect(lines).toHaveLength(1)
        expect(lines[0]).toContain(`cannot reach PostgreSQL at harness@127.0.0.1:${port}/cluster: connect ECONNREFUSED`)
        expect(ran.stdout + ran.stderr).not.toContain("pw-not-to-be-shown")
      }
    }))
})

describe("--log-level LEVEL, the form the README gives", () => {
  // @effect/cli took only `--log-level=LEVEL` after a subcommand: `run --log-level debug` was "Received unknown argument"
  it.scopedLive("is taken after the command and before it, with a space or an =; the JSON-RPC lines appear at debug", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ fallback: reply.text("logged") })
      const common = ["--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir, "--session", "lv"]
      for (const args of [
        ["run", "--log-level", "debug", ...common, "hi"],
        ["--log-level", "debug", "run", ...common, "hi"],
        ["run", "--log-level=debug", ...common, "hi"]
      ]) {
        const ran = yield* runBin(args)
        expect(ran.code, `${args.join(" ")}: ${ran.stderr}`).toBe(0)
        expect(ran.stdout).toBe("logged\n")
        expect(ran.stderr).toContain('app-server <- {"id":')
      }
      // the default level says nothing of the wire; a level that is not one is a usage error naming the flag
      const quiet = yield* runBin(["run", ...common, "hi"])
      expect(quiet.code).toBe(0)
      expect(quiet.stderr).not.toContain("app-server <-")
      const bad = yield* runBin(["run", "--log-level", "loud", ...common, "hi"])
      expect(bad.code).toBe(2)
      expect(bad.stderr.trim().split("\n")).toEqual([expect.stringContaining("--log-level")])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }), 120_000)
})
