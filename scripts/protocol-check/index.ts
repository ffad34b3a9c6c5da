// The protocol contract check's public API: holds our hand-written protocol schemas (schemas/protocol.ts) to the JSON
// schema the pinned codex binary generates, so an upgrade that renames, drops or retypes something we send or read
// fails loudly here instead of at runtime. Owns `runCheck` (generate, load, compare) and the report it summarizes.
import { NodeFileSystem } from "@effect/platform-node"
import { type Duration, Effect } from "effect"
import { type CodexBinaryNotFound, type CodexCommand, resolve } from "../../src/appserver/CodexBinary.js"
import { checkContract } from "./compare.js"
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
export type { JsonSchema } from "./schema-walk.js"

export interface ProtocolCheckReport {
  readonly methods: number
  readonly notifications: number
  readonly itemKinds: number
  readonly serverRequests: number
  readonly problems: ReadonlyArray<ContractProblem>
}

export const summarize = (report: ProtocolCheckReport): ReadonlyArray<string> =>
  report.problems.length === 0
    ? [
      `protocol check: ${report.methods} methods, ${report.notifications} notifications, ` +
      `${report.itemKinds} item kinds, ${report.serverRequests} server requests checked, 0 problems`
    ]
    : report.problems.map(formatProblem)

/** Generates the pinned binary's schema into a temp dir and checks the contract against it. */
export const runCheck = (
  codexCommand?: CodexCommand,
  options: { readonly timeout?: Duration.DurationInput; readonly contract?: Contract } = {}
): Effect.Effect<ProtocolCheckReport, CodexBinaryNotFound | SchemaGenerationFailed | GeneratedSchemaInvalid> =>
  Effect.scoped(
    Effect.gen(function*() {
      const codex = codexCommand ?? (yield* resolve().pipe(Effect.provide(NodeFileSystem.layer)))
      const dir = yield* scopedTempDir("codex-protocol-check-")
      yield* generateSchema(codex, dir, options.timeout)
      const generated = yield* loadGenerated(dir)
      const contract = options.contract ?? harnessContract
      return {
        methods: Object.keys(contract.clientMethods).length,
        notifications: Object.keys(contract.notifications).length,
        itemKinds: contract.items.length,
        serverRequests: Object.keys(contract.serverRequests).length,
        problems: checkContract(generated, contract)
      }
    })
  )
