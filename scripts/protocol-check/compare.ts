// Owns the comparison: walking one of our schemas against a generated definition in "send" mode (what we put on the
// wire must be accepted) or "read" mode (whatever they may send must fit ours), and `checkContract`, which runs that
// walk over every client method, notification, item kind and server request of a Contract. The walk is over OUR
// schemas: fields we never touch are ignored, and wherever either side says "anything" we accept.
import type { Schema, SchemaAST } from "effect"
import { type Contract, type ContractProblem, formatProblem, harnessContract, type ProblemKind } from "./contract.js"
import type { GeneratedSchema } from "./generated.js"
import {
  admits,
  type Alternatives,
  alternatives,
  describeKinds,
  type Discriminator,
  discriminate,
  enumValues,
  flatten,
  isObj,
  type JsonSchema,
  kindOfValue,
  kindsOf,
  type Member,
  type Obj,
  type Ours,
  type Resolver
} from "./schema-walk.js"

type Mode = "send" | "read"

interface Ctx extends Resolver {
  problems: Array<ContractProblem>
}

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

const checkItems = (ctx: Ctx, generated: GeneratedSchema, contract: Contract): void => {
  if (contract.items.length === 0) return
  const threadItem = generated.definitions["ThreadItem"]
  if (threadItem === undefined) {
    push(ctx, "DefinitionMissing", "ThreadItem", "definition ThreadItem is missing from the generated schema")
    return
  }
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
  checkItems(ctx, generated, contract)
  for (const [method, r] of Object.entries(contract.serverRequests)) {
    if (!Object.hasOwn(generated.serverRequests, method)) {
      push(ctx, "ServerRequestRemoved", method, "we handle this server request but the binary no longer sends it")
      continue
    }
    // we read what the binary sends and send back what it must accept
    checkDefinition(ctx, r.params, generated.serverRequests[method] ?? r.paramsDefinition, `${method} params`, "read")
    checkDefinition(ctx, r.response, r.responseDefinition, `${method} response`, "send")
  }
  const seen = new Set<string>()
  return ctx.problems.filter((p) => {
    const key = `${p.kind} ${formatProblem(p)}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}
