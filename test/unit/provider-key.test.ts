// Provider keys, the pure part (issue 14): which variable the key is read from, what Codex is told (the variable's name,
// never the key), what the app-server's environment gets, and the shell policy that keeps the harness's secrets out of
// every command the agent runs. The real app-server's side is test/integration/provider-key.test.ts.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as CodexArgs from "../../src/appserver/CodexArgs.js"
import * as CodexConfigToml from "../../src/appserver/CodexConfigToml.js"
import { UsageError } from "../../src/cli/errors.js"
import type { GlobalOptions } from "../../src/cli/options.js"
import { toSettings } from "../../src/cli/settings.js"
import * as HarnessConfig from "../../src/config/HarnessConfig.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import * as Runtimes from "../../src/session/Runtimes.js"
import { providerKeyConfig } from "../../src/session/SessionRuntime.js"
import { tempDir } from "../support/harness.js"

const key = "sk-test-0123456789abcdef"
const env = (vars: Record<string, string>) => (name: string) => vars[name]

describe("provider key variable", () => {
  it("a variable's name is accepted; anything else is refused in a line that never repeats it", () => {
    for (const name of ["OPENAI_API_KEY", "MY_KEY", "_k", "a1"]) expect(CodexArgs.checkProviderKeyEnv(name), name).toBeUndefined()
    for (const bad of ["", "1KEY", "MY-KEY", "MY.KEY", "MY KEY", "KEY*", "KEY?", "K=V", "KEY\n", key]) {
      const problem = CodexArgs.checkProviderKeyEnv(bad)
      expect(problem, JSON.stringify(bad)).toBe(
        "expected the name of an environment variable (letters, digits and _, not starting with a digit), not the key itself"
      )
    }
  })

  it("the key is $NAME when a variable is named, else $OPENAI_API_KEY, else $CODEX_HARNESS_PROVIDER_KEY; empty is unset", () => {
    expect(CodexArgs.providerKeyFrom(env({ MY_KEY: "mine", OPENAI_API_KEY: "openai" }), "MY_KEY")).toBe("mine")
    // a named variable that is empty gives no key: the fallback is for the default only
    expect(CodexArgs.providerKeyFrom(env({ MY_KEY: "", CODEX_HARNESS_PROVIDER_KEY: "legacy" }), "MY_KEY")).toBeUndefined()
    expect(CodexArgs.providerKeyFrom(env({ OPENAI_API_KEY: "openai", CODEX_HARNESS_PROVIDER_KEY: "legacy" }))).toBe("openai")
    expect(CodexArgs.providerKeyFrom(env({ OPENAI_API_KEY: "", CODEX_HARNESS_PROVIDER_KEY: "legacy" }))).toBe("legacy")
    expect(CodexArgs.providerKeyFrom(env({ CODEX_HARNESS_PROVIDER_KEY: "" }))).toBeUndefined()
    expect(CodexArgs.providerKeyFrom(env({}), "OPENAI_API_KEY")).toBeUndefined()
  })

  it.effect("providerKeyConfig reads the same rule from the environment Effect is given", () =>
    Effect.gen(function* () {
      const read = (vars: Record<string, string>, keyEnv?: string) =>
        Effect.withConfigProvider(providerKeyConfig(keyEnv), ConfigProvider.fromMap(new Map(Object.entries(vars))))
      expect(yield* read({ MY_KEY: "mine", OPENAI_API_KEY: "openai" }, "MY_KEY")).toBe("mine")
      expect(yield* read({ OPENAI_API_KEY: "openai" })).toBe("openai")
      expect(yield* read({ OPENAI_API_KEY: "", CODEX_HARNESS_PROVIDER_KEY: "legacy" })).toBe("legacy")
      expect(yield* read({ CODEX_HARNESS_PROVIDER_KEY: "legacy" }, "MY_KEY")).toBeUndefined()
      expect(yield* read({})).toBeUndefined()
    }))
})

describe("what Codex is given", () => {
  it("the provider's env_key names the variable (default OPENAI_API_KEY), and the environment puts the key there", () => {
    expect(CodexArgs.providerArgs("http://127.0.0.1:8080/v1", undefined)[3]).toContain('env_key="OPENAI_API_KEY"')
    expect(CodexArgs.providerArgs("http://127.0.0.1:8080/v1", "m", "MY_KEY")[3]).toContain('env_key="MY_KEY"')
    expect(CodexArgs.providerEnv(key, "MY_KEY")).toEqual({ MY_KEY: key })
    expect(CodexArgs.providerEnv(key)).toEqual({ OPENAI_API_KEY: key })
  })

  it("with no key a placeholder is set: a local server needs none, but Codex refuses a provider whose variable is empty", () => {
    expect(CodexArgs.providerEnv(undefined, "MY_KEY")).toEqual({ MY_KEY: "codex-harness-local" })
    expect(CodexArgs.providerEnv()).toEqual({ OPENAI_API_KEY: "codex-harness-local" })
  })

  it("a name that is not a variable's never reaches Codex's config", () => {
    expect(() => CodexArgs.providerArgs("http://h/v1", undefined, 'X",base_url="http://evil')).toThrow(/not the key itself/)
    expect(() => CodexArgs.providerEnv(key, "MY-KEY")).toThrow(/not the key itself/)
    expect(() => CodexArgs.shellEnvironmentArgs("*")).toThrow(/not the key itself/)
  })

  it("the agent's shell is told to drop the named variable, OPENAI_API_KEY, CODEX_HARNESS_PROVIDER_KEY, CODEX_API_KEY and the harness's own secrets (serve token, app-server token, PostgreSQL password), and only those", () => {
    expect(CodexArgs.shellEnvironmentArgs("MY_KEY")).toEqual([
      "-c",
      'shell_environment_policy.exclude=["MY_KEY","OPENAI_API_KEY","CODEX_HARNESS_PROVIDER_KEY","CODEX_API_KEY","CODEX_HARNESS_TOKEN","CODEX_HARNESS_APP_SERVER_TOKEN","PGPASSWORD","PGPASSFILE"]'
    ])
    // the default is not listed twice
    expect(CodexArgs.shellEnvironmentArgs()).toEqual([
      "-c",
      'shell_environment_policy.exclude=["OPENAI_API_KEY","CODEX_HARNESS_PROVIDER_KEY","CODEX_API_KEY","CODEX_HARNESS_TOKEN","CODEX_HARNESS_APP_SERVER_TOKEN","PGPASSWORD","PGPASSFILE"]'
    ])
    expect(CodexArgs.secretEnvNames("CODEX_API_KEY")).toEqual(["CODEX_API_KEY", "OPENAI_API_KEY", "CODEX_HARNESS_PROVIDER_KEY", "CODEX_HARNESS_TOKEN", "CODEX_HARNESS_APP_SERVER_TOKEN", "PGPASSWORD", "PGPASSFILE"])
  })

  it("the user's own exclude list comes first in the override, each pattern once, quoted as TOML strings", () => {
    expect(CodexArgs.shellEnvironmentArgs("MY_KEY", ["MY_SECRET*", "OPENAI_API_KEY", 'odd"name\\'])).toEqual([
      "-c",
      'shell_environment_policy.exclude=["MY_SECRET*","OPENAI_API_KEY","odd\\"name\\\\","MY_KEY","CODEX_HARNESS_PROVIDER_KEY","CODEX_API_KEY","CODEX_HARNESS_TOKEN","CODEX_HARNESS_APP_SERVER_TOKEN","PGPASSWORD","PGPASSFILE"]'
    ])
  })
})

describe("the CODEX_HOME's own shell_environment_policy.exclude", () => {
  it("is read as TOML: a table, a dotted key or an inline table; no list, a list of another type or a broken file give none", () => {
    expect(CodexConfigToml.shellExcludesOf('model = "m"\n[shell_environment_policy]\ninherit = "all"\nexclude = ["MY_SECRET*", \'LIT_*\']\n')).toEqual(
      Option.some(["MY_SECRET*", "LIT_*"])
    )
    expect(CodexConfigToml.shellExcludesOf('shell_environment_policy.exclude = [\n  "A", # a comment\n  "B",\n]\n[x]\ny = 1\n')).toEqual(Option.some(["A", "B"]))
    expect(CodexConfigToml.shellExcludesOf('shell_environment_policy = { exclude = ["C"] }\n')).toEqual(Option.some(["C"]))
    // a string that merely looks like the key is not the key
    expect(CodexConfigToml.shellExcludesOf('note = """\n[shell_environment_policy]\nexclude = ["NOT_THIS"]\n"""\n')).toEqual(Option.none())
    expect(CodexConfigToml.shellExcludesOf('[shell_environment_policy]\ninherit = "core"\n')).toEqual(Option.none())
    expect(CodexConfigToml.shellExcludesOf('[shell_environment_policy]\nexclude = "X"\n')).toEqual(Option.none())
    expect(CodexConfigToml.shellExcludesOf("[shell_environment_policy\n")).toEqual(Option.none())
  })

  it("CODEX_HOME is the given one, else $CODEX_HOME, else ~/.codex", () => {
    expect(CodexConfigToml.effectiveCodexHome("/given", { CODEX_HOME: "/env" })).toBe("/given")
    expect(CodexConfigToml.effectiveCodexHome(undefined, { CODEX_HOME: "/env" })).toBe("/env")
    expect(CodexConfigToml.effectiveCodexHome(undefined, { CODEX_HOME: "" })).toBe(path.join(os.homedir(), ".codex"))
  })
})

describe("the app-server client spec", () => {
  const settings: HarnessSettings = {
    stateDir: "/state",
    cwd: "/work",
    providerUrl: "http://127.0.0.1:8080/v1",
    providerKeyEnv: "MY_KEY",
    approvalPolicy: "never",
    sandbox: "read-only"
  }
  const policy = (args: ReadonlyArray<string>) => args.filter((a) => a.startsWith("shell_environment_policy."))

  it("with a provider: env_key and the key's variable agree, the key is in the environment and nowhere in argv", () => {
    const spec = Runtimes.clientSpecFor(Runtimes.runtimeFor(settings, "/home/u/.codex"), settings, key)
    expect(spec.env).toEqual({ MY_KEY: key })
    expect(spec.args!.join(" ")).toContain('env_key="MY_KEY"')
    expect(spec.args!.join(" ")).not.toContain(key)
    // the policy is built at spawn, with the CODEX_HOME's own exclude list in front (Transport, CodexConfigToml)
    expect(policy(spec.args!)).toEqual([])
    expect(spec.hiddenEnv).toEqual(["MY_KEY", "OPENAI_API_KEY", "CODEX_HARNESS_PROVIDER_KEY", "CODEX_API_KEY", "CODEX_HARNESS_TOKEN", "CODEX_HARNESS_APP_SERVER_TOKEN", "PGPASSWORD", "PGPASSFILE"])
  })

  it("with the user's own Codex configuration: no key is set, and the policy still keeps these variables from the agent", () => {
    const own = { ...settings, providerUrl: undefined, providerKeyEnv: undefined }
    const spec = Runtimes.clientSpecFor(Runtimes.runtimeFor(own, "/home/u/.codex"), own, key)
    expect(spec.env).toBeUndefined()
    expect(spec.hiddenEnv).toEqual(["OPENAI_API_KEY", "CODEX_HARNESS_PROVIDER_KEY", "CODEX_API_KEY", "CODEX_HARNESS_TOKEN", "CODEX_HARNESS_APP_SERVER_TOKEN", "PGPASSWORD", "PGPASSFILE"])
  })

  it.effect("supervision connections get the same policy, and the supervision provider's variable", () =>
    Effect.gen(function* () {
      const spec = yield* Runtimes.supervisionClientSpec(
        { enabled: true, codexHome: "/sup", providerUrl: "http://127.0.0.1:8080/v1", providerKeyEnv: "SUP_KEY" },
        "/home/u/.codex",
        key
      )
      expect(spec.env).toEqual({ SUP_KEY: key })
      expect(spec.args!.join(" ")).toContain('env_key="SUP_KEY"')
      expect(spec.hiddenEnv).toEqual(["SUP_KEY", "OPENAI_API_KEY", "CODEX_HARNESS_PROVIDER_KEY", "CODEX_API_KEY", "CODEX_HARNESS_TOKEN", "CODEX_HARNESS_APP_SERVER_TOKEN", "PGPASSWORD", "PGPASSFILE"])
    }))
})

describe("the config file and the flag", () => {
  it("providerKeyEnv decodes as a variable's name; anything else is refused without repeating the value", () => {
    expect(Either.getOrThrow(HarnessConfig.decode("c.json", '{"providerKeyEnv":"MY_KEY"}')).providerKeyEnv).toBe("MY_KEY")
    const refused = HarnessConfig.decode("c.json", `{"providerKeyEnv":"${key}"}`)
    expect(Either.isLeft(refused)).toBe(true)
    const message = Either.isLeft(refused) ? refused.left.message : ""
    expect(message).toBe(
      "c.json: providerKeyEnv: expected the name of an environment variable (letters, digits and _, not starting with a digit), not the key itself"
    )
    expect(message).not.toContain("0123456789abcdef")
    const schema = HarnessConfig.jsonSchema() as { readonly properties: Record<string, unknown> }
    expect(schema.properties.providerKeyEnv).toMatchObject({ type: "string", pattern: "^[A-Za-z_][A-Za-z0-9_]*$" })
  })

  it("the flag wins over the file; unset, the file's name is used; neither: none (the default applies)", () => {
    expect(HarnessConfig.merge({ providerKeyEnv: "FILE_KEY" }, { providerKeyEnv: "FLAG_KEY" }).providerKeyEnv).toBe("FLAG_KEY")
    expect(HarnessConfig.merge({ providerKeyEnv: "FILE_KEY" }, {}).providerKeyEnv).toBe("FILE_KEY")
    expect("providerKeyEnv" in HarnessConfig.merge({}, {})).toBe(false)
  })

  const options = (stateDir: string, overrides: Partial<GlobalOptions>): GlobalOptions => ({
    cwd: Option.none(),
    stateDir: Option.some(stateDir),
    codexHome: Option.none(),
    userCodexHome: false,
    model: Option.none(),
    providerUrl: Option.some("http://127.0.0.1:8080/v1"),
    providerKeyEnv: Option.none(),
    approvalPolicy: Option.none(),
    sandbox: Option.none(),
    config: Option.none(),
    codexBin: Option.none(),
    appServer: Option.none(),
    supervisionHome: Option.none(),
    timeout: Option.none(),
    json: false,
    approvals: "deny",
    ...overrides
  })

  it.scoped("--provider-key-env reaches the settings and supervision's; a bad name is a UsageError before the config is read", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir("codex-harness-key-unit-")
      fs.writeFileSync(`${stateDir}/config.json`, '{"providerKeyEnv":"FILE_KEY"}', { mode: 0o600 })
      const flagged = yield* toSettings(options(stateDir, { providerKeyEnv: Option.some("FLAG_KEY") }))
      expect(flagged.providerKeyEnv).toBe("FLAG_KEY")
      expect(flagged.supervision?.providerKeyEnv).toBe("FLAG_KEY")
      expect((yield* toSettings(options(stateDir, {}))).providerKeyEnv).toBe("FILE_KEY")
      // a broken config file would fail otherwise: the flag is checked first
      fs.writeFileSync(`${stateDir}/config.json`, "{", { mode: 0o600 })
      const bad = yield* Effect.flip(toSettings(options(stateDir, { providerKeyEnv: Option.some(key) })))
      expect(bad).toBeInstanceOf(UsageError)
      expect(bad.message).toBe(
        "--provider-key-env: expected the name of an environment variable (letters, digits and _, not starting with a digit), not the key itself"
      )
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
