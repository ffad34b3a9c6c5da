// Holds our hand-written protocol schemas (schemas/protocol.ts) to the JSON schema the pinned codex binary
// generates, so an upgrade that renames, drops or retypes something we send or read fails loudly here instead of
// at runtime. The walk is over OUR schemas: fields we never touch are ignored, and wherever either side says
// "anything" we accept.
import { Duration, Effect, Schema, SchemaAST } from "effect"
import { execFile } from "node:child_process"
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Protocol from "../../schemas/protocol.js"
import { type CodexBinaryNotFound, type CodexCommand, resolve } from "./CodexBinary.js"

// ---- what we load from the generated directory ----

/** A JSON schema node as generated (draft-07): an object, or `true`/`false`. Left loose on purpose. */
export type JsonSchema = unknown

export interface GeneratedSchema {
  /** every named definition, flattened into one map; all `$ref`s in the generated files point into it */
  readonly definitions: Readonly<Record<string, JsonSchema>>
  /** client request method -> definition name of its params (undefined when the variant has no params ref) */
  readonly clientRequests: Readonly<Record<string, string | undefined>>
  /** server notification method -> definition name of its params */
  readonly serverNotifications: Readonly<Record<string, string | undefined>>
  /** server request method -> definition name of its params */
  readonly serverRequests: Readonly<Record<string, string | undefined>>
}

// ---- what we hold it to ----

export interface ContractEntry {
  readonly schema: Schema.Schema.AnyNoContext
  readonly definition: string
}

export interface Contract {
  readonly clientMethods: Readonly<Record<string, Protocol.MethodContract>>
  readonly notifications: Readonly<Record<string, ContractEntry>>
  /** matched by title against the variants of the generated `ThreadItem` union */
  readonly items: ReadonlyArray<ContractEntry>
  readonly serverRequests: ReadonlyArray<string>
  /** what every server request's params must carry for us to route it (read side) */
  readonly serverRequestParams?: Schema.Schema.AnyNoContext
}

export const harnessContract: Contract = {
  clientMethods: Protocol.ClientMethods,
  notifications: Protocol.ServerNotifications,
  items: Protocol.ThreadItemContracts,
  serverRequests: Protocol.ServerRequestMethods,
  serverRequestParams: Protocol.ThreadScopedRequestParams
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

// ---- their side: resolving JSON schema nodes ----

type Obj = { readonly [key: string]: unknown }
type Kind = "string" | "integer" | "number" | "boolean" | "array" | "object" | "null"
type Mode = "send" | "read"

const isObj = (u: unknown): u is Obj => typeof u === "object" && u !== null && !Array.isArray(u)

/** `#/definitions/X` and the bundle's `#/definitions/v2/X` both name X in our flat map. */
const refName = (ref: string): string => ref.slice(ref.lastIndexOf("/") + 1)

const shapeKeys = [
  "$ref",
  "type",
  "properties",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "oneOf",
  "anyOf",
  "allOf",
  "required"
] as const
const hasShape = (o: Obj): boolean => shapeKeys.some((k) => o[k] !== undefined)

/** Their alternatives after following refs and peeling null off; `any` when some branch accepts anything. */
interface Alternatives {
  readonly any: boolean
  readonly nullable: boolean
  readonly alts: ReadonlyArray<Obj>
}
const anything: Alternatives = { any: true, nullable: false, alts: [] }

interface Ctx {
  readonly defs: Readonly<Record<string, JsonSchema>>
  problems: Array<ContractProblem>
  /** memo so that merged variants are stable objects (and repeated walks are cheap) */
  readonly altsMemo: Map<unknown, Alternatives>
}

const merge = (base: Obj, alt: Obj): Obj => {
  const props = { ...(isObj(base.properties) ? base.properties : {}), ...(isObj(alt.properties) ? alt.properties : {}) }
  const required = [
    ...new Set([
      ...(Array.isArray(base.required) ? base.required : []),
      ...(Array.isArray(alt.required) ? alt.required : [])
    ])
  ]
  const title = base.title ?? alt.title
  return { ...base, ...alt, properties: props, required, ...(title !== undefined ? { title } : {}) }
}

/** Follows `$ref` chains and folds `allOf` into one object; undefined means "accepts anything". */
const resolveNode = (ctx: Ctx, node: JsonSchema, depth = 0): Obj | undefined => {
  if (!isObj(node) || depth > 32) return undefined
  if (typeof node.$ref === "string") return resolveNode(ctx, ctx.defs[refName(node.$ref)], depth + 1)
  if (Array.isArray(node.allOf)) {
    const { allOf, ...rest } = node
    const parts = allOf.map((m) => resolveNode(ctx, m, depth + 1)).filter((m): m is Obj => m !== undefined)
    if (parts.length === 1 && !hasShape(rest)) return parts[0]
    return parts.reduce<Obj>((acc, p) => merge(acc, p), rest)
  }
  return hasShape(node) ? node : undefined
}

const alternatives = (ctx: Ctx, node: JsonSchema, depth = 0): Alternatives => {
  const r = resolveNode(ctx, node)
  if (r === undefined || depth > 32) return anything
  const memo = ctx.altsMemo.get(r)
  if (memo !== undefined) return memo
  const result = computeAlternatives(ctx, r, depth)
  ctx.altsMemo.set(r, result)
  return result
}

const computeAlternatives = (ctx: Ctx, r: Obj, depth: number): Alternatives => {
  const branches = [...(Array.isArray(r.oneOf) ? r.oneOf : []), ...(Array.isArray(r.anyOf) ? r.anyOf : [])]
  if (branches.length > 0) {
    // Properties beside a oneOf/anyOf (ThreadItem's timestamps, ImageGeneration's fields) belong to every branch.
    const { oneOf: _o, anyOf: _a, ...base } = r
    const baseShaped = isObj(base.properties) || Array.isArray(base.required)
    let any = false
    let nullable = false
    const alts: Array<Obj> = []
    for (const b of branches) {
      const sub = alternatives(ctx, b, depth + 1)
      nullable ||= sub.nullable
      if (sub.any) {
        if (baseShaped) alts.push(base)
        else any = true
      } else {
        for (const a of sub.alts) alts.push(baseShaped ? merge(base, a) : a)
      }
    }
    return { any, nullable, alts }
  }
  const types = typeof r.type === "string" ? [r.type] : Array.isArray(r.type) ? r.type : undefined
  const values = Array.isArray(r.enum) ? r.enum : undefined
  const nullable = (types?.includes("null") ?? false) || (values?.includes(null) ?? false) || r.const === null
  if (!nullable) return { any: false, nullable, alts: [r] }
  const nonNullTypes = types?.filter((t) => t !== "null")
  const nonNullValues = values?.filter((v) => v !== null)
  const onlyNull = (nonNullTypes !== undefined && nonNullTypes.length === 0) ||
    (nonNullValues !== undefined && nonNullValues.length === 0) || r.const === null
  if (onlyNull) {
    return { any: false, nullable, alts: [] }
  }
  const alt: Obj = {
    ...r,
    ...(nonNullTypes !== undefined ? { type: nonNullTypes.length === 1 ? nonNullTypes[0] : nonNullTypes } : {}),
    ...(nonNullValues !== undefined ? { enum: nonNullValues } : {})
  }
  return { any: false, nullable, alts: [alt] }
}

const enumValues = (alt: Obj): ReadonlyArray<unknown> | undefined =>
  Array.isArray(alt.enum) ? alt.enum : alt.const !== undefined ? [alt.const] : undefined

const kindOfValue = (v: unknown): Kind | undefined =>
  typeof v === "string"
    ? "string"
    : typeof v === "boolean"
    ? "boolean"
    : typeof v === "number" || typeof v === "bigint"
    ? Number.isInteger(Number(v)) ? "integer" : "number"
    : v === null
    ? "null"
    : Array.isArray(v)
    ? "array"
    : typeof v === "object"
    ? "object"
    : undefined

/** The JSON kinds an alternative admits; undefined when it does not constrain the kind. */
const kindsOf = (alt: Obj): ReadonlySet<Kind> | undefined => {
  if (typeof alt.type === "string") return new Set([alt.type as Kind])
  if (Array.isArray(alt.type)) return new Set(alt.type as Array<Kind>)
  const values = enumValues(alt)
  if (values !== undefined) return new Set(values.map(kindOfValue).filter((k): k is Kind => k !== undefined))
  if (isObj(alt.properties) || alt.additionalProperties !== undefined || Array.isArray(alt.required)) {
    return new Set(["object"])
  }
  if (alt.items !== undefined) return new Set(["array"])
  return undefined
}

type OurKind = "string" | "number" | "boolean" | "array" | "object"
const admits = (alt: Obj, ours: OurKind): boolean => {
  const kinds = kindsOf(alt)
  if (kinds === undefined) return true
  return ours === "number" ? kinds.has("number") || kinds.has("integer") : kinds.has(ours)
}

const describeKinds = (alts: ReadonlyArray<Obj>): string => {
  const all = new Set<string>()
  for (const a of alts) for (const k of kindsOf(a) ?? ["any"]) all.add(k)
  return [...all].join(" | ") || "nothing"
}

// ---- our side: flattening an Effect Schema AST ----

type Member =
  | { readonly _tag: "literal"; readonly value: string | number | boolean | bigint }
  | { readonly _tag: "kind"; readonly kind: "string" | "number" | "boolean" | "object" }
  | { readonly _tag: "array"; readonly item: SchemaAST.AST | undefined }
  | { readonly _tag: "record"; readonly value: SchemaAST.AST }
  | { readonly _tag: "struct"; readonly ast: SchemaAST.TypeLiteral }

interface Ours {
  any: boolean
  nullable: boolean
  /** the type admits `undefined` (Schema.optional puts it there) */
  undefinedOk: boolean
  readonly members: Array<Member>
}

const flatten = (ast: SchemaAST.AST): Ours => {
  const out: Ours = { any: false, nullable: false, undefinedOk: false, members: [] }
  const go = (a: SchemaAST.AST, depth: number): void => {
    if (depth > 32) {
      out.any = true
      return
    }
    switch (a._tag) {
      // the wire carries the encoded side
      case "Refinement":
      case "Transformation":
        return go(a.from, depth + 1)
      case "Suspend":
        return go(a.f(), depth + 1)
      case "Union":
        return a.types.forEach((t) => go(t, depth + 1))
      case "Literal":
        if (a.literal === null) out.nullable = true
        else out.members.push({ _tag: "literal", value: a.literal })
        return
      case "Enums":
        return a.enums.forEach(([, v]) => out.members.push({ _tag: "literal", value: v }))
      case "UndefinedKeyword":
      case "VoidKeyword":
        out.undefinedOk = true
        return
      case "StringKeyword":
      case "TemplateLiteral":
        out.members.push({ _tag: "kind", kind: "string" })
        return
      case "NumberKeyword":
        out.members.push({ _tag: "kind", kind: "number" })
        return
      case "BooleanKeyword":
        out.members.push({ _tag: "kind", kind: "boolean" })
        return
      case "ObjectKeyword":
        out.members.push({ _tag: "kind", kind: "object" })
        return
      case "TupleType":
        out.members.push({ _tag: "array", item: a.rest[0]?.type })
        return
      case "TypeLiteral": {
        const index = a.indexSignatures[0]
        if (a.propertySignatures.length === 0 && index !== undefined) {
          out.members.push({ _tag: "record", value: index.type })
        } else {
          out.members.push({ _tag: "struct", ast: a })
        }
        return
      }
      case "NeverKeyword":
        return
      default:
        // Unknown, Any, Declaration, symbols, bigint: nothing we can hold to a JSON shape
        out.any = true
    }
  }
  go(ast, 0)
  return out
}

/** A literal property of ours that their variants spell out as an enum: how we pick the variant to compare with. */
interface Discriminator {
  readonly prop: string
  readonly value: string | number | boolean | bigint
  readonly candidates: ReadonlyArray<Obj>
  readonly known: ReadonlyArray<unknown>
}

const discriminate = (ctx: Ctx, struct: SchemaAST.TypeLiteral, alts: ReadonlyArray<Obj>): Discriminator | undefined => {
  for (const ps of struct.propertySignatures) {
    const flat = flatten(ps.type)
    const only = flat.members[0]
    if (flat.any || flat.members.length !== 1 || only === undefined || only._tag !== "literal") continue
    const prop = String(ps.name)
    let closedSomewhere = false
    const exact: Array<Obj> = []
    const open: Array<Obj> = []
    const known: Array<unknown> = []
    for (const alt of alts) {
      const node = isObj(alt.properties) ? alt.properties[prop] : undefined
      if (node === undefined) continue
      const sub = alternatives(ctx, node)
      const values = sub.any ? undefined : sub.alts.map(enumValues)
      if (values === undefined || values.some((v) => v === undefined)) {
        open.push(alt)
        continue
      }
      closedSomewhere = true
      const flatValues = values.flatMap((v) => v ?? [])
      known.push(...flatValues)
      if (flatValues.includes(only.value)) exact.push(alt)
    }
    if (closedSomewhere) {
      return { prop, value: only.value, candidates: exact.length > 0 ? exact : open, known }
    }
  }
  return undefined
}

// ---- the walk ----

const push = (ctx: Ctx, kind: ProblemKind, where: string, message: string): void => {
  ctx.problems.push({ kind, where, message })
}

const trial = (ctx: Ctx, f: (sub: Ctx) => void): Array<ContractProblem> => {
  const sub: Ctx = { ...ctx, problems: [] }
  f(sub)
  return sub.problems
}

/** Several of their variants could be the one that matters: when sending, one that fits is enough; when reading, any
 * of them may arrive, so all must fit. */
const againstEach = (ctx: Ctx, mode: Mode, candidates: ReadonlyArray<Obj>, f: (sub: Ctx, alt: Obj) => void): void => {
  const results = candidates.map((alt) => trial(ctx, (sub) => f(sub, alt)))
  if (results.length === 0) return
  if (mode === "send") {
    const best = results.reduce((a, b) => (b.length < a.length ? b : a))
    ctx.problems.push(...best)
  } else {
    for (const r of results) ctx.problems.push(...r)
  }
}

const showLiteral = (v: unknown): string => (typeof v === "string" ? JSON.stringify(v) : String(v))

const compare = (ctx: Ctx, ast: SchemaAST.AST, theirs: JsonSchema, where: string, mode: Mode, depth: number): void =>
  compareAlternatives(ctx, flatten(ast), alternatives(ctx, theirs), where, mode, depth)

const compareAlternatives = (
  ctx: Ctx,
  ours: Ours,
  th: Alternatives,
  where: string,
  mode: Mode,
  depth: number
): void => {
  if (ours.any || th.any || depth > 48) return
  if (mode === "read" && th.nullable && !ours.nullable) {
    push(ctx, "Nullability", where, "may be null in theirs but our schema does not accept null")
  }
  if (mode === "send" && ours.nullable && !th.nullable && th.alts.length > 0) {
    push(ctx, "Nullability", where, "we may send null but theirs does not accept null")
  }
  if (ours.members.length === 0) return
  if (th.alts.length === 0) {
    push(ctx, "KindMismatch", where, "is always null in theirs")
    return
  }
  const discriminators = new Map<Member, Discriminator>()
  const claimed = new Set<Obj>()
  for (const m of ours.members) {
    if (m._tag !== "struct") continue
    const d = discriminate(ctx, m.ast, th.alts)
    if (d === undefined) continue
    discriminators.set(m, d)
    d.candidates.forEach((c) => claimed.add(c))
  }
  for (const m of ours.members) {
    switch (m._tag) {
      case "literal": {
        const kind = kindOfValue(m.value)
        const fits = th.alts.some((alt) => {
          const values = enumValues(alt)
          if (values !== undefined) return values.includes(m.value)
          const kinds = kindsOf(alt)
          if (kinds === undefined) return true
          return kind !== undefined && (kinds.has(kind) || (kind === "integer" && kinds.has("number")))
        })
        if (fits) break
        const known = th.alts.flatMap((alt) => enumValues(alt) ?? []).filter((v) => kindOfValue(v) === kind)
        if (known.length > 0) {
          const theirs = known.map(showLiteral).join(", ")
          push(ctx, "LiteralNotInEnum", where, `${showLiteral(m.value)} is not among theirs (${theirs})`)
        } else {
          const theirs = describeKinds(th.alts)
          push(ctx, "KindMismatch", where, `ours is the literal ${showLiteral(m.value)}, theirs is ${theirs}`)
        }
        break
      }
      case "kind": {
        if (!th.alts.some((alt) => admits(alt, m.kind))) {
          push(ctx, "KindMismatch", where, `ours is ${m.kind}, theirs is ${describeKinds(th.alts)}`)
        }
        break
      }
      case "array": {
        const arrays = th.alts.filter((alt) => admits(alt, "array"))
        if (arrays.length === 0) {
          push(ctx, "KindMismatch", where, `ours is array, theirs is ${describeKinds(th.alts)}`)
          break
        }
        const item = m.item
        if (item === undefined) break
        // tuple-form `items` is not something we model: lenient
        againstEach(ctx, mode, arrays, (sub, alt) =>
          compare(sub, item, Array.isArray(alt.items) ? true : alt.items, `${where}[]`, mode, depth + 1))
        break
      }
      case "record": {
        const objects = th.alts.filter((alt) => admits(alt, "object"))
        if (objects.length === 0) {
          push(ctx, "KindMismatch", where, `ours is a record (object), theirs is ${describeKinds(th.alts)}`)
          break
        }
        if (objects.every((alt) => alt.additionalProperties === false)) {
          push(ctx, "KindMismatch", where, "ours is a record but theirs is a closed object (no additionalProperties)")
          break
        }
        againstEach(ctx, mode, objects, (sub, alt) =>
          isObj(alt.additionalProperties)
            ? compare(sub, m.value, alt.additionalProperties, `${where}[*]`, mode, depth + 1)
            : undefined
        )
        break
      }
      case "struct": {
        const objects = th.alts.filter((alt) => admits(alt, "object"))
        if (objects.length === 0) {
          push(ctx, "KindMismatch", where, `ours is object, theirs is ${describeKinds(th.alts)}`)
          break
        }
        const d = discriminators.get(m)
        if (d !== undefined && d.candidates.length === 0) {
          push(
            ctx,
            "LiteralNotInEnum",
            `${where}.${d.prop}`,
            `${showLiteral(d.value)} is not among theirs (${[...new Set(d.known)].map(showLiteral).join(", ")})`
          )
          break
        }
        const unclaimed = objects.filter((alt) => !claimed.has(alt))
        const candidates = d !== undefined ? d.candidates : unclaimed.length > 0 ? unclaimed : objects
        // inside a union of ours, name the member: `turn.items[](agentMessage).text`
        const at = d !== undefined && ours.members.length > 1 ? `${where}(${String(d.value)})` : where
        againstEach(ctx, mode, candidates, (sub, alt) => compareStruct(sub, m.ast, alt, at, mode, depth + 1))
        break
      }
    }
  }
}

const compareStruct = (
  ctx: Ctx,
  ast: SchemaAST.TypeLiteral,
  alt: Obj,
  where: string,
  mode: Mode,
  depth: number
): void => {
  const props = isObj(alt.properties) ? alt.properties : undefined
  // `{ "type": "object" }` with no properties is an open bag (e.g. TurnInterruptResponse): nothing to hold us to
  if (props === undefined && alt.additionalProperties !== false) return
  const required = new Set(
    Array.isArray(alt.required) ? alt.required.filter((r): r is string => typeof r === "string") : []
  )
  const ourNames = new Set<string>()
  for (const ps of ast.propertySignatures) {
    const name = String(ps.name)
    ourNames.add(name)
    const at = `${where}.${name}`
    const theirs = props?.[name]
    if (theirs === undefined) {
      push(ctx, "FieldMissing", at, `we ${mode} this field but theirs has no such field`)
      continue
    }
    const ourOptional = ps.isOptional || flatten(ps.type).undefinedOk
    if (mode === "read" && !ourOptional && !required.has(name)) {
      push(ctx, "FieldOptional", at, "required in ours but optional in theirs")
    }
    if (mode === "send" && ourOptional && required.has(name)) {
      push(ctx, "FieldRequired", at, "optional in ours but required by theirs")
    }
    compare(ctx, ps.type, theirs, at, mode, depth + 1)
  }
  if (mode === "send") {
    for (const name of required) {
      if (ourNames.has(name)) continue
      push(ctx, "RequiredFieldMissing", `${where}.${name}`, "required by theirs but absent from ours")
    }
  }
}

const checkDefinition = (
  ctx: Ctx,
  schema: Schema.Schema.AnyNoContext,
  definition: string,
  where: string,
  mode: Mode
): void => {
  const node = ctx.defs[definition]
  if (node === undefined) {
    push(ctx, "DefinitionMissing", where, `definition ${definition} is missing from the generated schema`)
    return
  }
  compare(ctx, schema.ast, node, where, mode, 0)
}

/** Compares our contract with a generated schema; an empty result means every method, notification, item and
 * server request we rely on still exists with the fields and kinds we use. */
export const checkContract = (
  generated: GeneratedSchema,
  contract: Contract = harnessContract
): ReadonlyArray<ContractProblem> => {
  const ctx: Ctx = { defs: generated.definitions, problems: [], altsMemo: new Map() }
  for (const [method, c] of Object.entries(contract.clientMethods)) {
    if (!Object.hasOwn(generated.clientRequests, method)) {
      push(ctx, "MethodRemoved", method, "we call this method but the binary no longer has it")
      continue
    }
    // the binary's own method table names the params definition; ours is the fallback
    checkDefinition(ctx, c.params, generated.clientRequests[method] ?? c.paramsDefinition, `${method} params`, "send")
    checkDefinition(ctx, c.result, c.resultDefinition, `${method} result`, "read")
  }
  for (const [method, n] of Object.entries(contract.notifications)) {
    if (!Object.hasOwn(generated.serverNotifications, method)) {
      push(ctx, "NotificationRemoved", method, "we read this notification but the binary no longer emits it")
      continue
    }
    checkDefinition(ctx, n.schema, generated.serverNotifications[method] ?? n.definition, `${method} params`, "read")
  }
  if (contract.items.length > 0) {
    const threadItem = generated.definitions["ThreadItem"]
    if (threadItem === undefined) {
      push(ctx, "DefinitionMissing", "ThreadItem", "definition ThreadItem is missing from the generated schema")
    } else {
      const variants = alternatives(ctx, threadItem).alts
      for (const item of contract.items) {
        const matching = variants.filter((v) => v.title === item.definition)
        const where = `ThreadItem ${item.definition}`
        if (matching.length === 0) {
          push(ctx, "ItemVariantRemoved", where, "we read this item kind but ThreadItem no longer has the variant")
          continue
        }
        const theirs = { any: false, nullable: false, alts: matching }
        compareAlternatives(ctx, flatten(item.schema.ast), theirs, where, "read", 0)
      }
    }
  }
  for (const method of contract.serverRequests) {
    if (!Object.hasOwn(generated.serverRequests, method)) {
      push(ctx, "ServerRequestRemoved", method, "we handle this server request but the binary no longer sends it")
      continue
    }
    const definition = generated.serverRequests[method]
    if (contract.serverRequestParams !== undefined && definition !== undefined) {
      checkDefinition(ctx, contract.serverRequestParams, definition, `${method} params`, "read")
    }
  }
  const seen = new Set<string>()
  return ctx.problems.filter((p) => {
    const key = `${p.kind} ${formatProblem(p)}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

// ---- loading the generated directory ----

export class SchemaGenerationFailed extends Schema.TaggedError<SchemaGenerationFailed>()("SchemaGenerationFailed", {
  command: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not generate the app-server JSON schema with ${this.command}: ${this.reason}`
  }
}

export class GeneratedSchemaInvalid extends Schema.TaggedError<GeneratedSchemaInvalid>()("GeneratedSchemaInvalid", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `generated schema file ${this.file} is unusable: ${this.reason}`
  }
}

const firstLine = (s: string): string => s.split("\n").find((l) => l.trim() !== "")?.trim() ?? ""

const readJson = (file: string): Effect.Effect<Obj, GeneratedSchemaInvalid> =>
  Effect.tryPromise({
    try: () => readFile(file, "utf8"),
    catch: (e) => new GeneratedSchemaInvalid({ file, reason: firstLine(String(e)) })
  }).pipe(
    Effect.flatMap((text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (e) => new GeneratedSchemaInvalid({ file, reason: firstLine(String(e)) })
      })
    ),
    Effect.filterOrFail(isObj, () => new GeneratedSchemaInvalid({ file, reason: "not a JSON object" }))
  )

/** `oneOf` variants each pin `properties.method.enum[0]` and point `properties.params` at a definition. */
const methodTable = (
  file: string,
  root: Obj
): Effect.Effect<Record<string, string | undefined>, GeneratedSchemaInvalid> => {
  if (!Array.isArray(root.oneOf)) {
    return Effect.fail(new GeneratedSchemaInvalid({ file, reason: "no oneOf of methods" }))
  }
  const table: Record<string, string | undefined> = {}
  for (const variant of root.oneOf) {
    const props = isObj(variant) && isObj(variant.properties) ? variant.properties : undefined
    const method = props !== undefined && isObj(props.method) ? props.method : undefined
    const name = Array.isArray(method?.enum) ? method.enum[0] : method?.const
    if (typeof name !== "string") continue
    const params = props !== undefined && isObj(props.params) ? props.params : undefined
    table[name] = typeof params?.$ref === "string" ? refName(params.$ref) : undefined
  }
  return Effect.succeed(table)
}

export const loadGenerated = (dir: string): Effect.Effect<GeneratedSchema, GeneratedSchemaInvalid> =>
  Effect.gen(function*() {
    const definitions: Record<string, JsonSchema> = {}
    // first writer wins; the files repeat shared definitions identically
    const add = (name: string, node: unknown) => {
      if (definitions[name] === undefined) definitions[name] = node
    }
    const addAll = (root: Obj) => {
      if (isObj(root.definitions)) for (const [k, v] of Object.entries(root.definitions)) add(k, v)
    }
    // initialize lives only in v1/, each file a root schema with its own local definitions
    const v1Dir = path.join(dir, "v1")
    const v1Files = yield* Effect.tryPromise({
      try: () => readdir(v1Dir),
      catch: (e) => new GeneratedSchemaInvalid({ file: v1Dir, reason: firstLine(String(e)) })
    })
    for (const f of v1Files.filter((f) => f.endsWith(".json")).sort()) {
      const root = yield* readJson(path.join(v1Dir, f))
      add(typeof root.title === "string" ? root.title : path.basename(f, ".json"), root)
      addAll(root)
    }
    addAll(yield* readJson(path.join(dir, "codex_app_server_protocol.v2.schemas.json")))
    const tables: Array<Record<string, string | undefined>> = []
    for (const f of ["ClientRequest.json", "ServerNotification.json", "ServerRequest.json"]) {
      const file = path.join(dir, f)
      const root = yield* readJson(file)
      addAll(root)
      tables.push(yield* methodTable(file, root))
    }
    const [clientRequests = {}, serverNotifications = {}, serverRequests = {}] = tables
    return { definitions, clientRequests, serverNotifications, serverRequests }
  })

// ---- running the pinned binary ----

/** A fresh temp dir that the scope's finalizer removes. */
export const scopedTempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => mkdtemp(path.join(os.tmpdir(), prefix)),
      catch: (e) => new SchemaGenerationFailed({ command: "mkdtemp", reason: firstLine(String(e)) })
    }),
    (dir) => Effect.tryPromise(() => rm(dir, { recursive: true, force: true })).pipe(Effect.ignore)
  )

export const generateSchema = (
  codex: CodexCommand,
  dir: string,
  timeout: Duration.DurationInput = "30 seconds"
): Effect.Effect<void, SchemaGenerationFailed> =>
  Effect.async<void, SchemaGenerationFailed>((resume, signal) => {
    const ms = Duration.toMillis(timeout)
    // --experimental: the harness initializes with experimentalApi and uses its fields (dynamicTools, collaborationMode)
    const args = [...codex.prefixArgs, "app-server", "generate-json-schema", "--experimental", "--out", dir]
    execFile(codex.command, args, { timeout: ms, signal, windowsHide: true }, (error, _stdout, stderr) => {
      if (error === null) return resume(Effect.void)
      const reason = error.killed && !signal.aborted
        ? `timed out after ${ms} ms`
        : firstLine(String(stderr)) || firstLine(error.message)
      resume(Effect.fail(new SchemaGenerationFailed({ command: codex.command, reason })))
    })
  })

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
      const codex = codexCommand ?? (yield* resolve())
      const dir = yield* scopedTempDir("codex-protocol-check-")
      yield* generateSchema(codex, dir, options.timeout)
      const generated = yield* loadGenerated(dir)
      const contract = options.contract ?? harnessContract
      return {
        methods: Object.keys(contract.clientMethods).length,
        notifications: Object.keys(contract.notifications).length,
        itemKinds: contract.items.length,
        serverRequests: contract.serverRequests.length,
        problems: checkContract(generated, contract)
      }
    })
  )
