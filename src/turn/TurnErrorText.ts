// The line a failed turn ends with. Codex's own message for a provider's HTTP 500 is a canned "high demand" text:
// app-server 0.171.0 keeps the provider's status and body to itself and reports only `codexErrorInfo:
// "internalServerError"` (see the README's protocol notes). So the line says what the harness does know, the status
// Codex's error kind stands for or the `httpStatusCode` it carries, ahead of Codex's text, and any additional details
// after it, so a provider's failure is not mistaken for OpenAI's load.

/** Codex's error kinds that stand for one HTTP status from the provider (only those seen on the pinned binary). */
const statusOfKind: Readonly<Record<string, string>> = {
  internalServerError: "HTTP 500"
}

/** The provider's HTTP status as `codexErrorInfo` carries it: a kind that implies one, or `{kind: {httpStatusCode}}`. */
const statusOf = (info: unknown): string | undefined => {
  if (typeof info === "string") return statusOfKind[info]
  if (typeof info !== "object" || info === null) return undefined
  for (const detail of Object.values(info)) {
    if (typeof detail !== "object" || detail === null || !("httpStatusCode" in detail)) continue
    if (typeof detail.httpStatusCode === "number") return `HTTP ${detail.httpStatusCode}`
  }
  return undefined
}

export interface CodexTurnError {
  readonly message: string
  readonly codexErrorInfo?: unknown
  readonly additionalDetails?: string | null | undefined
}

/** One line: `the model provider answered HTTP 500: <Codex's message> (<details>)`, or Codex's message as it is. */
export const describe = (error: CodexTurnError): string => {
  const status = statusOf(error.codexErrorInfo)
  const details = error.additionalDetails != null && error.additionalDetails !== "" && error.additionalDetails !== error.message
    ? ` (${error.additionalDetails})`
    : ""
  const text = `${error.message}${details}`
  return status === undefined ? text : `the model provider answered ${status}: ${text}`
}
