// Which `codex-harness serve` a command runs through, and with which token: `--connect URL`, or the one running for the
// state dir (its serve.json: private, naming a live process). The token never comes from argv: $CODEX_HARNESS_TOKEN,
// else the state dir's serve.token, which goes only to that state dir's own serve. Plain Node (no Effect): the
// --connect client loads this alone; connect.ts gives the rest of the CLI the same rules as Effects.
import * as os from "node:os"
import * as path from "node:path"
import { isLoopbackHost } from "../../appserver/AppServerUrl.js"
import { findServe, readServeToken } from "../../control/ServeFileReads.js"
import { RemoteUsageError } from "./usage.js"

export const tokenEnv = "CODEX_HARNESS_TOKEN"

export interface Target {
  /** ws://HOST:PORT/rpc, wss://…, or ws+unix:PATH:/rpc */
  readonly url: string
  readonly token: string
}

/**
 * The control API's address for what a person may paste: serve prints its Control UI as `http(s)://HOST:PORT/`, and
 * that page's address leads to the same API (`ws(s)://HOST:PORT/rpc`). Anything else is kept as it is. Pure.
 */
export const controlUrl = (url: string): string => {
  const match = /^(https?):\/\/([^/?#]+)\/?(?:rpc)?$/i.exec(url.trim())
  if (match === null) return url
  return `${match[1]!.toLowerCase() === "https" ? "wss" : "ws"}://${match[2]}/rpc`
}

/** A `--connect` URL's problem, if it has one. Pure. */
export const checkUrl = (url: string): string | undefined => {
  if (url.startsWith("ws+unix:")) return url.includes(":/", "ws+unix:".length) ? undefined : "a Unix socket URL is ws+unix:PATH:/rpc"
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `not a URL: ${JSON.stringify(url)}`
  }
  if (parsed.username !== "" || parsed.password !== "") return "a URL with credentials in it is refused: the token comes from $CODEX_HARNESS_TOKEN"
  if (parsed.protocol === "wss:") return undefined
  if (parsed.protocol !== "ws:") return `expected http(s)://HOST:PORT, ws(s)://HOST:PORT/rpc or ws+unix:, got ${parsed.protocol}`
  return isLoopbackHost(parsed.hostname) ? undefined : "ws:// would send the token in clear: use wss:// for another machine"
}

/** `--state-dir`, else $CODEX_HARNESS_HOME, else ~/.codex-harness (stateDir.ts's rule) */
export const stateDirOf = (flag: string | undefined): string => {
  if (flag !== undefined) return path.resolve(flag)
  const home = process.env["CODEX_HARNESS_HOME"]
  return home !== undefined && home !== "" ? path.resolve(home) : path.join(os.homedir(), ".codex-harness")
}

/**
 * The serve at `connect` (as typed) and the token for it. Throws RemoteUsageError for a URL it refuses or a token it
 * cannot send, ServeFileUnusable for a state dir token file it may not read.
 */
export const connectTarget = (connect: string, stateDirFlag: string | undefined): Target => {
  const url = controlUrl(connect)
  const problem = checkUrl(url)
  if (problem !== undefined) throw new RemoteUsageError(`--connect: ${problem}`)
  const fromEnv = process.env[tokenEnv]
  if (fromEnv !== undefined && fromEnv !== "") return { url, token: fromEnv }
  // the state dir's token goes only to the serve of that state dir: never to an address somebody typed (another
  // machine, another user's port), which would hand them control of this one
  const stateDir = stateDirOf(stateDirFlag)
  const needToken = () =>
    new RemoteUsageError(`--connect ${url}: give that serve's token in $${tokenEnv} (this state dir's token is only sent to its own serve)`)
  if (findServe(stateDir)?.url !== url) throw needToken()
  try {
    return { url, token: readServeToken(stateDir) }
  } catch {
    throw needToken()
  }
}

/** The serve running for the state dir, with its token; undefined when none runs. Throws ServeFileUnusable. */
export const foundTarget = (stateDirFlag: string | undefined): Target | undefined => {
  const stateDir = stateDirOf(stateDirFlag)
  const running = findServe(stateDir)
  return running === undefined ? undefined : { url: running.url, token: readServeToken(stateDir) }
}
