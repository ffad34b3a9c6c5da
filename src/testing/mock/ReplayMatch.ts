// How a replay compares what the harness sends with what was recorded, and fills in what it answers. Pure.
// Compared: every field of a request's or notification's params and of an answer's result or error, recursively, in
// the recorded key order (a field only one side has is a difference). Not compared: request ids (the harness numbers
// its own; answers are matched by the order of the recording, server requests by their recorded id). Normalized: the
// paths the recorder wrote as placeholders (`{{cwd}}/a.txt` matches any workspace, the first match binding `{{cwd}}`
// for the rest of the replay), and values that differ between two runs of the same conversation by construction (the
// hook relay's directory `codex-hr-<pid>-<random>`, and the `sha256:` trust hashes of hook commands that hold it).
import { placeholderPattern, type RootName } from "../../appserver/WireRecording.js"

export type Bindings = ReadonlyMap<RootName, string>

/** The first place where the harness's message is not the recorded one. */
export interface Difference {
  /** where, from the message's top (`params.input[0].text`); empty for the message as a whole */
  readonly path: string
  readonly recorded: string
  readonly got: string
}

export type Match =
  | { readonly _tag: "Same"; readonly bindings: Bindings }
  | { readonly _tag: "Differs"; readonly difference: Difference }

const volatile: ReadonlyArray<readonly [RegExp, string]> = [
  [/codex-hr-\d+-[A-Za-z0-9_-]+/g, "codex-hr-<pid>-<random>"],
  [/sha256:[0-9a-f]{64}/g, "sha256:<hash>"]
]

const normalize = (text: string) => volatile.reduce((out, [pattern, shape]) => out.replace(pattern, shape), text)

const maxShown = 120

/** a value as an error message shows it: JSON, shortened */
export const show = (value: unknown): string => {
  const text = value === undefined ? "nothing" : JSON.stringify(value)
  return text.length > maxShown ? `${text.slice(0, maxShown)}… (${text.length} chars)` : text
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

const child = (path: string, key: string) =>
  /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? (path === "" ? key : `${path}.${key}`) : `${path}[${JSON.stringify(key)}]`

/**
 * A recorded string against the harness's: equal after normalizing, with each placeholder standing for its bound
 * path, or for any text when unbound (then bound to it). The new bindings, or undefined when they differ.
 */
const matchString = (recorded: string, got: string, bindings: Bindings): Bindings | undefined => {
  const want = normalize(recorded)
  const have = normalize(got)
  if (!want.includes("{{")) return want === have ? bindings : undefined
  const unbound: Array<RootName> = []
  let source = ""
  let last = 0
  for (const found of want.matchAll(placeholderPattern)) {
    const name = found[1] as RootName
    source += escapeRegExp(want.slice(last, found.index))
    const bound = bindings.get(name)
    if (bound !== undefined) source += escapeRegExp(bound)
    else if (unbound.includes(name)) source += `\\k<${name}>`
    else {
      unbound.push(name)
      source += `(?<${name}>.+?)`
    }
    last = found.index + found[0].length
  }
  source += escapeRegExp(want.slice(last))
  const matched = new RegExp(`^${source}$`, "s").exec(have)
  if (matched === null) return undefined
  if (unbound.length === 0) return bindings
  const next = new Map(bindings)
  for (const name of unbound) next.set(name, matched.groups![name]!)
  return next
}

/** Compares a recorded JSON value with the harness's, from `path`; the first difference, depth first. */
export const compare = (recorded: unknown, got: unknown, bindings: Bindings, path = ""): Match => {
  const differs = (): Match => ({ _tag: "Differs", difference: { path, recorded: show(recorded), got: show(got) } })
  if (typeof recorded === "string") {
    if (typeof got !== "string") return differs()
    const next = matchString(recorded, got, bindings)
    return next === undefined ? differs() : { _tag: "Same", bindings: next }
  }
  if (Array.isArray(recorded)) {
    if (!Array.isArray(got)) return differs()
    let current = bindings
    for (let i = 0; i < Math.max(recorded.length, got.length); i++) {
      const at = `${path}[${i}]`
      if (i >= recorded.length || i >= got.length) {
        return { _tag: "Differs", difference: { path: at, recorded: show(recorded[i]), got: show(got[i]) } }
      }
      const item = compare(recorded[i], got[i], current, at)
      if (item._tag === "Differs") return item
      current = item.bindings
    }
    return { _tag: "Same", bindings: current }
  }
  if (isRecord(recorded)) {
    if (!isRecord(got)) return differs()
    let current = bindings
    const keys = [...Object.keys(recorded), ...Object.keys(got).filter((k) => !(k in recorded))]
    for (const key of keys) {
      const at = child(path, key)
      if (!(key in recorded) || !(key in got)) {
        return { _tag: "Differs", difference: { path: at, recorded: show(recorded[key]), got: show(got[key]) } }
      }
      const field = compare(recorded[key], got[key], current, at)
      if (field._tag === "Differs") return field
      current = field.bindings
    }
    return { _tag: "Same", bindings: current }
  }
  return recorded === got ? { _tag: "Same", bindings } : differs()
}

/** A recorded value with its placeholders filled in from the bindings (an unbound one stays as written). */
export const expand = (value: unknown, bindings: Bindings): unknown => {
  if (typeof value === "string") {
    return value.includes("{{") ? value.replace(placeholderPattern, (whole, name: RootName) => bindings.get(name) ?? whole) : value
  }
  if (Array.isArray(value)) return value.map((v) => expand(v, bindings))
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expand(v, bindings)]))
  return value
}
