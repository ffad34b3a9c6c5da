// The early spawn of a cold `run`'s app-server (issue 31, item 1), the parts that need no app-server: when the bin
// dares to guess (cli/prelaunch.ts `plan`), and the hand-over slot (appserver/Prelaunch.ts), which stops a process that
// is not the one the transport wants. That the guess is exactly the CLI's own spawn is shown end to end, on the real
// binary, in test/integration/prelaunch.test.ts.
import { describe, expect, it } from "@effect/vitest"
import { afterAll } from "vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Prelaunch from "../../src/appserver/Prelaunch.js"
import { plan } from "../../src/cli/prelaunch.js"

// every directory a test makes, removed after the file
const roots: Array<string> = []
afterAll(() => {
  for (const root of roots) fs.rmSync(root, { recursive: true, force: true })
})

const freshDirs = () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "prelaunch-"))
  roots.push(root)
  const state = path.join(root, "state")
  fs.mkdirSync(state, { mode: 0o700 })
  return { root, state }
}
const env = { PATH: process.env.PATH, HOME: os.tmpdir() }
const url = "http://127.0.0.1:9/v1"

describe("cli/prelaunch plan", () => {
  it("works out the app-server of a new session: CODEX_HOME under the state dir, the provider's overrides, the key only in the environment", () => {
    const { state } = freshDirs()
    const planned = plan(["--state-dir", state, "--provider-url", url, "--provider-key-env", "MY_KEY", "hello"], { ...env, MY_KEY: "sk-secret" })
    expect(planned).toBeDefined()
    expect(planned!.codexHome).toBe(path.join(state, "codex-home"))
    expect(planned!.env.CODEX_HOME).toBe(path.join(state, "codex-home"))
    expect(planned!.env.MY_KEY).toBe("sk-secret")
    expect(planned!.argv.slice(-1)).toEqual(["app-server"])
    expect(planned!.argv.join(" ")).toContain(`base_url="${url}"`)
    expect(planned!.argv.join(" ")).toContain('env_key="MY_KEY"')
    expect(planned!.argv.join(" ")).not.toContain("sk-secret")
    // the state dir from the environment, and --flag=value
    expect(plan([`--provider-url=${url}`, "hi"], { ...env, CODEX_HARNESS_HOME: state })?.codexHome).toBe(path.join(state, "codex-home"))
    expect(plan(["--state-dir", state, "--codex-home", path.join(state, "mine"), "hi"], env)?.codexHome).toBe(path.join(state, "mine"))
    // a flag after `--` is the prompt's
    expect(plan(["--state-dir", state, "--", "--config", "x"], env)).toBeDefined()
    // the overrides of $CODEX_HARNESS_APP_SERVER_CONFIG, as the CLI's own spawn has them (before the harness's)
    const overridden = plan(["--state-dir", state, "hi"], { ...env, CODEX_HARNESS_APP_SERVER_CONFIG: "features.shell_snapshot=false" })
    expect(overridden!.argv.join(" ")).toContain("-c features.shell_snapshot=false -c thread_unload_delay_secs=0")
  })

  it("leaves to the CLI every case it cannot be sure of: a config file, a serve, a remote app-server, untrusted or configured directories, bad flags", () => {
    const base = (state: string) => ["--state-dir", state, "--provider-url", url, "hi"]
    const cases: ReadonlyArray<[string, (state: string) => ReadonlyArray<string>]> = [
      ["a config file in the state dir", (state) => (fs.writeFileSync(path.join(state, "config.json"), "{}"), base(state))],
      ["a serve running for the state dir", (state) => (fs.writeFileSync(path.join(state, "serve.json"), "{}"), base(state))],
      ["--config", (state) => [...base(state), "--config", path.join(state, "c.json")]],
      ["--app-server", (state) => [...base(state), "--app-server=ws://127.0.0.1:1"]],
      ["a state dir others may write", (state) => (fs.chmodSync(state, 0o777), base(state))],
      ["a CODEX_HOME with its own config.toml", (state) => {
        fs.mkdirSync(path.join(state, "codex-home"))
        fs.writeFileSync(path.join(state, "codex-home", "config.toml"), "")
        return base(state)
      }],
      ["a provider URL with a credential", (state) => ["--state-dir", state, "--provider-url", "http://u:p@127.0.0.1/v1", "hi"]],
      ["a key variable that is not a name", (state) => [...base(state), "--provider-key-env", "sk-123"]],
      ["two CODEX_HOMEs", (state) => [...base(state), "--codex-home", state, "--user-codex-home"]],
      ["a --codex-bin that does not exist", (state) => [...base(state), "--codex-bin", path.join(state, "nope")]],
      ["a state dir that is not there yet", (state) => base(path.join(state, "new"))]
    ]
    for (const [what, args] of cases) {
      const { state } = freshDirs()
      expect(plan(args(state), env), what).toBeUndefined()
    }
    // an override line that is not key=value: the CLI reports it
    expect(plan(base(freshDirs().state), { ...env, CODEX_HARNESS_APP_SERVER_CONFIG: "nonsense" })).toBeUndefined()
  })
})

describe("appserver/Prelaunch", () => {
  const spawnOf = (argv: ReadonlyArray<string>, environment: Record<string, string>): Prelaunch.PrelaunchedSpawn => ({
    command: "sleep",
    argv,
    env: environment,
    cwd: undefined,
    initializeLine: "{}"
  })

  it("names what differs, never a value (the environment holds keys)", () => {
    const a = spawnOf(["30"], { A: "1", KEY: "sk-one" })
    expect(Prelaunch.differenceOf(a, a)).toBeUndefined()
    expect(Prelaunch.differenceOf(a, { ...a, env: { KEY: "sk-two", A: "1" } })).toBe("the environment (KEY)")
    expect(Prelaunch.differenceOf(a, { ...a, env: { A: "1", KEY: "sk-one", B: undefined } as never })).toBeUndefined()
    expect(Prelaunch.differenceOf(a, { ...a, argv: ["31"] })).toBe("the arguments")
    expect(Prelaunch.differenceOf(a, { ...a, initializeLine: "[]" })).toBe("the initialize request")
  })

  it.live("a process that is not the one wanted is stopped, and the slot is empty after one take", () =>
    Effect.gen(function* () {
      const child = spawn("sleep", ["30"], { stdio: ["pipe", "pipe", "pipe"], detached: true })
      const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
      Prelaunch.offer({
        ...spawnOf(["30"], {}),
        child,
        handOver: () => ({ chunks: [], stdoutEnded: false, stderr: "", exit: undefined }),
        discard: () => {
          process.kill(-child.pid!, "SIGKILL")
        }
      })
      expect(Prelaunch.take(spawnOf(["31"], {}))).toEqual({ _tag: "Discarded", difference: "the arguments" })
      yield* Effect.promise(() => exited).pipe(Effect.timeout("20 seconds"))
      expect(child.signalCode).toBe("SIGKILL")
      expect(Prelaunch.take(spawnOf(["30"], {}))).toEqual({ _tag: "None" })
    }))
})
