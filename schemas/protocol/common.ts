// Shapes shared by every area of the app-server protocol (0.171) the harness speaks. Decoding elsewhere keeps unknown
// fields (`onExcessProperty: "preserve"`), so a newer app-server that adds fields never breaks us.
import { Schema } from "effect"

export const optionalNullable = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(schema))

/** JSON-RPC request ids: strings or integers, never aliased ("200" and 200 differ). */
export const RequestId = Schema.Union(Schema.String, Schema.Int)
export type RequestId = typeof RequestId.Type

export const AskForApproval = Schema.Literal("untrusted", "on-request", "never")
export type AskForApproval = typeof AskForApproval.Type
export const SandboxMode = Schema.Literal("read-only", "workspace-write", "danger-full-access")
export type SandboxMode = typeof SandboxMode.Type
export const ApprovalsReviewer = Schema.Literal("user", "auto_review", "guardian_subagent")
export const Personality = Schema.Literal("none", "friendly", "pragmatic")

export const SandboxPolicy = Schema.Union(
  Schema.Struct({ type: Schema.Literal("dangerFullAccess") }),
  Schema.Struct({ type: Schema.Literal("readOnly") }),
  Schema.Struct({ type: Schema.Literal("workspaceWrite") })
)
export type SandboxPolicy = typeof SandboxPolicy.Type

/** A definition in the generated JSON schema that one of our schemas is held to by `npm run protocol:check`. */
export interface Contract {
  readonly schema: Schema.Schema.AnyNoContext
  readonly definition: string
}
