// The options every command accepts, and how they become HarnessSettings.
import { Options } from "@effect/cli"
import { Effect, Option, Schema } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as CodexArgs from "../appserver/CodexArgs.js"
import type { HarnessSettings } from "../harness/CodexHarness.js"

export const global = {
  cwd: Options.text("cwd").pipe(Options.withDescription("workspace directory for the agent (default: the current directory)"), Options.optional),
  stateDir: Options.text("state-dir").pipe(
    Options.withDescription("where sessions live (default: $CODEX_HARNESS_HOME or ~/.codex-harness)"),
    Options.optional
  ),
  codexHome: Options.text("codex-home").pipe(
    Options.withDescription("CODEX_HOME for the app-server (default: <state-dir>/codex-home with --provider-url, else your own)"),
    Options.optional
  ),
  model: Options.text("model").pipe(Options.withDescription("model to ask Codex for"), Options.optional),
  providerUrl: Options.text("provider-url").pipe(
    Options.withDescription("an OpenAI Responses API base URL, e.g. http://127.0.0.1:8080/v1"),
    Options.optional
  ),
  approvalPolicy: Options.choice("approval-policy", ["untrusted", "on-request", "never"]).pipe(
    Options.withDefault("never" as const)
  ),
  sandbox: Options.choice("sandbox", ["read-only", "workspace-write", "danger-full-access"]).pipe(
    Options.withDefault("read-only" as const)
  ),
  codexBin: Options.text("codex-bin").pipe(Options.withDescription("path to a codex executable"), Options.optional),
  json: Options.boolean("json").pipe(Options.withDescription("print one JSON event per line"))
}

export type GlobalOptions = {
  readonly [K in keyof typeof global]: (typeof global)[K] extends Options.Options<infer A> ? A : never
}

export class BadOption extends Schema.TaggedError<BadOption>()("BadOption", { option: Schema.String, reason: Schema.String }) {
  override get message() {
    return `--${this.option}: ${this.reason}`
  }
}

export const defaultStateDir = (): string =>
  process.env.CODEX_HARNESS_HOME !== undefined && process.env.CODEX_HARNESS_HOME !== ""
    ? path.resolve(process.env.CODEX_HARNESS_HOME)
    : path.join(os.homedir(), ".codex-harness")

export const toSettings = (options: GlobalOptions): Effect.Effect<HarnessSettings, BadOption> =>
  Effect.gen(function* () {
    const providerUrl = Option.getOrUndefined(options.providerUrl)
    if (providerUrl !== undefined) {
      const problem = CodexArgs.checkProviderUrl(providerUrl)
      if (problem !== undefined) return yield* Effect.fail(new BadOption({ option: "provider-url", reason: problem }))
    }
    const cwd = path.resolve(Option.getOrElse(options.cwd, () => process.cwd()))
    if (!fs.existsSync(cwd) || !fs.statSync(cwd).isDirectory()) {
      return yield* Effect.fail(new BadOption({ option: "cwd", reason: `not a directory: ${cwd}` }))
    }
    const stateDir = Option.match(options.stateDir, { onNone: defaultStateDir, onSome: (d) => path.resolve(d) })
    return {
      stateDir,
      cwd,
      codexHome: Option.getOrUndefined(Option.map(options.codexHome, (d) => path.resolve(d))),
      codexBin: Option.getOrUndefined(options.codexBin),
      providerUrl,
      model: Option.getOrUndefined(options.model),
      approvalPolicy: options.approvalPolicy,
      sandbox: options.sandbox
    }
  })
