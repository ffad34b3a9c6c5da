// The Control UI's link to `serve`: the token, a check of it, and the control API over the browser's own WebSocket
// (ControlWire.ts: the protocol without Effect, which kept this page's script at a fifth of its size), wrapped in plain
// promises and callbacks for the page's event handlers.
//
// The token: taken from the URL's fragment (`#token=...`, which browsers never send to a server) and then removed from
// the address bar, or typed into the token field; kept in sessionStorage (this tab only, gone when it closes). Never
// in a query string (it would reach the server's logs and the Referer) or localStorage (it would outlive the tab).
import * as ControlWire from "../ControlWire.js"

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

export interface Connection {
  /** runs one call; never rejects */
  readonly call: <T extends ControlWire.CallTag>(
    tag: T,
    ...payload: [ControlWire.PayloadOf<T>] extends [void] ? [] : [payload: ControlWire.PayloadOf<T>]
  ) => Promise<Result<ControlWire.SuccessOf<T>>>
  /** follows a stream until it ends; returns a function that stops following it (its onEnd is then not called) */
  readonly follow: <T extends ControlWire.StreamTag>(
    tag: T,
    payload: ControlWire.PayloadOf<T>,
    onItem: (item: ControlWire.ItemOf<T>) => void,
    onEnd: (error: string | undefined) => void
  ) => () => void
  readonly close: () => Promise<void>
}

/** the WebSocket address of the page's own server (ws or wss, as the page was loaded) */
const rpcUrl = () => `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/rpc`

/** a connection to the page's serve: it opens on the first call, and again on the first call after it was lost */
export const connect = (token: string): Connection => {
  const wire = ControlWire.make({
    url: rpcUrl(),
    token,
    open: (url, protocols) => new WebSocket(url, protocols) as unknown as ControlWire.SocketLike
  })
  return {
    call: (tag, ...payload) =>
      wire.call(tag, ...payload).then((result) =>
        result.ok ? result : { ok: false as const, error: ControlWire.failureText(result.failure) }),
    follow: (tag, payload, onItem, onEnd) =>
      wire.stream(tag, payload, {
        item: onItem,
        end: (failure) => onEnd(failure === undefined ? undefined : ControlWire.failureText(failure))
      }),
    close: async () => wire.close()
  }
}
