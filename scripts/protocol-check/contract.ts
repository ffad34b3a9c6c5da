// Owns WHAT the protocol check holds to the binary: the Contract shape (client methods we call, notifications and item
// kinds we read, server requests whose params we read and whose responses we send), the harness's own contract built
// from schemas/protocol.ts, and the problems a comparison can report.
import type { Schema } from "effect"
import * as Protocol from "../../schemas/protocol.js"

/** One of our schemas and the name of the generated definition it is held to. */
export interface ContractEntry {
  readonly schema: Schema.Schema.AnyNoContext
  readonly definition: string
}

/** A request the binary sends us: we READ its params and SEND its response. */
export interface ServerRequestContract {
  readonly params: Schema.Schema.AnyNoContext
  readonly response: Schema.Schema.AnyNoContext
  /** definition names in the generated JSON schema; the binary's own method table wins for the params */
  readonly paramsDefinition: string
  readonly responseDefinition: string
}

export interface Contract {
  readonly clientMethods: Readonly<Record<string, Protocol.MethodContract>>
  readonly notifications: Readonly<Record<string, ContractEntry>>
  /** matched by title against the variants of the generated `ThreadItem` union */
  readonly items: ReadonlyArray<ContractEntry>
  readonly serverRequests: Readonly<Record<string, ServerRequestContract>>
}

export const harnessContract: Contract = {
  clientMethods: Protocol.ClientMethods,
  notifications: Protocol.ServerNotifications,
  items: Protocol.ThreadItemContracts,
  serverRequests: Protocol.ServerRequests
}

export type ProblemKind =
  | "MethodRemoved"
  | "NotificationRemoved"
  | "ServerRequestRemoved"
  | "ItemVariantRemoved"
  | "DefinitionMissing"
  | "FieldMissing"
  | "RequiredFieldMissing"
  | "FieldOptional"
  | "FieldRequired"
  | "Nullability"
  | "KindMismatch"
  | "LiteralNotInEnum"

export interface ContractProblem {
  readonly kind: ProblemKind
  /** method / notification / item, then the field path: `thread/start params.approvalPolicy` */
  readonly where: string
  readonly message: string
}

export const formatProblem = (p: ContractProblem): string => `${p.where}: ${p.message}`
