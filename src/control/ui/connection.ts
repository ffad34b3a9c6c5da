// The Control UI's link to `serve`: the token, a check of it, and the control API's RpcClient over the browser's own
// WebSocket (the same client the CLI uses, src/control/ControlClient.ts), wrapped in plain promises and callbacks for
// the page's event handlers.
//
// The token: taken from the URL's fragment (`#token=...`, which browsers never send to a server) and then removed from
// the address bar, or typed into the token field; kept in sessionStorage (this tab only, gone when it closes). Never
// in a query string (it would reach the server's logs and the Referer) or localStorage (it would outlive the tab).
import { Socket } from "@effect/platform"
import { Cause, Effect, Exit, Fiber, ManagedRuntime, Option, Scope, Stream } from "effect"
import { ControlFailure } from "../../../schemas/control.js"
import * as ControlClient from "../ControlClient.js"

const storageKey = "codex-harness.token"

const fragment = () => new URLSearchParams(location.hash.replace(/^#/, ""))

/** the address with this fragment, in place (no history entry) */
const replaceFragment = (params: URLSearchParams) => {
  const rest = params.toString()
  history.replaceState(null, "", `${location.pathname}${location.search}${rest === "" ? "" : `#${rest}`}`)
}

/** the token from the fragment (moved to sessionStorage, the fragment cleared) or from sessionStorage */
export const takeToken = (): string | undefined => {
  const params = fragment()
  const given = params.get("token")
  if (given !== null) {
    params.delete("token")
    // the token leaves the address bar (and the history entry) before anything else runs
    replaceFragment(params)
    if (given.trim() !== "") sessionStorage.setItem(storageKey, given.trim())
  }
  return sessionStorage.getItem(storageKey) ?? undefined
}

/**
 * The selected session, kept in the fragment (`#session=ID`): a reload (or the address copied to another tab) comes
 * back to it, and to its running turn. A session id is no secret (every client of this serve lists them).
 */
export const sessionInAddress = (): string | undefined => fragment().get("session") ?? undefined
export const keepSessionInAddress = (sessionId: string | undefined) => {
  const params = fragment()
  if (sessionId === undefined) params.delete("session")
  else params.set("session", sessionId)
  replaceFragment(params)
}

export const storeToken = (token: string) => sessionStorage.setItem(storageKey, token.trim())
export const forgetToken = () => sessionStorage.removeItem(storageKey)

export type TokenCheck = "ok" | "unauthorized" | "unreachable"

/**
 * Whether `serve` takes the token. A refused WebSocket upgrade shows a page nothing but a closed socket (no status), so
 * the token is checked first with one `Health` call over POST /rpc, whose 401 the page can read.
 */
export const checkToken = async (token: string): Promise<TokenCheck> => {
  // a token is one header value: anything else is not a token (and fetch would throw on it)
  if (!/^[\x21-\x7e]+$/.test(token)) return "unauthorized"
  try {
    const response = await fetch("/rpc", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/ndjson" },
      body: `${JSON.stringify({ _tag: "Request", id: "0", tag: "Health", headers: [] })}\n`,
      cache: "no-store",
      credentials: "omit"
    })
    if (response.status === 401) return "unauthorized"
    return response.ok ? "ok" : "unreachable"
  } catch {
    return "unreachable"
  }
}

export type Result<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly error: string }

/** one line for a failed call: the API's code and message, or why the connection failed */
export const errorText = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const e = failure.value
    if (e instanceof ControlFailure) return `${e.code}: ${e.message}`
    if (typeof e === "object" && e !== null && "message" in e && typeof e.message === "string") {
      return e.message === "Error in socket" ? "the connection to serve was lost" : e.message
    }
    return String(e)
  }
  if (Cause.isInterruptedOnly(cause)) return "cancelled"
  const defect = Cause.squash(cause)
  return defect instanceof Error ? defect.message : String(defect)
}

export interface Connection {
  readonly client: ControlClient.Client
  /** runs one call; never rejects */
  readonly call: <A, E>(effect: Effect.Effect<A, E>) => Promise<Result<A>>
  /** follows a stream until it ends; returns a function that stops following it */
  readonly follow: <A, E>(stream: Stream.Stream<A, E>, onItem: (item: A) => void, onEnd: (error: string | undefined) => void) => () => void
  readonly close: () => Promise<void>
}

/** the WebSocket address of the page's own server (ws or wss, as the page was loaded) */
const rpcUrl = () => `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/rpc`

export const connect = async (token: string): Promise<Connection> => {
  const runtime = ManagedRuntime.make(Socket.layerWebSocketConstructorGlobal)
  const scope = Effect.runSync(Scope.make())
  const client = await runtime.runPromise(Scope.extend(ControlClient.make({ url: rpcUrl(), token }), scope))
  const call = <A, E>(effect: Effect.Effect<A, E>): Promise<Result<A>> =>
    runtime.runPromiseExit(effect).then((exit) =>
      Exit.isSuccess(exit) ? { ok: true as const, value: exit.value } : { ok: false as const, error: errorText(exit.cause) }
    )
  const follow = <A, E>(stream: Stream.Stream<A, E>, onItem: (item: A) => void, onEnd: (error: string | undefined) => void) => {
    const fiber = runtime.runFork(Stream.runForEach(stream, (item) => Effect.sync(() => onItem(item))))
    fiber.addObserver((exit) => onEnd(Exit.isSuccess(exit) || Exit.isInterrupted(exit) ? undefined : errorText(exit.cause)))
    return () => void runtime.runFork(Fiber.interrupt(fiber))
  }
  const close = async () => {
    await runtime.runPromise(Scope.close(scope, Exit.void))
    await runtime.dispose()
  }
  return { client, call, follow, close }
}
