// What a client reads of the files a running `serve` leaves in its state dir (ServeFiles.ts writes them): where it
// listens (serve.json) and its token (serve.token). Plain synchronous Node: the CLI's --connect client loads this and
// not Effect (src/cli/remote/), and ServeFiles' own readers are these. Nothing is taken from a file another user could
// have written: a serve.json somebody else could write would point the CLI, and its token, at their server.
import * as fs from "node:fs"
import * as path from "node:path"

export const files = (stateDir: string) => ({
  lock: path.join(stateDir, "serve.lock"),
  token: path.join(stateDir, "serve.token"),
  address: path.join(stateDir, "serve.json")
})

export const tokenPattern = /^[0-9a-f]{64}$/

export interface ServeAddress {
  readonly pid: number
  /** `ws://HOST:PORT/rpc`, `wss://…`, or `ws+unix:PATH:/rpc` */
  readonly url: string
  /** the Control UI's page (no token in it: the page asks for it, or takes it from the URL's fragment) */
  readonly ui?: string
  readonly started_at: string
  readonly version: string
}

/** A serve file that cannot be used: the message never carries the file's content. */
export class ServeFileUnusable extends Error {
  constructor(readonly path: string, readonly reason: string) {
    super(`${path}: ${reason}`)
  }
}

/**
 * Why `file` may not be trusted, if it may not: another user owns it, or group or others may write it (checkPrivate's
 * rule in platform/trust.ts). A missing file is no problem here: its reader finds it missing.
 */
export const privacyProblem = (file: string): string | undefined => {
  const info = fs.statSync(file, { throwIfNoEntry: false })
  if (info === undefined || typeof process.getuid !== "function") return undefined
  const me = process.getuid()
  if (info.uid !== me) return `refusing ${file}: it belongs to uid ${info.uid}, not to you (uid ${me})`
  const mode = info.mode & 0o777
  if ((mode & 0o022) !== 0) return `refusing ${file}: group or others may write it (mode ${mode.toString(8).padStart(3, "0")}); run: chmod go-w ${file}`
  return undefined
}

const readOrEmpty = (file: string): string => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return ""
  }
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** serve.json's content, when it is one */
const addressOf = (text: string): ServeAddress | undefined => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== "object" || value === null) return undefined
  const v = value as Record<string, unknown>
  const strings = ["url", "started_at", "version"].every((key) => typeof v[key] === "string")
  if (typeof v["pid"] !== "number" || !strings || (v["ui"] !== undefined && typeof v["ui"] !== "string")) return undefined
  return value as ServeAddress
}

/** The running `serve` of a state dir, if there is one: its `serve.json`, private, naming a live process. */
export const findServe = (stateDir: string): ServeAddress | undefined => {
  const file = files(stateDir).address
  if (!fs.existsSync(file) || privacyProblem(file) !== undefined) return undefined
  const address = addressOf(readOrEmpty(file))
  if (address === undefined) return undefined
  // a serve killed with -9 leaves its serve.json, and its pid may be another process's by now: the serve is the one
  // still holding serve.lock under that pid
  let lockPid: unknown
  try {
    lockPid = (JSON.parse(readOrEmpty(files(stateDir).lock)) as { readonly pid?: unknown }).pid
  } catch {
    lockPid = undefined
  }
  return address.pid === lockPid && isAlive(address.pid) ? address : undefined
}

/** The token a client presents: only from a private file (never argv). */
export const readServeToken = (stateDir: string): string => {
  const file = files(stateDir).token
  const problem = privacyProblem(file)
  if (problem !== undefined) throw new ServeFileUnusable(file, problem)
  let text: string
  try {
    text = fs.readFileSync(file, "utf8").trim()
  } catch (e) {
    // the operating system's own words without the errno prefix, as describeFileError gives them
    throw new ServeFileUnusable(file, (e as Error).message.replace(/^[A-Z]+: /, ""))
  }
  if (!tokenPattern.test(text)) throw new ServeFileUnusable(file, "not a serve token")
  return text
}
