// What may be kept of a value that can hold secrets (a diagnostics bundle's config, runtime and records; a wire
// recording's JSON-RPC messages): the shape and the harmless values, never a secret. Pure. Secret-looking keys lose
// their value, `env` and `headers` maps keep their names only, URLs lose their userinfo and credential query values
// (CodexArgs.redactUrl), bearer and `sk-` style tokens are masked in any string, and a last pass over the text
// replaces every known secret value (the provider key the settings name, and any environment variable whose name
// looks secret) wherever it still appears.
import { redactUrl } from "./CodexArgs.js"

export const mask = "***"

/** keys whose value is a secret (as in the wire log's redaction, plus cookies and private keys) */
const secretKey = /token|secret|password|passwd|api[_-]?key|authorization|credential|cookie|private[_-]?key|^key$/i
/** maps whose values may be secrets under harmless names (an MCP server's environment, HTTP headers) */
const valueMaps = new Set(["env", "headers", "httpHeaders", "envHttpHeaders"])

const tokenPatterns: ReadonlyArray<readonly [RegExp, (whole: string, name: string) => string]> = [
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{4,}/gi, (_, scheme) => `${scheme} ${mask}`],
  [/\bsk-[A-Za-z0-9_-]{8,}/g, () => mask],
  [/\bgh[pousr]_[A-Za-z0-9]{8,}/g, () => mask],
  [/\bxox[abpr]-[A-Za-z0-9-]{8,}/g, () => mask],
  // `--token=…`, `api_key=…` and the like in an argument or a command line
  [/\b([A-Za-z_-]*(?:token|secret|password|api[_-]?key)[A-Za-z_-]*)=[^\s&"']+/gi, (_, name) => `${name}=${mask}`]
]

/** A string with URL credentials and token-looking substrings masked. */
export const redactString = (value: string): string => {
  // a URL, alone or inside a longer text (`proxy at https://user:pw@host`)
  let out = value.replace(/\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi, (url) => redactUrl(url))
  for (const [pattern, replace] of tokenPatterns) out = out.replace(pattern, (whole: string, name: unknown) => replace(whole, String(name)))
  return out
}

/** A JSON-like value with every secret masked (see the module comment). */
export const redactValue = (value: unknown, key?: string): unknown => {
  if (key !== undefined && secretKey.test(key) && value !== null && value !== undefined && typeof value !== "boolean") return mask
  if (typeof value === "string") return redactString(value)
  if (Array.isArray(value)) return value.map((v) => redactValue(v))
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
    if (key !== undefined && valueMaps.has(key)) return Object.fromEntries(entries.map(([k]) => [k, mask]))
    return Object.fromEntries(entries.map(([k, v]) => [k, redactValue(v, k)]))
  }
  return value
}

/**
 * The wire's variant of `redactValue`, for JSON-RPC messages that are kept whole (a wire recording, which a replay must
 * still decode): under a secret-looking key every string is masked, however deep, and numbers, booleans and the shape
 * stay (a message's `tokenUsage` is counts, not a secret); `env` and `headers` maps keep their names only; every
 * other string is masked as `redactString` does.
 */
export const redactWireValue = (value: unknown, key?: string): unknown =>
  key !== undefined && (secretKey.test(key) || valueMaps.has(key)) ? maskStrings(value) : redactWireStrings(value)

const redactWireStrings = (value: unknown): unknown => {
  if (typeof value === "string") return redactString(value)
  if (Array.isArray(value)) return value.map((v) => redactWireValue(v))
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, redactWireValue(v, k)]))
  }
  return value
}

/** Every string of a JSON-like value masked; its shape, numbers and booleans kept. */
export const maskStrings = (value: unknown): unknown => {
  if (typeof value === "string") return mask
  if (Array.isArray(value)) return value.map(maskStrings)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, maskStrings(v)]))
  }
  return value
}

/** Secret values known from the environment: the named provider key's, and every variable whose name looks secret. */
export const secretValues = (env: Readonly<Record<string, string | undefined>>, named: ReadonlyArray<string> = []): ReadonlyArray<string> => {
  const names = new Set(named)
  return Object.entries(env)
    .filter(([name, value]) => value !== undefined && value.length >= 6 && (names.has(name) || secretKey.test(name) || /_KEY$/i.test(name)))
    .map(([, value]) => value!)
}

/** The text with every occurrence of these values masked (longest first, so a value inside another goes too). */
export const scrubValues = (text: string, values: ReadonlyArray<string>): string =>
  [...values].sort((a, b) => b.length - a.length).reduce((out, value) => out.split(value).join(mask), text)

/** Clips every string of a JSON-like value to `max` characters (a bundle holds recent records, not whole outputs). */
export const clipStrings = (value: unknown, max: number): unknown => {
  if (typeof value === "string") return value.length > max ? `${value.slice(0, max)}… (${value.length} chars)` : value
  if (Array.isArray(value)) return value.map((v) => clipStrings(v, max))
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, clipStrings(v, max)]))
  }
  return value
}

/**
 * The app-server's requests whose reply carries what a person typed (a question's answers, an elicitation's form
 * values). A question can be secret (`isSecret`) and a form can ask for a password under any field name, so neither
 * the wire log nor a recording keeps the strings of these replies, whatever their keys.
 */
export const answeredByPeople: ReadonlySet<string> = new Set(["item/tool/requestUserInput", "mcpServer/elicitation/request"])
