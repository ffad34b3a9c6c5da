// Shared test wiring: a temporary state dir, a ScriptedModel, and the live harness layer pointed at it.
import { NodeFileSystem } from "@effect/platform-node"
import { type Duration, Effect, Layer, Schedule } from "effect"
import * as fs from "node:fs"
import * as Live from "../../layers/internal/Live.js"
import type { ClientPoolOptions, ClientPoolService } from "../../src/appserver/ClientPool.js"
import type { HarnessSettings } from "../../src/config/Settings.js"
import * as TempDir from "../../src/platform/TempDir.js"
import * as Runtimes from "../../src/session/Runtimes.js"
import * as RecordingDelivery from "../../src/testing/RecordingDelivery.js"
import * as ScriptedModel from "../../src/testing/ScriptedModel.js"

/** A temporary directory removed by the scope's finalizer. */
export const tempDir = (prefix = "codex-harness-test-") =>
  TempDir.scoped(prefix).pipe(Effect.provide(NodeFileSystem.layer), Effect.orDie)

export { isAlive } from "../../src/platform/processAlive.js"

/** Live (non-zombie) members of a process group, read from /proc: a reaped-late zombie is already dead. */
export const groupMembers = (pgid: number | undefined): ReadonlyArray<number> => {
  if (pgid === undefined) return []
  const members: Array<number> = []
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
    } catch {
      continue
    }
    // fields after the parenthesised command: state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (fields[0] !== "Z" && Number(fields[2]) === pgid) members.push(Number(entry))
  }
  return members
}

/** true while any live process of this process group exists */
export const groupAlive = (pgid: number | undefined): boolean => groupMembers(pgid).length > 0

export interface Fixture {
  readonly model: ScriptedModel.ScriptedModel
  readonly stateDir: string
  readonly workDir: string
  readonly settings: HarnessSettings
}

export const fixture = (options: ScriptedModel.ScriptedModelOptions = {}, overrides: Partial<HarnessSettings> = {}) =>
  Effect.gen(function* () {
    const model = yield* ScriptedModel.make(options)
    const stateDir = yield* tempDir("codex-harness-state-")
    const workDir = yield* tempDir("codex-harness-work-")
    const settings: HarnessSettings = {
      stateDir,
      cwd: workDir,
      providerUrl: model.url,
      model: "mock-model",
      approvalPolicy: "never",
      sandbox: "read-only",
      ...overrides
    }
    return { model, stateDir, workDir, settings } satisfies Fixture
  })

/** Builds the live harness layer into the current scope. */
export const liveContext = (settings: HarnessSettings, pool: ClientPoolOptions = {}) =>
  Layer.build(Live.layer(settings, pool).pipe(Layer.provideMerge(RecordingDelivery.layer)))

/** pids of live processes whose environment mentions `needle` (e.g. a test's private CODEX_HOME) */
export const processesMentioning = (needle: string): ReadonlyArray<number> => {
  const found: Array<number> = []
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue
      if (fs.readFileSync(`/proc/${entry}/environ`, "utf8").includes(needle)) found.push(Number(entry))
    } catch {
      // gone, or not ours to read
    }
  }
  return found
}

const cmdline = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")
  } catch {
    return ""
  }
}

/**
 * What the CLI left running: its app-server must be gone the moment it exits. Codex also starts the host's shell in a
 * session of its own (its shell snapshot), outside the app-server's process group, and a login profile can leave a
 * backgrounded child there (seen here: `pyenv rehash` from ~/.bashrc) that ends by itself within a second or so; those
 * get a few seconds before they count.
 */
export const leftBehind = (stateDir: string) =>
  Effect.gen(function* () {
    const appServers = processesMentioning(stateDir).filter((pid) => cmdline(pid).includes("app-server"))
    if (appServers.length > 0) return appServers.map((pid) => `${pid} ${cmdline(pid)}`)
    for (let i = 0; i < 50 && processesMentioning(stateDir).length > 0; i++) yield* Effect.sleep("100 millis")
    return processesMentioning(stateDir).map((pid) => `${pid} ${cmdline(pid)}`)
  })

/** every file under `dir`, recursively */
export const filesUnder = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = `${dir}/${entry.name}`
    return entry.isDirectory() ? filesUnder(full) : entry.isFile() ? [full] : []
  })

/** what the model received as the output of the call with this id (parsed when it is JSON text), from request bodies */
export const functionCallOutput = (bodies: ReadonlyArray<string>, callId: string): unknown => {
  for (const body of bodies) {
    for (const item of (JSON.parse(body) as { input?: ReadonlyArray<Record<string, unknown>> }).input ?? []) {
      if (item.type !== "function_call_output" || item.call_id !== callId) continue
      const output = item.output
      if (typeof output !== "string") return output
      try {
        return JSON.parse(output)
      } catch {
        return output
      }
    }
  }
  return undefined
}

/**
 * The runtime a new session of these settings gets (agent-scoped unless `userCodexHome`, so it does not depend on the
 * user's own home), and a lease on its shared client: the one the session's turns use.
 */
export const ordinaryRuntime = (settings: HarnessSettings) => Runtimes.runtimeFor(settings, "/nonexistent/user-codex-home")
export const leaseSessionClient = (pool: ClientPoolService, settings: HarnessSettings) => {
  const runtime = ordinaryRuntime(settings)
  return pool.lease(runtime.poolKey, Runtimes.clientSpecFor(runtime, settings))
}

/**
 * A CODEX_HOME in which codex 0.171 offers its native `image_gen` tool fully offline, against the scripted model at
 * `modelUrl` ("http://127.0.0.1:PORT/v1"): the tool is only offered with `features.image_generation` and a ChatGPT
 * login, so this writes an auth.json whose tokens are an unsigned JWT (Codex reads its claims without checking a
 * signature), points the built-in provider (`openai_base_url`, Responses and Images API) and every ChatGPT backend call
 * (`chatgpt_base_url`) at the scripted server, and turns request compression off (with a ChatGPT login Codex sends
 * zstd bodies). Run the harness with `codexHome` set to it and no `providerUrl`.
 */
export const imageGenerationHome = (codexHome: string, modelUrl: string): string => {
  fs.mkdirSync(codexHome, { recursive: true })
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
  const exp = Math.floor(Date.now() / 1000) + 30 * 24 * 3600
  const auth = { chatgpt_plan_type: "plus", chatgpt_user_id: "user-test", chatgpt_account_id: "acct-test", user_id: "user-test" }
  const claims = { email: "test@example.com", exp, iat: exp - 60, "https://api.openai.com/auth": auth }
  const token = `${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.unsigned`
  fs.writeFileSync(
    `${codexHome}/auth.json`,
    JSON.stringify({
      auth_mode: "chatgpt",
      OPENAI_API_KEY: null,
      tokens: { id_token: token, access_token: token, refresh_token: "unused", account_id: "acct-test" },
      last_refresh: new Date().toISOString()
    })
  )
  const origin = new URL(modelUrl).origin
  fs.writeFileSync(
    `${codexHome}/config.toml`,
    [
      `openai_base_url = ${JSON.stringify(modelUrl)}`,
      `chatgpt_base_url = ${JSON.stringify(`${origin}/backend-api/`)}`,
      `model = "mock-model"`,
      `cli_auth_credentials_store = "file"`,
      "[features]",
      "image_generation = true",
      "enable_request_compression = false",
      ""
    ].join("\n")
  )
  return codexHome
}

/**
 * Asks `check` again (every 20 ms) until it says yes, for at most `bound`; whether it did. For state the real binary or
 * the kernel reaches a moment after the receipt a test has (an unload Codex schedules after an unsubscribe, a shell's
 * exec after it printed its pid): the answer is asserted, never the time it took.
 */
export const eventually = <E, R>(check: Effect.Effect<boolean, E, R>, bound: Duration.DurationInput = "60 seconds") =>
  check.pipe(
    Effect.repeat({ until: (yes) => yes, schedule: Schedule.spaced("20 millis") }),
    Effect.timeoutTo({ duration: bound, onTimeout: () => false, onSuccess: () => true })
  )
