// Owns reading both sides into comparable shapes: resolving generated JSON schema nodes ($ref, allOf, oneOf/anyOf,
// null) into alternatives and the JSON kinds they admit, and flattening our Effect Schema AST into the members it puts
// on the wire. No problems are reported here; compare.ts does that.
import type { SchemaAST } from "effect"

// ---- their side: resolving JSON schema nodes ----

/** A JSON schema node as generated (draft-07): an object, or `true`/`false`. Left loose on purpose. */
export type JsonSchema = unknown

export type Obj = { readonly [key: string]: unknown }
export type Kind = "string" | "integer" | "number" | "boolean" | "array" | "object" | "null"

export const isObj = (u: unknown): u is Obj => typeof u === "object" && u !== null && !Array.isArray(u)

/** `#/definitions/X` and the bundle's `#/definitions/v2/X` both name X in our flat map. */
export const refName = (ref: string): string => ref.slice(ref.lastIndexOf("/") + 1)

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
export interface Alternatives {
  readonly any: boolean
  readonly nullable: boolean
  readonly alts: ReadonlyArray<Obj>
}
const anything: Alternatives = { any: true, nullable: false, alts: [] }

/** What resolving their nodes needs: the flat definitions map and a memo. */
export interface Resolver {
  readonly defs: Readonly<Record<string, JsonSchema>>
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
const resolveNode = (r: Resolver, node: JsonSchema, depth = 0): Obj | undefined => {
  if (!isObj(node) || depth > 32) return undefined
  if (typeof node.$ref === "string") return resolveNode(r, r.defs[refName(node.$ref)], depth + 1)
  if (Array.isArray(node.allOf)) {
    const { allOf, ...rest } = node
    const parts = allOf.map((m) => resolveNode(r, m, depth + 1)).filter((m): m is Obj => m !== undefined)
    if (parts.length === 1 && !hasShape(rest)) return parts[0]
    return parts.reduce<Obj>((acc, p) => merge(acc, p), rest)
  }
  return hasShape(node) ? node : undefined
}

export const alternatives = (r: Resolver, node: JsonSchema, depth = 0): Alternatives => {
  const resolved = resolveNode(r, node)
  if (resolved === undefined || depth > 32) return anything
  const memo = r.altsMemo.get(resolved)
  if (memo !== undefined) return memo
  const result = computeAlternatives(r, resolved, depth)
  r.altsMemo.set(resolved, result)
  return result
}

const computeAlternatives = (r: Resolver, node: Obj, depth: number): Alternatives => {
  const branches = [...(Array.isArray(node.oneOf) ? node.oneOf : []), ...(Array.isArray(node.anyOf) ? node.anyOf : [])]
  if (branches.length > 0) {
    // Properties beside a oneOf/anyOf (ThreadItem's timestamps, ImageGeneration's fields) belong to every branch.
    const { oneOf: _o, anyOf: _a, ...base } = node
    const baseShaped = isObj(base.properties) || Array.isArray(base.required)
    let any = false
    let nullable = false
    const alts: Array<Obj> = []
    for (const b of branches) {
      const sub = alternatives(r, b, depth + 1)
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
  const types = typeof node.type === "string" ? [node.type] : Array.isArray(node.type) ? node.type : undefined
  const values = Array.isArray(node.enum) ? node.enum : undefined
  const nullable = (types?.includes("null") ?? false) || (values?.includes(null) ?? false) || node.const === null
  if (!nullable) return { any: false, nullable, alts: [node] }
  const nonNullTypes = types?.filter((t) => t !== "null")
  const nonNullValues = values?.filter((v) => v !== null)
  const onlyNull = (nonNullTypes !== undefined && nonNullTypes.length === 0) ||
    (nonNullValues !== undefined && nonNullValues.length === 0) || node.const === null
  if (onlyNull) {
    return { any: false, nullable, alts: [] }
  }
  const alt: Obj = {
    ...node,
    ...(nonNullTypes !== undefined ? { type: nonNullTypes.length === 1 ? nonNullTypes[0] : nonNullTypes } : {}),
    ...(nonNullValues !== undefined ? { enum: nonNullValues } : {})
  }
  return { any: false, nullable, alts: [alt] }
}

export const enumValues = (alt: Obj): ReadonlyArray<unknown> | undefined =>
  Array.isArray(alt.enum) ? alt.enum : alt.const !== undefined ? [alt.const] : undefined

export const kindOfValue = (v: unknown): Kind | undefined =>
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
export const kindsOf = (alt: Obj): ReadonlySet<Kind> | undefined => {
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

export type OurKind = "string" | "number" | "boolean" | "array" | "object"
export const admits = (alt: Obj, ours: OurKind): boolean => {
  const kinds = kindsOf(alt)
  if (kinds === undefined) return true
  return ours === "number" ? kinds.has("number") || kinds.has("integer") : kinds.has(ours)
}

export const describeKinds = (alts: ReadonlyArray<Obj>): string => {
  const all = new Set<string>()
  for (const a of alts) for (const k of kindsOf(a) ?? ["any"]) all.add(k)
  return [...all].join(" | ") || "nothing"
}

// ---- our side: flattening an Effect Schema AST ----

export type Member =
  | { readonly _tag: "literal"; readonly value: string | number | boolean | bigint }
  | { readonly _tag: "kind"; readonly kind: "string" | "number" | "boolean" | "object" }
  | { readonly _tag: "array"; readonly item: SchemaAST.AST | undefined }
  | { readonly _tag: "record"; readonly value: SchemaAST.AST }
  | { readonly _tag: "struct"; readonly ast: SchemaAST.TypeLiteral }

export interface Ours {
  any: boolean
  nullable: boolean
  /** the type admits `undefined` (Schema.optional puts it there) */
  undefinedOk: boolean
  readonly members: Array<Member>
}

export const flatten = (ast: SchemaAST.AST): Ours => {
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

// ---- matching a struct of ours to their variants ----

/** A literal property of ours that their variants spell out as an enum: how we pick the variant to compare with. */
export interface Discriminator {
  readonly prop: string
  readonly value: string | number | boolean | bigint
  readonly candidates: ReadonlyArray<Obj>
  readonly known: ReadonlyArray<unknown>
}

export const discriminate = (
  r: Resolver,
  struct: SchemaAST.TypeLiteral,
  alts: ReadonlyArray<Obj>
): Discriminator | undefined => {
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
      const sub = alternatives(r, node)
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
