// `doctor`'s provider check: with a provider URL configured, one HTTP request to its `/models` (the Responses API's
// model list, which local servers answer too). Any HTTP answer means the server is there, whatever its status: a
// 401 or a 404 is still a server Codex can reach; only no answer (refused, unknown host, past the bound) fails. No key
// is sent: the check is about the network path, and a credential has no business in a diagnostic request.
import { Effect } from "effect"
import { redactUrl } from "../../appserver/CodexArgs.js"
import { type CheckFailed, type CheckSkipped, failed, type Passed, passedWith, skipped } from "./check.js"

export const requestTimeoutMs = 5_000

/** why fetch failed, in the system's words (`ECONNREFUSED`, `ENOTFOUND`) when it says */
const why = (error: unknown): string => {
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined
  if (error instanceof Error && error.name === "TimeoutError") return `no answer within ${requestTimeoutMs / 1000} s`
  if (typeof cause?.code === "string") return typeof cause.message === "string" ? cause.message : cause.code
  return error instanceof Error ? error.message : String(error)
}

export const providerReachable = (providerUrl: string | undefined): Effect.Effect<Passed<void>, CheckFailed | CheckSkipped> =>
  Effect.gen(function* () {
    if (providerUrl === undefined) {
      return yield* skipped("no --provider-url (or providerUrl in the config): Codex uses its own configuration and login")
    }
    const target = `${providerUrl.replace(/\/+$/, "")}/models`
    const started = Date.now()
    const response = yield* Effect.tryPromise({
      try: (signal) =>
        fetch(target, { method: "GET", redirect: "manual", signal: AbortSignal.any([signal, AbortSignal.timeout(requestTimeoutMs)]) }),
      catch: (e) => failed(`${redactUrl(target)}: ${why(e)}`)
    })
    // the body is not needed: a server that streams a long one must not hold the check
    yield* Effect.tryPromise(() => response.body?.cancel() ?? Promise.resolve()).pipe(Effect.ignore)
    return passedWith(`provider ${redactUrl(providerUrl)} answers: HTTP ${response.status} for GET /models in ${Date.now() - started} ms`, undefined)
  })
