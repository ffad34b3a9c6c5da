// The protocol contract check's public API: holds our hand-written protocol schemas (schemas/protocol.ts) to the JSON
// schema the pinned codex binary generates, so an upgrade that renames, drops or retypes something we send or read
// fails loudly here instead of at runtime; and schemas/execServer.ts (a wire the binary generates no schema for) to
// what the binary's exec-server answers. Owns `runCheck` (generate, load, compare, probe) and the report it summarizes.
import { NodeFileSystem } from "@effect/platform-node"
import { type Duration, Effect } from "effect"
import { type CodexBinaryNotFound, type CodexCommand, resolve } from "../../src/appserver/CodexBinary.js"
import { checkContract } from "./compare.js"
import { checkExecServer, type ExecServerProbeFailed } from "./execServer.js"
import { type Contract, type ContractProblem, formatProblem, harnessContract } from "./contract.js"
import {
  type GeneratedSchemaInvalid,
  generateSchema,
  loadGenerated,
  type SchemaGenerationFailed,
  scopedTempDir
} from "./generated.js"

export { checkContract } from "./compare.js"
export {
  type Contract,
  type ContractEntry,
  type ContractProblem,
  formatProblem,
  harnessContract,
  type ProblemKind,
  type ServerRequestContract
} from "./contract.js"
export {
  type GeneratedSchema,
  GeneratedSchemaInvalid,
  generateSchema,
  loadGenerated,
  SchemaGenerationFailed,
  scopedTempDir
} from "./generated.js"
export { checkExecServer, ExecServerProbeFailed, type ExecServerReport } from "./execServer.js"
export type { JsonSchema } from "./schema-walk.js"

export interface ProtocolCheckReport {
  readonly methods: number
  readonly notifications: number
  readonly itemKinds: number
  readonly serverRequests: number
  /** exec-server requests and notifications held to the binary's answers (absent with a custom contract) */
  readonly execServer?: { readonly methods: number; readonly notifications: number } | undefined
  readonly problems: ReadonlyArray<ContractProblem>
}

export const summarize = (report: ProtocolCheckReport): ReadonlyArray<string> =>
  report.problems.length === 0
    ? [
      `protocol check: ${report.methods} methods, ${report.notifications} notifications, ` +
      `${report.itemKinds} item kinds, ${report.serverRequests} server requests checked` +
      (report.execServer === undefined
        ? ""
        : `; exec-server: ${report.execServer.methods} methods, ${report.execServer.notifications} notifications checked against its answers`) +
      ", 0 problems"
    ]
    : report.problems.map(formatProblem)

/** Generates the pinned binary's schema into a temp dir and checks the contract against it. */
export const runCheck = (
  codexCommand?: CodexCommand,
  options: { readonly timeout?: Duration.DurationInput; readonly contract?: Contract } = {}
): Effect.Effect<
  ProtocolCheckReport,
  CodexBinaryNotFound | SchemaGenerationFailed | GeneratedSchemaInvalid | ExecServerProbeFailed
> =>
  Effect.scoped(
    Effect.gen(function*() {
      const codex = codexCommand ?? (yield* resolve().pipe(Effect.provide(NodeFileSystem.layer)))
      const dir = yield* scopedTempDir("codex-protocol-check-")
      yield* generateSchema(codex, dir, options.timeout)
      const generated = yield* loadGenerated(dir)
      const contract = options.contract ?? harnessContract
      // the exec-server wire belongs to the harness's own contract; a custom contract (a test's) is about the app-server
      const execServer = options.contract === undefined
        ? yield* checkExecServer(codex, yield* scopedTempDir("codex-protocol-check-home-"))
        : undefined
      return {
        methods: Object.keys(contract.clientMethods).length,
        notifications: Object.keys(contract.notifications).length,
        itemKinds: contract.items.length,
        serverRequests: Object.keys(contract.serverRequests).length,
        ...(execServer !== undefined ? { execServer: { methods: execServer.methods, notifications: execServer.notifications } } : {}),
        problems: [...checkContract(generated, contract), ...(execServer?.problems ?? [])]
      }
    })
  )
