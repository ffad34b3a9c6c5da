// The settings an embedder passes to the Live layer (src/config/Settings.ts's `HarnessSettings`), as a Schema: the
// layer decodes them when it is built, so settings read from an app's environment or its own JSON that do not fit fail
// the build with `InvalidSettings` naming the field, instead of a turn failing later (or an app-server refusing an
// argument). It checks shapes and values only; whether paths exist is the start-up check's (src/harness/Startup.ts).
import { Duration, Option, Schema } from "effect"
import { NativeHookEvent } from "./config.js"
import { AskForApproval, SandboxMode } from "./protocol.js"

/** What `Duration.decode` takes: a number of milliseconds, a Duration, or text such as "30 seconds". */
export const DurationInput = Schema.declare(
  (u: unknown): u is Duration.DurationInput => Option.isSome(Duration.decodeUnknown(u)),
  { identifier: "DurationInput", description: "milliseconds, a Duration, or text such as \"30 seconds\"" }
)

const Text = Schema.String
const NonEmpty = Schema.NonEmptyTrimmedString
const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.UndefinedOr(schema))

const McpServer = Schema.Struct({
  command: NonEmpty,
  args: optional(Schema.Array(Text)),
  env: optional(Schema.Record({ key: Text, value: Text })),
  defaultToolsApprovalMode: optional(Schema.Literal("approve", "prompt"))
})

const SupervisionSettings = Schema.Struct({
  enabled: Schema.Boolean,
  codexHome: optional(NonEmpty),
  providerUrl: optional(NonEmpty),
  model: optional(NonEmpty),
  providerKeyEnv: optional(NonEmpty),
  idleTimeToLive: optional(DurationInput),
  codexBin: optional(NonEmpty),
  requestTimeout: optional(DurationInput),
  disabledReason: optional(Text)
})

const AppsSettings = Schema.Struct({
  plugins: Schema.Record({ key: Text, value: Schema.Struct({ allow: Schema.Array(Text) }) }),
  disabledPlugins: Schema.Array(Text),
  snapshotTtl: optional(DurationInput),
  readyTimeout: optional(DurationInput)
})

/** `HarnessSettings` as data; the Live layer decodes what it is given with it. */
export const HarnessSettings = Schema.Struct({
  stateDir: NonEmpty,
  cwd: NonEmpty,
  codexHome: optional(NonEmpty),
  userCodexHome: optional(Schema.Boolean),
  codexBin: optional(NonEmpty),
  providerUrl: optional(NonEmpty),
  providerKeyEnv: optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/))),
  model: optional(NonEmpty),
  approvalPolicy: AskForApproval,
  sandbox: SandboxMode,
  approvalsReviewer: optional(Schema.Literal("user", "auto_review")),
  serviceTier: optional(NonEmpty),
  visibleReplies: optional(Schema.Literal("automatic", "message_tool")),
  route: optional(Schema.Literal("native", "compatibility")),
  policyRestricted: optional(Schema.Boolean),
  channel: optional(Text),
  systemPromptPath: optional(NonEmpty),
  skillsPath: optional(NonEmpty),
  memoryMode: optional(Schema.Literal("tools", "inline", "off")),
  adapterContext: optional(Text),
  cronScratchPath: optional(NonEmpty),
  requestTimeout: optional(DurationInput),
  idleTimeToLive: optional(DurationInput),
  appServerUrl: optional(NonEmpty),
  appServerTokenEnv: optional(NonEmpty),
  sandboxExecServer: optional(Schema.Boolean),
  queueMode: optional(Schema.Literal("steer", "followup", "collect")),
  quietWindow: optional(DurationInput),
  nativeHookEvents: optional(Schema.Array(NativeHookEvent)),
  allowAlwaysWindow: optional(DurationInput),
  allowAlwaysMaxEntries: optional(Schema.Int.pipe(Schema.positive())),
  questionTimeout: optional(DurationInput),
  mcpServers: optional(Schema.Record({ key: NonEmpty, value: McpServer })),
  turnTimeout: optional(DurationInput),
  providerSilence: optional(DurationInput),
  compactionTimeout: optional(DurationInput),
  interruptGrace: optional(DurationInput),
  supervision: optional(SupervisionSettings),
  apps: optional(AppsSettings),
  logLevel: optional(Schema.Literal("All", "Trace", "Debug", "Info", "Warning", "Error", "Fatal", "None"))
})
