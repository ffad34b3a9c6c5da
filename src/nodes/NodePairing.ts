// The operator's explicit pairings (S26): `<stateDir>/nodes/NAME.json` (name, exec-server URL, optional app-server URL
// for the node's thread catalog) and `<stateDir>/nodes/NAME.token` (the node's capability token), both 0600 in a 0700
// directory. A token comes from stdin or an environment variable, never argv (every user can read a command line), and
// is never printed. URLs follow the WebSocket transport's rule: `wss://` anywhere, `ws://` only to loopback (an SSH
// forward reaches another machine), because the token and every command's output cross the link.
import { FileSystem } from "@effect/platform"
import { Effect, Option, Redacted } from "effect"
import * as path from "node:path"
import * as AppServerUrl from "../appserver/AppServerUrl.js"
import { NodePairingError } from "./errors.js"
import * as HarnessLog from "../platform/HarnessLog.js"

export interface PairedNode {
  readonly name: string
  /** the node's exec-server, `codex exec-server --listen ...` (through a forward or a TLS proxy) */
  readonly url: string
  /** the node's own `codex app-server --listen ...`, for its thread catalog (S17); optional */
  readonly appServerUrl?: string | undefined
  readonly pairedAt: string
}

const namePattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/

export const checkName = (name: string): string | undefined =>
  namePattern.test(name) ? undefined : "a node name is 1-63 letters, digits, - or _, starting with a letter or digit"

export const nodesDir = (stateDir: string) => path.join(stateDir, "nodes")

const refuse = (node: string, reason: string) => new NodePairingError({ node, reason })

const checkUrl = (node: string, url: string, what: string) => {
  const problem = AppServerUrl.check(url)
  return problem === undefined ? Effect.void : Effect.fail(refuse(node, `${what}: ${problem}`))
}

const fileError = (node: string) => (e: { readonly message: string }) => refuse(node, e.message)

/** Pairs (or re-pairs) NAME; the token is stored 0600 and never echoed. */
export const pair = (stateDir: string, input: {
  readonly name: string
  readonly url: string
  readonly appServerUrl?: string | undefined
  readonly token: Redacted.Redacted<string>
}) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const bad = checkName(input.name)
    if (bad !== undefined) return yield* refuse(input.name, bad)
    yield* checkUrl(input.name, input.url, "exec-server URL")
    if (input.appServerUrl !== undefined) yield* checkUrl(input.name, input.appServerUrl, "app-server URL")
    const token = Redacted.value(input.token).trim()
    if (token === "") return yield* refuse(input.name, "no token: pipe it on stdin or name its variable with --token-env")
    const dir = nodesDir(stateDir)
    yield* fs.makeDirectory(dir, { recursive: true, mode: 0o700 }).pipe(Effect.mapError(fileError(input.name)))
    yield* fs.chmod(dir, 0o700).pipe(Effect.mapError(fileError(input.name)))
    const tokenFile = path.join(dir, `${input.name}.token`)
    // a fresh file created 0600 (`wx`): an existing one, whatever its bits, is removed first, so the token is never
    // written into a file others can read
    yield* fs.remove(tokenFile, { force: true }).pipe(Effect.mapError(fileError(input.name)))
    yield* fs.writeFileString(tokenFile, `${token}\n`, { flag: "wx", mode: 0o600 }).pipe(Effect.mapError(fileError(input.name)))
    const record: PairedNode = {
      name: input.name,
      url: input.url,
      ...(input.appServerUrl !== undefined ? { appServerUrl: input.appServerUrl } : {}),
      pairedAt: new Date().toISOString()
    }
    const recordFile = path.join(dir, `${input.name}.json`)
    yield* fs.writeFileString(recordFile, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 }).pipe(
      Effect.mapError(fileError(input.name))
    )
    yield* fs.chmod(recordFile, 0o600).pipe(Effect.mapError(fileError(input.name)))
    return record
  })

const decode = (name: string, text: string): PairedNode | undefined => {
  try {
    const u = JSON.parse(text) as Record<string, unknown>
    if (typeof u.url !== "string" || AppServerUrl.check(u.url) !== undefined) return undefined
    const app = typeof u.appServerUrl === "string" && AppServerUrl.check(u.appServerUrl) === undefined ? u.appServerUrl : undefined
    return { name, url: u.url, ...(app !== undefined ? { appServerUrl: app } : {}), pairedAt: String(u.pairedAt ?? "") }
  } catch {
    return undefined
  }
}

/** Every paired node, by name; a record that does not decode is skipped with a warning. */
export const list = (stateDir: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = nodesDir(stateDir)
    if (!(yield* fs.exists(dir).pipe(Effect.orElseSucceed(() => false)))) return [] as ReadonlyArray<PairedNode>
    const names = (yield* fs.readDirectory(dir).pipe(Effect.mapError(fileError("*"))))
      .filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5)).filter((n) => checkName(n) === undefined).sort()
    const nodes: Array<PairedNode> = []
    for (const name of names) {
      const text = yield* fs.readFileString(path.join(dir, `${name}.json`)).pipe(Effect.mapError(fileError(name)))
      const node = decode(name, text)
      if (node === undefined) yield* HarnessLog.warning(`paired node ${name}: unreadable record, skipped`)
      else nodes.push(node)
    }
    return nodes as ReadonlyArray<PairedNode>
  })

export const get = (stateDir: string, name: string) =>
  Effect.flatMap(list(stateDir), (nodes) => {
    const node = nodes.find((n) => n.name === name)
    return node === undefined ? Effect.fail(refuse(name, "not paired (codex-harness nodes pair NAME URL)")) : Effect.succeed(node)
  })

/** The node's token; refuses one whose file other users could read. */
export const token = (stateDir: string, name: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const file = path.join(nodesDir(stateDir), `${name}.token`)
    const info = yield* fs.stat(file).pipe(Effect.mapError(() => refuse(name, "no token file: pair it again")))
    if ((info.mode & 0o077) !== 0) return yield* refuse(name, `${file} is readable by other users: chmod 600 it or pair again`)
    const text = (yield* fs.readFileString(file).pipe(Effect.mapError(fileError(name)))).trim()
    return text === "" ? yield* refuse(name, "empty token file: pair it again") : Redacted.make(text)
  })

/** Removes NAME's record and token; false when it was not paired. */
export const unpair = (stateDir: string, name: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const bad = checkName(name)
    if (bad !== undefined) return yield* refuse(name, bad)
    const dir = nodesDir(stateDir)
    let found = false
    for (const file of [`${name}.json`, `${name}.token`]) {
      const p = path.join(dir, file)
      if (yield* fs.exists(p).pipe(Effect.orElseSucceed(() => false))) {
        found = true
        yield* fs.remove(p).pipe(Effect.mapError(fileError(name)))
      }
    }
    return found
  })

/** Option of a non-empty variable's value, as a Redacted. */
export const tokenFromEnv = (value: string | undefined) =>
  value === undefined || value.trim() === "" ? Option.none() : Option.some(Redacted.make(value.trim()))
