// Provider keys on the real app-server, through the compiled CLI (issue 14): the key is read from the variable
// --provider-key-env names (default $OPENAI_API_KEY, then $CODEX_HARNESS_PROVIDER_KEY) and reaches the provider as its
// bearer token, while no command the agent runs sees it. The scripted model has the agent run `env`; what comes back to
// the model in the next request carries a harmless marker variable (so `env` really ran and its output was captured)
// and none of the keys, nor a variable the CODEX_HOME's own config.toml excludes.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { type RecordedRequest, reply } from "../../src/testing/ScriptedModel.js"
import { runBin } from "../support/cli.js"
import { filesUnder, fixture, functionCallOutput, leftBehind, tempDir } from "../support/harness.js"

const secret = (name: string) => `sk-test-${name}-${crypto.randomUUID()}`
const markerName = "CODEX_HARNESS_TEST_MARKER"

/** the model asks for `env`, then answers; the output of `env` is in its second request */
const runsEnv = () =>
  fixture({
    replies: [reply.steps({ type: "function_call", name: "exec_command", arguments: { cmd: "env" }, callId: "call_env" }), reply.text("seen")]
  })

const bearerOf = (request: RecordedRequest) => request.headers.authorization

const envOutput = (requests: ReadonlyArray<RecordedRequest>): string => {
  const output = functionCallOutput(requests.map((r) => r.body), "call_env")
  expect(typeof output).toBe("string")
  return output as string
}

// with Codex's defaults (the suite turns its login-shell snapshot and plugins off, vitest.config.ts): the snapshot is of a
// login shell that inherited the app-server's environment, keys included, and the agent's `env` must still show none
const run = (f: { readonly model: { readonly url: string }; readonly stateDir: string; readonly workDir: string }, extra: ReadonlyArray<string>, env: Record<string, string>) =>
  runBin(["run", "--provider-url", f.model.url, "--state-dir", f.stateDir, "--cwd", f.workDir, ...extra, "show me your environment"], {
    env: { CODEX_HARNESS_APP_SERVER_CONFIG: "", ...env }
  })

describe("provider keys", () => {
  it.scopedLive("the key in the variable --provider-key-env names is the bearer token, and no key reaches `env` in the agent's shell", () =>
    Effect.gen(function* () {
      const f = yield* runsEnv()
      const keys = {
        CODEX_HARNESS_KEY_UNDER_TEST: secret("named"),
        OPENAI_API_KEY: secret("openai"),
        CODEX_API_KEY: secret("codex"),
        CODEX_HARNESS_PROVIDER_KEY: secret("legacy")
      }
      const marker = `visible-${crypto.randomUUID()}`
      const ran = yield* run(f, ["--provider-key-env", "CODEX_HARNESS_KEY_UNDER_TEST"], { ...keys, [markerName]: marker })
      expect(ran).toMatchObject({ code: 0, stdout: "seen\n" })

      const requests = yield* f.model.requests
      expect(requests).toHaveLength(2)
      expect(requests.map(bearerOf)).toEqual([`Bearer ${keys.CODEX_HARNESS_KEY_UNDER_TEST}`, `Bearer ${keys.CODEX_HARNESS_KEY_UNDER_TEST}`])
      const output = envOutput(requests)
      // env ran, in the agent's shell, and its whole output came back: the marker is there and nothing was cut
      expect(output).toContain(`${markerName}=${marker}`)
      expect(output).toContain("PATH=")
      expect(output).not.toMatch(/truncated/i)
      for (const [name, value] of Object.entries(keys)) {
        expect(output, name).not.toContain(value)
        expect(output, name).not.toContain(`${name}=`)
      }
      // nor is any key in a file the harness or Codex wrote (session records, Codex's rollouts and shell snapshots)
      for (const file of filesUnder(f.stateDir)) {
        const text = fs.readFileSync(file, "latin1")
        for (const [name, value] of Object.entries(keys)) expect(text.includes(value), `${name} in ${file}`).toBe(false)
      }
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("by default the key is $OPENAI_API_KEY, and neither it nor $CODEX_HARNESS_PROVIDER_KEY reaches the agent", () =>
    Effect.gen(function* () {
      const f = yield* runsEnv()
      const keys = { OPENAI_API_KEY: secret("openai"), CODEX_HARNESS_PROVIDER_KEY: secret("legacy") }
      const marker = `visible-${crypto.randomUUID()}`
      const ran = yield* run(f, [], { ...keys, [markerName]: marker })
      expect(ran).toMatchObject({ code: 0, stdout: "seen\n" })

      const requests = yield* f.model.requests
      expect(requests.map(bearerOf)).toEqual([`Bearer ${keys.OPENAI_API_KEY}`, `Bearer ${keys.OPENAI_API_KEY}`])
      const output = envOutput(requests)
      expect(output).toContain(`${markerName}=${marker}`)
      expect(output).not.toMatch(/truncated/i)
      for (const [name, value] of Object.entries(keys)) {
        expect(output, name).not.toContain(value)
        expect(output, name).not.toContain(`${name}=`)
      }
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("a variable the CODEX_HOME's config.toml excludes stays out of `env` too: the harness adds its own names to that list", () =>
    Effect.gen(function* () {
      const f = yield* runsEnv()
      // the private CODEX_HOME a --provider-url session gets, with the user's own policy in it
      const codexHome = path.join(f.stateDir, "codex-home")
      fs.mkdirSync(codexHome, { recursive: true, mode: 0o700 })
      fs.writeFileSync(path.join(codexHome, "config.toml"), '[shell_environment_policy]\nexclude = ["MY_SECRET*"]\n', { mode: 0o600 })
      const hidden = `hidden-${crypto.randomUUID()}`
      const key = secret("openai")
      const marker = `visible-${crypto.randomUUID()}`
      const ran = yield* run(f, [], { MY_SECRET_X: hidden, OPENAI_API_KEY: key, [markerName]: marker })
      expect(ran).toMatchObject({ code: 0, stdout: "seen\n" })

      const output = envOutput(yield* f.model.requests)
      expect(output).toContain(`${markerName}=${marker}`)
      expect(output).not.toMatch(/truncated/i)
      // the user's pattern and the harness's names, both
      expect(output).not.toContain(hidden)
      expect(output).not.toContain("MY_SECRET_X=")
      expect(output).not.toContain(key)
      expect(output).not.toContain("OPENAI_API_KEY=")
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scopedLive("with $OPENAI_API_KEY empty the key is $CODEX_HARNESS_PROVIDER_KEY; with neither a local server gets a placeholder", () =>
    Effect.gen(function* () {
      const f = yield* fixture({ replies: [reply.text("one"), reply.text("two")] })
      const legacy = secret("legacy")
      const first = yield* run(f, ["--session", "fallback"], { OPENAI_API_KEY: "", CODEX_HARNESS_PROVIDER_KEY: legacy })
      expect(first).toMatchObject({ code: 0, stdout: "one\n" })
      const second = yield* run(f, ["--session", "placeholder"], { OPENAI_API_KEY: "", CODEX_HARNESS_PROVIDER_KEY: "" })
      expect(second).toMatchObject({ code: 0, stdout: "two\n" })
      const requests = yield* f.model.requests
      expect(requests.map(bearerOf)).toEqual([`Bearer ${legacy}`, "Bearer codex-harness-local"])
      expect(yield* leftBehind(f.stateDir)).toEqual([])
    }))

  it.scoped("a --provider-key-env that is not a variable's name is a usage error in one line that does not repeat it", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir("codex-harness-key-state-")
      const pasted = "sk-live-s3cr3t-value"
      const ran = yield* runBin(["run", "--state-dir", stateDir, "--provider-url", "http://127.0.0.1:9/v1", "--provider-key-env", pasted, "hi"])
      expect(ran.code).toBe(2)
      expect(ran.stdout).toBe("")
      expect(ran.stderr.trim().split("\n")).toHaveLength(1)
      expect(ran.stderr).toContain("--provider-key-env: expected the name of an environment variable")
      expect(ran.stderr).not.toContain("s3cr3t")
      expect(fs.existsSync(path.join(stateDir, "sessions"))).toBe(false)
    }))

  it.scoped("the config file's providerKeyEnv is decoded: a value that is not a name is refused without repeating it", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir("codex-harness-key-state-")
      fs.writeFileSync(path.join(stateDir, "config.json"), JSON.stringify({ providerKeyEnv: "sk-live-s3cr3t-value" }), { mode: 0o600 })
      const ran = yield* runBin(["run", "--state-dir", stateDir, "--provider-url", "http://127.0.0.1:9/v1", "hi"])
      expect(ran.code).toBe(1)
      expect(ran.stderr.trim().split("\n")).toHaveLength(1)
      expect(ran.stderr).toContain("providerKeyEnv: expected the name of an environment variable")
      expect(ran.stderr).not.toContain("s3cr3t")
    }))
})
