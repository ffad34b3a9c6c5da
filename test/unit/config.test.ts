// The harness config file: decoding with one-line errors that name the field, loading, merging, the JSON Schema, the CLI.
import { Command } from "@effect/cli"
import { NodeContext, NodeFileSystem } from "@effect/platform-node"
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as ConfigCommand from "../../src/cli/commands/config.js"
import * as HarnessConfig from "../../src/config/HarnessConfig.js"
import * as Runtimes from "../../src/session/Runtimes.js"

/** The examples of the README's "Config file" section, verbatim. */
const readmeExamples = {
  local: `{
  "$schema": "./config.schema.json",
  "providerUrl": "http://127.0.0.1:8080/v1",
  "model": "local-model"
}`,
  full: `{
  "model": "gpt-5.5",
  "approvalPolicy": "on-request",
  "sandbox": "workspace-write",
  "approvalsReviewer": "auto_review",
  "serviceTier": "flex",
  "codexHome": "~/.codex-harness/codex-home",
  "messages": {
    "visibleReplies": "message_tool",
    "queue": { "mode": "steer", "quietWindowMs": 750 }
  },
  "nativeHookRelay": { "events": ["pre_tool_use", "post_tool_use", "permission_request", "stop"] },
  "compaction": { "timeoutSeconds": 300, "interruptGraceSeconds": 20 },
  "approvals": { "allowAlwaysWindowMinutes": 15, "allowAlwaysMaxEntries": 256 },
  "appServer": { "requestTimeoutSeconds": 90, "idleTimeToLiveSeconds": 300 },
  "heartbeat": { "cronScratchPath": "heartbeat/scratch.md" }
}`,
  queue: `{
  "messages": { "queue": { "mode": "followup" } }
}`
}

const decodeText = (text: string) => HarnessConfig.decode("config.json", text)
const decodeValue = (value: unknown) => HarnessConfig.decodeValue("config.json", value)

/** the one-line message a value fails with */
const failure = (value: unknown): string => {
  const result = decodeValue(value)
  if (Either.isRight(result)) throw new Error(`decoded, but should not have: ${JSON.stringify(value)}`)
  expect(result.left._tag).toBe("ConfigInvalid")
  expect(result.left.message).not.toMatch(/\n/)
  return result.left.message
}

const tempDirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "codex-harness-config-test-"))
  tempDirs.push(dir)
  return dir
}
afterEach(() => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
  vi.restoreAllMocks()
})

describe("HarnessConfig", () => {
  it("[config] a full file decodes to exactly what it says", () => {
    const result = decodeText(readmeExamples.full)
    expect(Either.isRight(result)).toBe(true)
    expect(Either.getOrThrow(result)).toEqual(JSON.parse(readmeExamples.full))
    // an empty object is a valid (empty) config, and so is a file with a byte-order mark
    expect(Either.getOrThrow(decodeText("{}"))).toEqual({})
    expect(Either.getOrThrow(decodeText('\uFEFF{ "model": "m" }'))).toEqual({ model: "m" })
  })

  it("[config] each bad value names its field and what it expects, in one line", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ messages: { visibleReplies: "loud" } }, 'messages.visibleReplies: expected "automatic" | "message_tool", got "loud"'],
      [{ approvalPolicy: "sometimes" }, 'approvalPolicy: expected "untrusted" | "on-request" | "never", got "sometimes"'],
      [{ sandbox: "none" }, 'sandbox: expected "read-only" | "workspace-write" | "danger-full-access", got "none"'],
      [{ approvalsReviewer: "guardian_subagent" }, 'approvalsReviewer: expected "user" | "auto_review", got "guardian_subagent"'],
      [{ providerUrl: "ftp://example.com" }, 'providerUrl: expected an http(s) URL, got "ftp://example.com"'],
      [{ providerUrl: "localhost:8080" }, 'providerUrl: expected an http(s) URL, got "localhost:8080"'],
      [{ providerUrl: 8080 }, "providerUrl: expected an http(s) URL, got 8080"],
      [{ model: "" }, 'model: expected a non-empty string, got ""'],
      [{ model: 5 }, "model: expected a non-empty string, got 5"],
      [{ serviceTier: null }, "serviceTier: expected a non-empty string, got null"],
      [{ codexHome: ["a"] }, 'codexHome: expected a non-empty string, got ["a"]'],
      [{ codexBin: false }, "codexBin: expected a non-empty string, got false"],
      [{ messages: "loud" }, 'messages: expected an object, got "loud"'],
      [{ messages: { queue: { mode: "later" } } }, 'messages.queue.mode: expected "steer" | "followup" | "collect", got "later"'],
      [{ messages: { queue: { quietWindowMs: -1 } } }, "messages.queue.quietWindowMs: expected a non-negative integer, got -1"],
      [{ messages: { queue: { quietWindowMs: 1.5 } } }, "messages.queue.quietWindowMs: expected a non-negative integer, got 1.5"],
      [{ messages: { queue: [] } }, "messages.queue: expected an object, got []"],
      [
        { nativeHookRelay: { events: ["stop", "session_start"] } },
        'nativeHookRelay.events[1]: expected "pre_tool_use" | "post_tool_use" | "permission_request" | "stop", got "session_start"'
      ],
      [{ nativeHookRelay: { events: "stop" } }, 'nativeHookRelay.events: expected an array, got "stop"'],
      [{ compaction: { timeoutSeconds: 0 } }, "compaction.timeoutSeconds: expected a positive integer, got 0"],
      [{ compaction: { timeoutSeconds: "180" } }, 'compaction.timeoutSeconds: expected a positive integer, got "180"'],
      [{ compaction: { timeoutSeconds: 1e400 } }, "compaction.timeoutSeconds: expected a positive integer, got Infinity"],
      [{ compaction: { interruptGraceSeconds: 2.5 } }, "compaction.interruptGraceSeconds: expected a positive integer, got 2.5"],
      [{ approvals: { allowAlwaysWindowMinutes: -5 } }, "approvals.allowAlwaysWindowMinutes: expected a positive integer, got -5"],
      [{ approvals: { allowAlwaysMaxEntries: null } }, "approvals.allowAlwaysMaxEntries: expected a positive integer, got null"],
      [{ appServer: { requestTimeoutSeconds: 0 } }, "appServer.requestTimeoutSeconds: expected a positive integer, got 0"],
      [{ appServer: { idleTimeToLiveSeconds: true } }, "appServer.idleTimeToLiveSeconds: expected a positive integer, got true"],
      [{ heartbeat: { cronScratchPath: 7 } }, "heartbeat.cronScratchPath: expected a non-empty string, got 7"],
      [{ questions: { timeoutSeconds: 0 } }, "questions.timeoutSeconds: expected a positive integer, got 0"],
      [{ supervision: { enabled: "no" } }, 'supervision.enabled: expected true or false, got "no"'],
      [{ mcpServers: { elic: { args: ["x"] } } }, "mcpServers.elic.command: is missing"],
      [{ apps: { plugins: { demo: { allow: ["a"] } } } }, 'apps.plugins.demo: unknown key, expected one of a string matching the pattern ^[^@\\s]+@[^@\\s]+$'],
      [{ apps: { disabledPlugins: "x@y" } }, 'apps.disabledPlugins: expected an array of plugin ids, got "x@y"'],
      [{ apps: { plugins: { "demo@m": { allow: "a" } } } }, 'apps.plugins.demo@m.allow: expected an array of app ids, got "a"'],
      [{ mcpServers: { elic: { command: "node", args: [1] } } }, "mcpServers.elic.args: expected an array of strings, got [1]"],
      [
        { mcpServers: { elic: { command: "node", defaultToolsApprovalMode: "always" } } },
        'mcpServers.elic.defaultToolsApprovalMode: expected "approve" | "prompt", got "always"'
      ]
    ]
    for (const [value, expected] of cases) {
      expect(failure(value)).toBe(`config.json: ${expected}`)
    }
    // the whole file
    expect(failure([])).toBe("config.json: expected an object, got []")
    expect(failure(null)).toBe("config.json: expected an object, got null")
    // a long value is shortened
    expect(failure({ model: { text: "x".repeat(200) } })).toMatch(/^config\.json: model: expected a non-empty string, got \{"text":"x+\.\.\.$/)
    // the first problem, and how many more
    expect(failure({ sandbox: "none", compaction: { timeoutSeconds: 0, interruptGraceSeconds: 0 } })).toBe(
      'config.json: sandbox: expected "read-only" | "workspace-write" | "danger-full-access", got "none" (and 2 more problems)'
    )
    expect(failure({ sandbox: "none", model: "" })).toMatch(/\(and 1 more problem\)$/)
    const invalid = decodeValue({ compaction: { timeoutSeconds: 0 } })
    expect(Either.isLeft(invalid) && invalid.left).toMatchObject({
      _tag: "ConfigInvalid",
      file: "config.json",
      field: "compaction.timeoutSeconds",
      problem: "expected a positive integer, got 0",
      more: 0
    })
  })

  it("[config] an unknown key is an error that names the key, at any depth", () => {
    expect(failure({ modle: "gpt-5.5" })).toBe('config.json: modle: unknown key (did you mean "model"?)')
    expect(failure({ messages: { visibleReply: "automatic" } })).toBe(
      'config.json: messages.visibleReply: unknown key (did you mean "visibleReplies"?)'
    )
    expect(failure({ compaction: { timeout: 10 } })).toMatch(
      /^config\.json: compaction\.timeout: unknown key, expected one of "timeoutSeconds" \| "interruptGraceSeconds"$/
    )
    expect(failure({ agents: {} })).toMatch(/^config\.json: agents: unknown key, expected one of "\$schema" \| "model" \| /)
    expect(failure({ heartbeat: { cronScratchPath: "x", every: "1h" } })).toMatch(/^config\.json: heartbeat\.every: unknown key/)
    // valid keys in the same file do not hide it
    expect(failure({ model: "m", Sandbox: "read-only" })).toBe('config.json: Sandbox: unknown key (did you mean "sandbox"?)')
  })

  it("[config] invalid JSON reports the line and column", () => {
    const cases: ReadonlyArray<readonly [string, number, number, string]> = [
      ['{\n  "model": "m",\n}', 3, 1, "trailing comma"],
      ['{\n  "model": "m"\n  "sandbox": "read-only"\n}', 3, 3, 'unexpected "\\"", expected "," or "}"'],
      ['{\n  // a comment\n  "model": "m"\n}', 2, 3, 'unexpected "/", expected a property name in double quotes'],
      ["{\n  model: 'm'\n}", 2, 3, 'unexpected "m", expected a property name in double quotes'],
      ['{\n  "model": "m\n"}', 2, 14, "control character (e.g. a raw newline) in a string"],
      ['{ "events": ["stop",] }', 1, 21, "trailing comma"],
      ['{ "model": "m"', 1, 15, 'unexpected end of file, expected "," or "}"'],
      ["", 1, 1, "unexpected end of file, expected a value"],
      ['{ "a": 1 } x', 1, 12, 'unexpected "x" after the end of the JSON value'],
      ['{ "a": 01 }', 1, 9, 'unexpected "1", expected "," or "}"'],
      ['{ "a": tru }', 1, 8, 'unexpected "t", expected a value']
    ]
    for (const [text, line, column, reason] of cases) {
      const result = decodeText(text)
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "ConfigSyntaxError", line, column, reason })
      if (Either.isLeft(result)) {
        expect(result.left.message).toBe(`config.json: invalid JSON at line ${line}, column ${column}: ${reason}`)
      }
    }
  })

  it.effect("[config] a missing default file is the empty config; a missing --config file is an error", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const file = HarnessConfig.defaultPath(dir)
      expect(file).toBe(path.join(dir, "config.json"))
      expect(yield* HarnessConfig.load(file, { required: false })).toEqual({})
      const missing = yield* Effect.flip(HarnessConfig.load(file, { required: true }))
      expect(missing).toMatchObject({ _tag: "ConfigNotFound", file })
      expect(missing.message).toBe(`${file}: no such config file`)
      // a directory in its place is an error either way, not an empty config
      fs.mkdirSync(file)
      const unreadable = yield* Effect.flip(HarnessConfig.load(file, { required: false }))
      expect(unreadable).toMatchObject({ _tag: "ConfigUnreadable", file })
      expect(unreadable.message).toBe(`${file}: cannot read the config file: it is a directory`)
    }).pipe(Effect.provide(NodeFileSystem.layer))
  )

  it.effect("[config] load reports the file's path in every error, and reads path values relative to the file", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const file = path.join(dir, "config.json")
      fs.writeFileSync(file, '{ "sandbox": "all" }')
      const invalid = yield* Effect.flip(HarnessConfig.load(file, { required: false }))
      expect(invalid.message).toBe(`${file}: sandbox: expected "read-only" | "workspace-write" | "danger-full-access", got "all"`)
      fs.writeFileSync(file, "{\n  \"model\": 'm'\n}")
      const syntax = yield* Effect.flip(HarnessConfig.load(file, { required: true }))
      expect(syntax.message).toBe(`${file}: invalid JSON at line 2, column 12: unexpected "'", expected a value`)

      fs.writeFileSync(
        file,
        JSON.stringify({
          codexHome: "home",
          codexBin: "../bin/codex",
          heartbeat: { cronScratchPath: "~/scratch.md" },
          turnContext: { systemPromptPath: "prompt.txt", skillsPath: "skills", memory: "off" },
          supervision: { codexHome: "native" }
        })
      )
      expect(yield* HarnessConfig.load(file, { required: true })).toEqual({
        codexHome: path.join(dir, "home"),
        codexBin: path.join(path.dirname(dir), "bin", "codex"),
        heartbeat: { cronScratchPath: path.join(os.homedir(), "scratch.md") },
        turnContext: { systemPromptPath: path.join(dir, "prompt.txt"), skillsPath: path.join(dir, "skills"), memory: "off" },
        supervision: { codexHome: path.join(dir, "native") }
      })
      fs.writeFileSync(file, JSON.stringify({ codexHome: "/abs/home" }))
      expect(yield* HarnessConfig.load(file, { required: true })).toEqual({ codexHome: "/abs/home" })
    }).pipe(Effect.provide(NodeFileSystem.layer))
  )

  it("[config] merge: flags win over the file, the file wins over the defaults", () => {
    const d = HarnessConfig.ConfigDefaults
    expect(d).toMatchObject({
      approvalPolicy: "never",
      sandbox: "read-only",
      messages: { visibleReplies: "automatic", queue: { mode: "steer", quietWindowMs: 500 } },
      compaction: { timeoutSeconds: 180, interruptGraceSeconds: 30 },
      approvals: { allowAlwaysWindowMinutes: 30, allowAlwaysMaxEntries: 512 },
      appServer: { requestTimeoutSeconds: 60, idleTimeToLiveSeconds: 120 }
    })
    // nothing set: the defaults, and no keys for settings without one
    expect(HarnessConfig.merge({})).toEqual({
      approvalPolicy: "never",
      sandbox: "read-only",
      messages: { visibleReplies: "automatic", queue: { mode: "steer", quietWindowMs: 500 } },
      nativeHookRelay: { events: ["pre_tool_use", "post_tool_use", "permission_request", "stop"] },
      compaction: { timeoutSeconds: 180, interruptGraceSeconds: 30 },
      approvals: { allowAlwaysWindowMinutes: 30, allowAlwaysMaxEntries: 512 },
      appServer: { requestTimeoutSeconds: 60, idleTimeToLiveSeconds: 120, experimental: { sandboxExecServer: false } },
      heartbeat: {},
      turnContext: {},
      questions: { timeoutSeconds: 600 },
      turns: { timeoutSeconds: 3600, silenceSeconds: 300 },
      supervision: { enabled: true }
    })
    const file = Either.getOrThrow(
      decodeValue({
        model: "file-model",
        sandbox: "workspace-write",
        approvalPolicy: "on-request",
        codexBin: "/file/codex",
        messages: { queue: { quietWindowMs: 0 } },
        compaction: { timeoutSeconds: 5 }
      })
    )
    // the file over the defaults; a partial section keeps the other defaults
    const fromFile = HarnessConfig.merge(file)
    expect(fromFile).toMatchObject({
      model: "file-model",
      sandbox: "workspace-write",
      approvalPolicy: "on-request",
      codexBin: "/file/codex",
      messages: { visibleReplies: "automatic", queue: { mode: "steer", quietWindowMs: 0 } },
      compaction: { timeoutSeconds: 5, interruptGraceSeconds: 30 }
    })
    // [S20] approvals on: PermissionRequest is not relayed by default...
    expect(fromFile.nativeHookRelay.events).toEqual(["pre_tool_use", "post_tool_use", "stop"])
    // ...unless the file names it
    expect(
      HarnessConfig.merge({ ...file, nativeHookRelay: { events: ["permission_request"] } }).nativeHookRelay.events
    ).toEqual(["permission_request"])
    // flags over the file; a flag that was not given (undefined) changes nothing
    const withFlags = HarnessConfig.merge(file, {
      model: "flag-model",
      sandbox: "danger-full-access",
      approvalPolicy: "never",
      providerUrl: "http://127.0.0.1:9/v1",
      codexBin: undefined,
      codexHome: undefined
    })
    expect(withFlags).toMatchObject({
      model: "flag-model",
      sandbox: "danger-full-access",
      approvalPolicy: "never",
      providerUrl: "http://127.0.0.1:9/v1",
      codexBin: "/file/codex"
    })
    expect("codexHome" in withFlags).toBe(false)
    // the derived hook default follows the effective (flag) policy
    expect(withFlags.nativeHookRelay.events).toContain("permission_request")
  })

  it("[S14] the CODEX_HOME a new session gets: the agent's own unless a path or userCodexHome names one; a flag replaces the file's choice", () => {
    const settings = { stateDir: "/state", cwd: "/w", approvalPolicy: "never", sandbox: "read-only" } as const
    const home = (over: object) => Runtimes.runtimeFor({ ...settings, ...over }, "/home/me/.codex").codexHome
    expect(home({})).toBe("/state/codex-home")
    // with or without a provider URL: ordinary turns stay agent-scoped
    expect(home({ providerUrl: "http://127.0.0.1:9/v1" })).toBe("/state/codex-home")
    expect(home({ userCodexHome: true })).toBe("/home/me/.codex")
    expect(home({ userCodexHome: true, codexHome: "/named" })).toBe("/named")

    expect(HarnessConfig.merge({ userCodexHome: true }, {})).toMatchObject({ userCodexHome: true })
    expect("userCodexHome" in HarnessConfig.merge({ userCodexHome: false }, {})).toBe(false)
    const flagPath = HarnessConfig.merge({ userCodexHome: true }, { codexHome: "/flag" })
    expect(flagPath.codexHome).toBe("/flag")
    expect("userCodexHome" in flagPath).toBe(false)
    const flagUser = HarnessConfig.merge({ codexHome: "/file" }, { userCodexHome: true })
    expect(flagUser.userCodexHome).toBe(true)
    expect("codexHome" in flagUser).toBe(false)
    expect(Either.isLeft(HarnessConfig.decode("c.json", '{"userCodexHome": "yes"}'))).toBe(true)
  })

  it("[config] the JSON Schema has every documented key, its description and default, and no additional properties", () => {
    const schema = HarnessConfig.jsonSchema() as any
    expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#")
    expect(schema.type).toBe("object")
    expect(Object.keys(schema.properties).sort()).toEqual(
      [
        "$schema",
        "model",
        "providerUrl",
        "providerKeyEnv",
        "approvalPolicy",
        "sandbox",
        "serve",
        "approvalsReviewer",
        "serviceTier",
        "codexHome",
        "userCodexHome",
        "codexBin",
        "messages",
        "nativeHookRelay",
        "compaction",
        "approvals",
        "appServer",
        "heartbeat",
        "turnContext",
        "questions",
        "turns",
        "mcpServers",
        "supervision",
        "apps"
      ].sort()
    )
    const p = schema.properties
    expect(p.approvalPolicy).toMatchObject({ enum: ["untrusted", "on-request", "never"], default: "never" })
    expect(p.sandbox).toMatchObject({ enum: ["read-only", "workspace-write", "danger-full-access"], default: "read-only" })
    expect(p.approvalsReviewer).toMatchObject({ enum: ["user", "auto_review"] })
    expect(p.providerUrl).toMatchObject({ type: "string", format: "uri", pattern: "^https?://" })
    expect(p.messages.properties.visibleReplies).toMatchObject({ enum: ["automatic", "message_tool"], default: "automatic" })
    expect(p.messages.properties.queue.properties.mode).toMatchObject({ enum: ["steer", "followup", "collect"], default: "steer" })
    expect(p.messages.properties.queue.properties.quietWindowMs).toMatchObject({ type: "integer", minimum: 0, default: 500 })
    expect(p.nativeHookRelay.properties.events).toMatchObject({
      type: "array",
      items: { enum: ["pre_tool_use", "post_tool_use", "permission_request", "stop"] }
    })
    const positive = { type: "integer", minimum: 1 }
    expect(p.compaction.properties.timeoutSeconds).toMatchObject({ ...positive, default: 180 })
    expect(p.compaction.properties.interruptGraceSeconds).toMatchObject({ ...positive, default: 30 })
    expect(p.approvals.properties.allowAlwaysWindowMinutes).toMatchObject({ ...positive, default: 30 })
    expect(p.approvals.properties.allowAlwaysMaxEntries).toMatchObject({ ...positive, default: 512 })
    expect(p.appServer.properties.requestTimeoutSeconds).toMatchObject({ ...positive, default: 60 })
    expect(p.appServer.properties.idleTimeToLiveSeconds).toMatchObject({ ...positive, default: 120 })
    expect(Object.keys(p.heartbeat.properties)).toEqual(["cronScratchPath"])
    expect(p.turnContext.properties.route).toMatchObject({ enum: ["native", "compatibility"], default: "native" })
    expect(p.turnContext.properties.memory).toMatchObject({ enum: ["tools", "inline", "off"] })

    // every object is closed, and every property is described; no $ref indirection for an editor to chase
    const objects: Array<string> = []
    const walk = (node: any, at: string) => {
      if (node.type === "object") {
        objects.push(at)
        if (node.patternProperties !== undefined) {
          // a map (mcpServers): its keys are constrained by name instead, and each value is walked
          expect(node.propertyNames?.pattern, at).toBeDefined()
          for (const child of Object.values<any>(node.patternProperties)) walk(child, `${at}.*`)
          return
        }
        // a string map (an MCP server's env) is open by design; every other object is closed
        if (Object.keys(node.properties).length > 0) expect(node.additionalProperties, at).toBe(false)
        for (const [key, child] of Object.entries<any>(node.properties)) {
          expect(typeof child.description === "string" && child.description.length > 10, `${at}.${key}`).toBe(true)
          walk(child, `${at}.${key}`)
        }
      }
    }
    walk(schema, "config")
    expect(objects.sort()).toEqual(
      [
        "config",
        "config.messages",
        "config.messages.queue",
        "config.nativeHookRelay",
        "config.compaction",
        "config.approvals",
        "config.appServer",
        "config.appServer.experimental",
        "config.heartbeat",
        "config.turnContext",
        "config.questions",
        "config.serve",
        "config.turns",
        "config.supervision",
        "config.mcpServers",
        "config.mcpServers.*",
        "config.mcpServers.*.env",
        "config.apps",
        "config.apps.plugins",
        "config.apps.plugins.*"
      ].sort()
    )
    expect(JSON.stringify(schema)).not.toContain("$ref")
  })

  it("[config] every README example decodes, and the effective config is itself a valid config file", () => {
    // the JSON blocks of the README's "Config file" section, read from the README itself so the two cannot drift
    const readme = fs.readFileSync(path.join(__dirname, "..", "..", "README.md"), "utf8")
    const section = readme.slice(readme.indexOf("## Config file"), readme.indexOf("## Embedding"))
    const blocks = [...section.matchAll(/```json\n([\s\S]*?)```/g)].map((m, i) => [`README block ${i + 1}`, m[1]!] as const)
    expect(blocks.length).toBeGreaterThan(0)
    for (const [name, text] of [...Object.entries(readmeExamples), ...blocks]) {
      const decoded = decodeText(text)
      expect(Either.isRight(decoded), `${name}: ${Either.isLeft(decoded) ? decoded.left.message : ""}`).toBe(true)
      const effective = HarnessConfig.merge(Either.getOrThrow(decoded))
      const again = decodeValue(JSON.parse(JSON.stringify(effective)))
      expect(Either.isRight(again), name).toBe(true)
      expect(HarnessConfig.merge(Either.getOrThrow(again))).toEqual(effective)
      // the schema validates it too
      expect(Schema.is(HarnessConfig.HarnessConfig)(JSON.parse(text))).toBe(true)
    }
  })
})

describe("codex-harness config", () => {
  const run = (args: ReadonlyArray<string>) =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      vi.spyOn(console, "log").mockImplementation((...parts: Array<unknown>) => void lines.push(parts.map(String).join(" ")))
      const exit = yield* Command.run(ConfigCommand.command, { name: "codex-harness config", version: "test" })([
        "node",
        "codex-harness",
        ...args
      ]).pipe(Effect.provide(NodeContext.layer), Effect.exit)
      vi.restoreAllMocks()
      return { exit, stdout: lines.join("\n") }
    })

  it.effect("[config] `config schema` prints the JSON Schema", () =>
    Effect.gen(function* () {
      const { exit, stdout } = yield* run(["schema"])
      expect(exit._tag).toBe("Success")
      expect(JSON.parse(stdout)).toEqual(HarnessConfig.jsonSchema())
      expect(stdout).toContain('\n  "type": "object"')
    })
  )

  it.effect("[config] `config show` prints the effective config: flags over <state-dir>/config.json over defaults", () =>
    Effect.gen(function* () {
      const stateDir = tempDir()
      const none = yield* run(["show", "--state-dir", stateDir])
      expect(none.exit._tag).toBe("Success")
      expect(JSON.parse(none.stdout)).toEqual(HarnessConfig.merge({}))

      fs.writeFileSync(
        path.join(stateDir, "config.json"),
        JSON.stringify({ model: "file-model", sandbox: "workspace-write", codexHome: "home" })
      )
      const shown = yield* run(["show", "--state-dir", stateDir, "--model", "flag-model"])
      expect(JSON.parse(shown.stdout)).toMatchObject({
        model: "flag-model",
        sandbox: "workspace-write",
        approvalPolicy: "never",
        codexHome: path.join(stateDir, "home")
      })

      const other = path.join(tempDir(), "other.json")
      fs.writeFileSync(other, JSON.stringify({ messages: { visibleReplies: "message_tool" } }))
      const explicit = yield* run(["show", "--config", other, "--state-dir", stateDir])
      expect(JSON.parse(explicit.stdout)).toMatchObject({ messages: { visibleReplies: "message_tool" } })
      expect(JSON.parse(explicit.stdout).model).toBeUndefined()

      const missing = yield* run(["show", "--config", path.join(stateDir, "nope.json")])
      expect(missing.exit._tag).toBe("Failure")
      expect(JSON.stringify(missing.exit)).toContain("ConfigNotFound")
    })
  )
})
