// Pure rules for what may reach a paired node (S26): the node runs processes, files and credential-free HTTP; model and
// account credentials stay with the harness. A header that can carry a credential (authentication, cookies, API keys,
// session or CSRF tokens, signatures) is refused before the node sees it, on the WebSocket upgrade and in any HTTP
// request the node would make (`http/request` of the exec-server protocol, or any message whose params carry
// `headers`). Matching is by name, case-insensitive, and errs on the side of refusing: authenticated HTTP runs on the
// harness, never on a node.

const exact = new Set([
  "authorization",
  "proxy-authorization",
  "cookie",
  "cookie2",
  "set-cookie",
  "x-api-key",
  "api-key",
  "apikey",
  "x-amz-security-token",
  "x-goog-api-key",
  "openai-organization",
  "openai-project",
  "chatgpt-account-id",
  "x-csrf-token",
  "x-xsrf-token"
])
const pattern = /auth|token|secret|passw|cookie|session|credential|api[-_]?key|signature|bearer/i

/** true when a header of this name may carry a credential. */
export const isSensitiveHeader = (name: string): boolean => {
  const lower = name.trim().toLowerCase()
  return exact.has(lower) || pattern.test(lower)
}

/** The sensitive header names of an HTTP request (Node's `IncomingHttpHeaders`), lower case, sorted. */
export const sensitiveRequestHeaders = (headers: Readonly<Record<string, unknown>>): ReadonlyArray<string> =>
  Object.keys(headers).filter(isSensitiveHeader).map((n) => n.toLowerCase()).sort()

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Header names in one `headers` value: `[{name, value}]`, `[[name, value]]` or `{name: value}`. */
const namesOf = (headers: unknown): ReadonlyArray<string> => {
  if (Array.isArray(headers)) {
    return headers.flatMap((h) =>
      Array.isArray(h) && typeof h[0] === "string" ? [h[0]] : isRecord(h) && typeof h.name === "string" ? [h.name] : []
    )
  }
  return isRecord(headers) ? Object.keys(headers) : []
}

/**
 * The sensitive header names anywhere in a JSON-RPC message's params (every field called `headers`, at any depth up to
 * a limit), lower case, sorted, unique. A message nested deeper than the limit counts as sensitive (`<too deep>`): a
 * filter that gives up must refuse, not pass.
 */
export const sensitiveMessageHeaders = (message: unknown, maxDepth = 16): ReadonlyArray<string> => {
  const found = new Set<string>()
  const walk = (value: unknown, depth: number): void => {
    if (depth > maxDepth) {
      found.add("<too deep>")
      return
    }
    if (Array.isArray(value)) {
      for (const v of value) walk(v, depth + 1)
      return
    }
    if (!isRecord(value)) return
    for (const [key, v] of Object.entries(value)) {
      if (key.toLowerCase() === "headers") for (const n of namesOf(v)) if (isSensitiveHeader(n)) found.add(n.toLowerCase())
      walk(v, depth + 1)
    }
  }
  walk(isRecord(message) ? message.params : undefined, 0)
  return [...found].sort()
}
