// Field names from an MCP server (or question ids from Codex) turned into safe question ids, and the names refused
// outright. The names are untrusted: the ids made here must never carry them through unchanged, only a slug of them.
import { limits } from "./ElicitationLimits.js"

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/**
 * Safe ids (`[a-z0-9_]`, at most 32 characters, unique) for names in order: a slug of the name, with `_2`, `_3`, ...
 * on collision. Depends only on the names and their order, so a given schema always maps the same way.
 */
export const safeIds = (names: ReadonlyArray<string>): ReadonlyArray<string> => {
  const max = limits.maxQuestionIdLength
  const used = new Set<string>()
  return names.map((name) => {
    const slug = name
      .normalize("NFKD")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "_")
      .replace(/^_+|_+$/g, "")
      .slice(0, max)
      .replace(/_+$/, "")
    const base = slug === "" ? "field" : slug
    let id = base
    for (let n = 2; used.has(id); n++) {
      const suffix = `_${n}`
      id = base.slice(0, max - suffix.length) + suffix
    }
    used.add(id)
    return id
  })
}

/** a field name we refuse to map: empty, absurdly long, or holding control characters */
export const unmappableName = (name: string): string | undefined =>
  name === ""
    ? "a field has an empty name"
    : name.length > limits.maxFieldNameLength
      ? `a field name is longer than ${limits.maxFieldNameLength} characters`
      : CONTROL.test(name)
        ? "a field name contains control characters"
        : undefined
