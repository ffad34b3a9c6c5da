// An app outside the repository (examples/embed/, a package of its own) on the packed package, as its author has it:
// `npm pack` of this package, installed into a temp dir beside the app's Effect peers, type-checked strictly with
// declarations on (its bot.ts emits the Live layer's inferred type: a declaration that named an internal path would
// fail with TS2742), then its own tests run with Node's test runner (a real turn with a tool call and an approval, a
// turn interrupted, its Delivery on the Test layer). Once on the highest supported Effect (the repository's own
// node_modules) and once on the lowest (examples/embed/peers-lowest, installed with npm ci when missing). No network
// at test time: the install is `npm install --offline` of the tarball and of the peers as local directories.
import { describe, expect, it } from "@effect/vitest"
import { afterAll } from "vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { leftBehind, tempDir } from "../support/harness.js"

const root = path.resolve(import.meta.dirname, "../..")
const example = path.join(root, "examples", "embed")
const lowest = path.join(example, "peers-lowest")

interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** a command, bounded: killed (and reported with code null) past `timeoutMs` */
const run = (command: string, args: ReadonlyArray<string>, cwd: string, timeoutMs: number, env: Record<string, string> = {}) =>
  Effect.async<Ran>((resume) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.on("close", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout, stderr }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const npm = (args: ReadonlyArray<string>, cwd: string, timeoutMs = 300_000) => run("npm", args, cwd, timeoutMs)

const versionIn = (modules: string, name: string): string | undefined => {
  try {
    return JSON.parse(fs.readFileSync(path.join(modules, name, "package.json"), "utf8")).version
  } catch {
    return undefined
  }
}

/** the lowest peers, installed from their own lockfile when missing (the one step that may need the registry) */
const lowestPeers = Effect.gen(function* () {
  const wanted = JSON.parse(fs.readFileSync(path.join(lowest, "package.json"), "utf8")).dependencies as Record<string, string>
  const modules = path.join(lowest, "node_modules")
  if (Object.entries(wanted).every(([name, version]) => versionIn(modules, name) === version)) return modules
  const installed = yield* npm(["ci", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], lowest, 600_000)
  expect(installed.code, `npm ci in ${lowest} failed:\n${installed.stderr}`).toBe(0)
  return modules
})

/** `npm pack` of this package (already built: `npm test` builds first), into `dir` */
const packInto = (dir: string) =>
  Effect.gen(function* () {
    const packed = yield* npm(["pack", "--ignore-scripts", "--json", "--pack-destination", dir], root, 120_000)
    expect(packed.code, packed.stderr).toBe(0)
    return path.join(dir, JSON.parse(packed.stdout)[0].filename as string)
  })

// One tarball for both apps (a pack costs about 3.4 CPU-s), in a directory of this file's, removed after it
const packDir = fs.mkdtempSync(path.join(os.tmpdir(), "embed-pack-"))
afterAll(() => fs.rmSync(packDir, { recursive: true, force: true }))
let packed: string | undefined
const pack = Effect.suspend(() => (packed !== undefined ? Effect.succeed(packed) : packInto(packDir))).pipe(
  Effect.tap((tarball) => Effect.sync(() => void (packed = tarball)))
)

/** The app in a temp dir: its sources, and a package.json whose dependencies are the tarball and local directories. */
const installApp = (tarball: string, peers: string) =>
  Effect.gen(function* () {
    const app = yield* tempDir("embed-app-")
    for (const entry of ["src", "test", "tsconfig.json"]) fs.cpSync(path.join(example, entry), path.join(app, entry), { recursive: true })
    const repoModules = path.join(root, "node_modules")
    const local = (modules: string, name: string) => `file:${path.join(modules, name)}`
    // the package's own dependencies, from the repository's node_modules (@openai/codex finds its platform binary
    // from there: npm cannot link the aliased platform package itself)
    const manifest = {
      name: "embed-app",
      version: "0.0.0",
      private: true,
      type: "module",
      dependencies: {
        "codex-harness": `file:${tarball}`,
        effect: local(peers, "effect"),
        "@effect/platform": local(peers, "@effect/platform"),
        "@effect/platform-node": local(peers, "@effect/platform-node"),
        "@openai/codex": local(repoModules, "@openai/codex"),
        toml: local(repoModules, "toml"),
        ws: local(repoModules, "ws"),
        "@types/node": local(repoModules, "@types/node")
      }
    }
    fs.writeFileSync(path.join(app, "package.json"), JSON.stringify(manifest, null, 2))
    const installed = yield* npm(["install", "--offline", "--legacy-peer-deps", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock"], app)
    expect(installed.code, `npm install --offline failed:\n${installed.stderr}`).toBe(0)
    return app
  })

/**
 * `libCheck: false` for the highest peers: the declarations the package ships were emitted against exactly those
 * (the repository's own), so checking them again there finds nothing, and checking all of Effect's declarations with
 * them cost about 9 CPU-s of the 15 a strict check takes. The lowest peers keep the app's `skipLibCheck: false`: a
 * declaration naming what Effect 3.21 lacks is only reported by checking the package's declarations against it.
 */
const typeCheckAndTest = (app: string, peers: string, libCheck: boolean) =>
  Effect.gen(function* () {
    // one Effect, the peers': the package resolves the app's copy, not one of its own
    expect(fs.existsSync(path.join(app, "node_modules", "codex-harness", "node_modules", "effect"))).toBe(false)
    expect(versionIn(path.join(app, "node_modules"), "effect")).toBe(versionIn(peers, "effect"))
    const tsc = yield* run(
      process.execPath,
      [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json", ...(libCheck ? [] : ["--skipLibCheck"])],
      app,
      300_000
    )
    expect(tsc.stdout + tsc.stderr).toBe("")
    expect(tsc.code).toBe(0)
    // the emitted declarations name the package's public entries only
    const declarations = fs.readFileSync(path.join(app, "dist", "src", "bot.d.ts"), "utf8")
    expect(declarations).toContain('"codex-harness')
    expect(declarations).not.toMatch(/codex-harness\/dist|\.\.\/src\//)
    const tests = yield* run(process.execPath, ["--test", "dist/test/"], app, 600_000)
    expect(tests.stdout, tests.stderr).toMatch(/^# pass 2$/m)
    expect(tests.stdout).toMatch(/^# fail 0$/m)
    expect(tests.code).toBe(0)
    expect(yield* leftBehind(app)).toEqual([])
  })

describe("an app outside the repository, on the packed package", () => {
  it("the README's Embedding example is the app's bot.ts, verbatim", () => {
    const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
    const section = readme.slice(readme.indexOf("## Embedding"))
    const start = section.indexOf("```ts\n") + "```ts\n".length
    expect(section.slice(start, section.indexOf("```\n", start))).toBe(fs.readFileSync(path.join(example, "src", "bot.ts"), "utf8"))
  })

  it.scopedLive("on the highest supported Effect (the repository's): installs offline, type-checks strictly, passes its tests", () =>
    Effect.gen(function* () {
      const tarball = yield* pack
      const peers = path.join(root, "node_modules")
      yield* typeCheckAndTest(yield* installApp(tarball, peers), peers, false)
    }), 900_000)

  it.scopedLive("on the lowest supported Effect (examples/embed/peers-lowest): the same", () =>
    Effect.gen(function* () {
      const peers = yield* lowestPeers
      expect(versionIn(peers, "effect")).toBe("3.21.0")
      const tarball = yield* pack
      yield* typeCheckAndTest(yield* installApp(tarball, peers), peers, true)
    }), 900_000)
})
