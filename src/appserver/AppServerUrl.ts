// Pure rules for reaching an app-server the harness did not start (`--app-server URL`, config `appServer.url`): which
// URLs are accepted, and where a token may go. Nothing here opens a socket or reads the environment.
//
// The rule: `wss://` anywhere, `ws://` only to a loopback address, and no override flag. Why no `--insecure-remote`:
// the app-server listens on a non-loopback address only with `--ws-auth` (0.171.0 refuses to start otherwise), so a
// plain `ws://` URL to another machine would carry its bearer token, and then every prompt, file and approval of the
// session, in clear text across the network. Codex's own client refuses the same ("remote auth tokens require `wss://`
// or loopback `ws://` URLs"). An operator who wants another machine has two easy, safe ways that the app-server's own
// banner points at: an SSH port forward (the harness then talks to ws://127.0.0.1:PORT) or a TLS-terminating proxy
// (wss://). A flag that turns the check off would be the one everybody copies from a forum answer.

/** The environment variable the app-server's bearer token is read from when the config names none. */
export const defaultTokenEnv = "CODEX_HARNESS_APP_SERVER_TOKEN"

const loopbackV4 = /^127(?:\.\d{1,3}){3}$/

/** true for `localhost`, 127.0.0.0/8 and ::1 (a URL's hostname: IPv6 in brackets). */
export const isLoopbackHost = (hostname: string): boolean => {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "")
  return host === "localhost" || host.endsWith(".localhost") || loopbackV4.test(host) || host === "::1" ||
    host === "0:0:0:0:0:0:0:1"
}

export interface AppServerEndpoint {
  /** the URL as given, normalised (no trailing slash on an empty path) */
  readonly url: string
  readonly secure: boolean
  readonly loopback: boolean
}

/** The endpoint, or why `url` cannot be one, in a line that never repeats credentials. */
export const parse = (url: string): { readonly endpoint: AppServerEndpoint } | { readonly problem: string } => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return { problem: "expected a ws://HOST:PORT or wss://HOST[:PORT] URL" }
  }
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:") {
    return { problem: `expected a ws:// or wss:// URL, got ${parsed.protocol}//` }
  }
  // a token goes in a header read from the environment, never in a URL (a URL ends up in logs and session files)
  if (parsed.username !== "" || parsed.password !== "") return { problem: "credentials do not belong in the URL; set the token's variable instead" }
  if (parsed.search !== "" || parsed.hash !== "") return { problem: "expected no query or fragment (a token goes in the token's variable)" }
  const secure = parsed.protocol === "wss:"
  const loopback = isLoopbackHost(parsed.hostname)
  if (!secure && !loopback) {
    return {
      problem: `ws:// is accepted only to a loopback address (${parsed.hostname} is not): use an SSH port forward ` +
        `(ssh -L PORT:127.0.0.1:PORT host, then ws://127.0.0.1:PORT) or wss:// through a TLS proxy`
    }
  }
  const text = parsed.toString()
  return { endpoint: { url: parsed.pathname === "/" && !url.endsWith("/") ? text.replace(/\/$/, "") : text, secure, loopback } }
}

/** Why `url` is refused, or undefined when it is acceptable. */
export const check = (url: string): string | undefined => {
  const result = parse(url)
  return "problem" in result ? result.problem : undefined
}
