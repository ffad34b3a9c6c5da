// The shape of the code, checked: small files, the wire decoded only in src/appserver, imports running one way between
// the rooms of src/, and no unsafe* primitive outside a commented bridge to a Node callback.
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { ExecClientMethods, ExecServerNotifications } from "../../schemas/execServer.js"
import { ClientMethods, ServerNotifications, ServerRequests } from "../../schemas/protocol.js"

const root = path.resolve(import.meta.dirname, "../..")
const src = path.join(root, "src")

const filesUnder = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? filesUnder(full) : entry.name.endsWith(".ts") ? [full] : []
  })

const sources = filesUnder(src).map((file) => ({ file, rel: path.relative(root, file), text: fs.readFileSync(file, "utf8") }))

/**
 * Each room of src/ may import its own room and lower ones only: the wire, then sessions and turns, then the
 * capabilities that plug into a turn, then the harness that runs them, then what is built on the harness.
 */
export const rooms: Readonly<Record<string, number>> = {
  platform: 1,
  appserver: 2,
  config: 3,
  ports: 4,
  session: 5,
  turn: 6,
  tools: 7,
  approvals: 7,
  interaction: 7,
  apps: 7,
  threads: 7.5,
  compaction: 7.6,
  harness: 8,
  supervision: 9,
  exec: 9,
  processes: 9,
  nodes: 9,
  diagnostics: 9,
  control: 10,
  cluster: 10.5,
  testing: 10,
  cli: 11,
  // the public surface: re-exports only, of whatever room holds the declaration
  api: 12
}

const roomOf = (file: string): string | undefined => {
  const rel = path.relative(src, file)
  if (rel.startsWith("..")) return undefined
  const first = rel.split(path.sep)[0]!
  return first.endsWith(".ts") ? "(root)" : first
}
const rankOf = (room: string | undefined): number =>
  room === undefined ? 0 : room === "(root)" ? 100 : (rooms[room] ?? Number.NaN)

// static imports and re-exports, and dynamic `import("...")` (the CLI loads each command's implementation lazily)
const importsOf = (text: string): ReadonlyArray<string> => [
  ...[...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"/g)].map((m) => m[1]!),
  ...[...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1]!)
]

/**
 * A method named as the first argument of a typed call (`connection.request("thread/start", ...)`, `.handle(...)`,
 * the discovery client's `.read(...)`, also with the argument on the next line), or in a type that narrows a typed
 * API to some methods: that is the typed API, not a match on a string.
 */
const typedUse = (line: string, previous: string, method: string): boolean =>
  new RegExp(`\\.(request|handle|read)\\(\\s*"${method}"`).test(line) ||
  (/\.(request|handle|read)\(\s*$/.test(previous) && line.trim().startsWith(`"${method}"`)) ||
  /^\s*(export\s+)?type\s+\w+\s*=/.test(line)

describe("architecture", () => {
  it("no file in src is above 500 lines", () => {
    const long = sources.filter((s) => s.text.split("\n").length > 500).map((s) => `${s.rel}: ${s.text.split("\n").length}`)
    expect(long).toEqual([])
  })

  it("no protocol method (request, notification, server request; app-server or exec-server) is matched as a string above src/appserver", () => {
    const methods = [
      ...Object.keys(ClientMethods),
      ...Object.keys(ServerNotifications),
      ...Object.keys(ServerRequests),
      ...Object.keys(ExecClientMethods),
      ...Object.keys(ExecServerNotifications)
    ].filter((m) => m.includes("/"))
    // the wire itself, and the mock app-server, which is a peer on the other side of the wire
    const wire = new Set(["appserver", "testing"])
    const found = sources
      .filter((s) => !wire.has(roomOf(s.file)!))
      .flatMap((s) => {
        const lines = s.text.split("\n")
        return lines.flatMap((line, i) =>
          methods
            .filter((m) => line.includes(`"${m}"`) && !typedUse(line, lines[i - 1] ?? "", m))
            .map((m) => `${s.rel}:${i + 1}: "${m}"`)
        )
      })
    expect(found).toEqual([])
  })

  it("src/nodes bridges its sockets without Effect.runSync: a callback enqueues, or forks through a scoped runtime", () => {
    const found = sources
      .filter((s) => roomOf(s.file) === "nodes")
      .flatMap((s) => s.text.split("\n").flatMap((line, i) => (/\bEffect\.runSync\(/.test(line) ? [`${s.rel}:${i + 1}`] : [])))
    expect(found).toEqual([])
  })

  it("every room of src/ is known and imports only its own room or lower ones", () => {
    const unknown = sources.map((s) => roomOf(s.file)!).filter((room) => room !== "(root)" && rooms[room] === undefined)
    expect([...new Set(unknown)]).toEqual([])
    const upward = sources.flatMap((s) => {
      const from = roomOf(s.file)
      return importsOf(s.text)
        .filter((spec) => spec.startsWith("."))
        .map((spec) => path.resolve(path.dirname(s.file), spec))
        .filter((target) => rankOf(roomOf(target)) > rankOf(from))
        .map((target) => `${s.rel} -> ${path.relative(root, target)}`)
    })
    expect(upward).toEqual([])
  })

  it("one registry of a session's live work: only SessionWork keeps running turns, fibers or queues by session", () => {
    const registry = "src/harness/SessionWork.ts"
    // a collection of live turns or of running fibers keyed by session, anywhere else, is a second registry
    const patterns = [/(?:Map|Set)<[^>\n]*LiveTurn\b/, /FiberMap\.make<string/, /Map<string,\s*Fiber\./, /(?:Map|Set)<[^>\n]*RuntimeFiber/]
    const others = sources
      .filter((s) => s.rel !== registry && patterns.some((p) => p.test(s.text)))
      .map((s) => s.rel)
    expect(others).toEqual([])
    expect(sources.some((s) => s.rel === registry && patterns.some((p) => p.test(s.text)))).toBe(true)
  })

  it("front ends (cli, control, cluster) import nothing from src/turn: what a turn reports is in schemas/", () => {
    const frontEnds = new Set(["cli", "control", "cluster"])
    const turn = path.join(src, "turn")
    const found = sources
      .filter((s) => frontEnds.has(roomOf(s.file)!))
      .flatMap((s) =>
        importsOf(s.text)
          .filter((spec) => spec.startsWith("."))
          .map((spec) => path.resolve(path.dirname(s.file), spec))
          .filter((target) => target === turn || target.startsWith(turn + path.sep))
          .map((target) => `${s.rel} -> ${path.relative(root, target)}`)
      )
    expect(found).toEqual([])
  })

  it("no unsafe* primitive in src outside a bridge from a Node callback, which says so in a comment just above it", () => {
    const unbridged = sources.flatMap((s) => {
      const lines = s.text.split("\n")
      return lines.flatMap((line, i) => {
        if (!/\bunsafe[A-Z]\w*\(/.test(line) || line.trim().startsWith("//")) return []
        const above = lines.slice(Math.max(0, i - 3), i)
        return above.some((l) => l.trim().startsWith("// bridge:")) ? [] : [`${s.rel}:${i + 1}: ${line.trim()}`]
      })
    })
    expect(unbridged).toEqual([])
  })
})
